// Mirrors core/src/codegen/decompositions.cpp: each decomposition is forced by lowering a tiny kernel for the CPU's
// caps minus the op, run on the CPU, and compared with a reference computed here (float64 or exact integers),
// over random inputs (seed printed) and edge values. The KIR is checked to hold the op with full caps and not
// without, so the test knows it ran the decomposition. (EXP2/LOG2/SIN polynomials: lower_test and
// transcendental_test.)
#include "codegen/decompositions.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "../planned_schedule.hpp"
#include "codegen/lower.hpp"
#include "ir/uop.hpp"
#include "runtime/device.hpp"
#include "tg/custom_kernel.hpp"
#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

using CapsEdit = std::function<void(tg_renderer_caps&)>;

uint32_t seed() {
  static const uint32_t s = [] {
    uint32_t v = std::random_device{}();
    std::printf("decompositions_test: random seed %u\n", v);
    return v;
  }();
  return s;
}

void drop_op(tg_renderer_caps& c, tg_kir_op op, int dtype = -1) {
  for (int d = 0; d < TG_DTYPE_COUNT; ++d)
    if (dtype < 0 || d == dtype) c.ops[d] &= ~(1ull << op);
}

int count_op(const KirProgram& k, tg_kir_op op, int dtype = -1) {
  int n = 0;
  for (const auto& in : k.insts) n += in.op == op && (dtype < 0 || in.dtype == dtype);
  return n;
}

// Lowers one scheduled kernel with edited caps, renders, compiles and runs it on its buffers' device (as lower_test
// does).
KirProgram run_item(const sched::ScheduleItem& it, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                    const CapsEdit& edit) {
  tg_renderer_caps caps = bufs.at(0)->device().caps();
  edit(caps);
  KirProgram k = lower_kernel(it.kernel, caps);
  run_lowered(k, it, bufs);
  return k;
}

// Schedules t (one kernel), runs it with edited caps; returns the KIR and the output's bytes.
template <class T>
std::pair<KirProgram, std::vector<T>> run_with_caps(const Tensor& t, const CapsEdit& edit) {
  const PlannedSchedule planned({t.node()}, t.device());
  EXPECT_EQ(planned.items().size(), 1u) << "a tiny kernel should be one schedule item";
  KirProgram k = run_item(planned.items().at(0), planned.bufs(0), edit);
  std::vector<T> out(static_cast<size_t>(t.numel()));
  EXPECT_EQ(planned.root().nbytes(), out.size() * sizeof(T));
  planned.root().copy_out(out.data(), out.size() * sizeof(T));
  return {std::move(k), std::move(out)};
}

bool same_float(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

std::vector<float> float_inputs(size_t n, std::mt19937& rng) {
  std::vector<float> v = {0.0f,          -0.0f,    1.0f,      -1.0f, FLT_MAX, -FLT_MAX, FLT_MIN, FLT_TRUE_MIN,
                          -FLT_TRUE_MIN, INFINITY, -INFINITY, NAN,   3.0f,    1e-30f,   -7.5f,   1e30f};
  std::uniform_real_distribution<double> mant(-1, 1);
  std::uniform_int_distribution<int> ex(-40, 40);
  while (v.size() < n) v.push_back(static_cast<float>(std::ldexp(mant(rng), ex(rng))));
  return v;
}

// --- float32: SUB, NEG, RECIP ------------------------------------------------------------------------------------

struct FloatCase {
  const char* name;
  tg_kir_op op;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> ref;  // exact in double, then rounded once to float
};

// The pipeline's decompose step: the rules rewrite exactly the nodes whose op the caps leave out (here RECIP of a
// float32 load, then nothing else: a DIV the renderer has stays), and leave a graph the renderer takes alone.
TEST(Decompositions, TheStepRewritesOnlyWhatTheCapsLeaveOut) {
  const ir::UOpPtr x =
      ir::UOp::make(ir::Op::LOAD, dtypes::float32,
                    {ir::UOp::make(ir::Op::PARAM, dtypes::float32, {}, int64_t{1}), ir::const_int(dtypes::int64, 0)});
  const ir::UOpPtr store =
      ir::UOp::make(ir::Op::STORE, dtypes::float32,
                    {ir::UOp::make(ir::Op::PARAM, dtypes::float32, {}, int64_t{0}), ir::const_int(dtypes::int64, 0),
                     ir::alu(ir::Op::ADD, ir::alu(ir::Op::RECIP, x), x)});
  const ir::UOpPtr sink = ir::UOp::make(ir::Op::SINK, dtypes::bool_, {store});
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.ops[TG_DTYPE_FLOAT32] |= 1ull << TG_KIR_RECIP;
  EXPECT_EQ(ir::rewrite(sink, pm_decompositions_for(caps), {.name = "decompose"}), sink) << "the caps take RECIP";
  drop_op(caps, TG_KIR_RECIP);
  const ir::UOpPtr out = ir::rewrite(sink, pm_decompositions_for(caps), {.name = "decompose", .converge_check = true});
  int recips = 0, divs = 0, adds = 0;
  for (const ir::UOp* n : ir::toposort(std::vector<ir::UOpPtr>{out}))
    recips += n->op == ir::Op::RECIP, divs += n->op == ir::Op::FDIV, adds += n->op == ir::Op::ADD;
  EXPECT_EQ(recips, 0);
  EXPECT_EQ(divs, 1) << "1 / x";
  EXPECT_EQ(adds, 1) << "the ADD around it is the renderer's and stays";
}

TEST(Decompositions, Float32SubNegRecip) {
  std::mt19937 rng(seed());
  std::vector<float> a = float_inputs(2048, rng), b = float_inputs(2048, rng);
  std::shuffle(b.begin(), b.end(), rng);
  const int64_t n = static_cast<int64_t>(a.size());
  const FloatCase cases[] = {
      {"sub", TG_KIR_SUB, [](const Tensor& x, const Tensor& y) { return x - y; },
       [](double x, double y) { return x - y; }},
      {"neg", TG_KIR_NEG, [](const Tensor& x, const Tensor&) { return -x; }, [](double x, double) { return -x; }},
      {"recip", TG_KIR_RECIP, [](const Tensor& x, const Tensor&) { return x.reciprocal(); },
       [](double x, double) { return 1.0 / x; }},
  };
  for (const FloatCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor ta = Tensor::from_vector(a, {n}), tb = Tensor::from_vector(b, {n});
    auto [full, unused] = run_with_caps<float>(c.fn(ta, tb), [](tg_renderer_caps&) {});
    ASSERT_GT(count_op(full, c.op, TG_DTYPE_FLOAT32), 0) << "with full caps the KIR should use the op itself";
    auto [k, out] = run_with_caps<float>(c.fn(ta, tb), [&](tg_renderer_caps& caps) { drop_op(caps, c.op); });
    ASSERT_EQ(count_op(k, c.op), 0) << "the renderer lacks the op, yet the KIR uses it";
    for (size_t i = 0; i < a.size(); ++i) {
      double want = static_cast<float>(c.ref(a[i], b[i]));
      ASSERT_TRUE(same_float(out[i], want))
          << c.name << "(" << a[i] << ", " << b[i] << ") = " << out[i] << ", want " << want;
    }
  }
}

// --- integers: NEG as a multiply, MAX as a select ----------------------------------------------------------------

TEST(Decompositions, Int32NegAndMax) {
  std::mt19937 rng(seed());
  std::vector<int32_t> a = {0, 1, -1, INT32_MAX, INT32_MIN, INT32_MIN + 1, 7, -7},
                       b = {0, -1, 1, INT32_MIN, INT32_MAX, 5, 7, -8};
  while (a.size() < 1024) a.push_back(static_cast<int32_t>(rng())), b.push_back(static_cast<int32_t>(rng()));
  const int64_t n = static_cast<int64_t>(a.size());
  Tensor ta = Tensor::from_vector(a, {n}, dtypes::int32), tb = Tensor::from_vector(b, {n}, dtypes::int32);

  auto [neg_full, unused1] = run_with_caps<int32_t>(-ta, [](tg_renderer_caps&) {});
  ASSERT_GT(count_op(neg_full, TG_KIR_NEG, TG_DTYPE_INT32), 0);
  auto [neg_k, neg] = run_with_caps<int32_t>(-ta, [](tg_renderer_caps& c) { drop_op(c, TG_KIR_NEG, TG_DTYPE_INT32); });
  ASSERT_EQ(count_op(neg_k, TG_KIR_NEG, TG_DTYPE_INT32), 0);
  for (size_t i = 0; i < a.size(); ++i)  // two's complement negation, wrapping at INT32_MIN
    ASSERT_EQ(neg[i], static_cast<int32_t>(0u - static_cast<uint32_t>(a[i]))) << "-(" << a[i] << ")";

  auto [max_full, unused2] = run_with_caps<int32_t>(ta.maximum(tb), [](tg_renderer_caps&) {});
  ASSERT_GT(count_op(max_full, TG_KIR_MAX, TG_DTYPE_INT32), 0);
  auto [max_k, mx] =
      run_with_caps<int32_t>(ta.maximum(tb), [](tg_renderer_caps& c) { drop_op(c, TG_KIR_MAX, TG_DTYPE_INT32); });
  ASSERT_EQ(count_op(max_k, TG_KIR_MAX, TG_DTYPE_INT32), 0);
  EXPECT_GT(count_op(max_k, TG_KIR_WHERE), 0) << "int MAX becomes a select";
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(mx[i], a[i] > b[i] ? a[i] : b[i]) << "max(" << a[i] << ", " << b[i] << ")";
}

// --- 16-bit floats computed in float32 ---------------------------------------------------------------------------

// Rounds a double to the nearest value with `mant` fraction bits, exponents down to emin (subnormals below) and up
// to emax (infinity past the largest), ties to even; returns the format's bits (1-5-10 or 1-8-7).
uint16_t round_to_16(double x, int mant, int emin, int emax, int ebits) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  uint16_t exp_all = static_cast<uint16_t>(((1 << ebits) - 1) << mant);
  if (std::isnan(x)) return static_cast<uint16_t>(exp_all | (1 << (mant - 1)));
  double ax = std::fabs(x);
  if (std::isinf(ax)) return sign | exp_all;
  if (ax == 0) return sign;
  int e;
  std::frexp(ax, &e);
  int exp = std::max(e - 1, emin);
  double q = std::nearbyint(std::ldexp(ax, mant - exp));  // the significand in units of the last place
  if (q >= std::ldexp(1.0, mant + 1)) q /= 2, ++exp;      // rounding carried into the next binade
  if (exp > emax) return sign | exp_all;
  int64_t sig = static_cast<int64_t>(q);
  bool normal = sig >= (int64_t{1} << mant);
  uint16_t biased = normal ? static_cast<uint16_t>(exp - emin + 1) : 0;
  return static_cast<uint16_t>(sign | (biased << mant) | (sig & ((1 << mant) - 1)));
}
// Decodes by definition: (-1)^s * 2^(e - bias) * 1.f, or 2^(1 - bias) * 0.f when e = 0.
double decode_16(uint16_t h, int mant, int ebits) {
  int bias = (1 << (ebits - 1)) - 1, e = (h >> mant) & ((1 << ebits) - 1);
  int64_t f = h & ((1 << mant) - 1);
  double v = e == 0                  ? std::ldexp(static_cast<double>(f), 1 - bias - mant)
             : e == (1 << ebits) - 1 ? (f ? NAN : INFINITY)
                                     : std::ldexp(static_cast<double>(f + (int64_t{1} << mant)), e - bias - mant);
  return (h & 0x8000) ? -v : v;
}

struct Half {
  DType dtype;
  int tg_dtype, mant, emin, emax, ebits;
  uint16_t round(double x) const { return round_to_16(x, mant, emin, emax, ebits); }
  double decode(uint16_t h) const { return decode_16(h, mant, ebits); }
};
const Half kFloat16{dtypes::float16, TG_DTYPE_FLOAT16, 10, -14, 15, 5};
const Half kBfloat16{dtypes::bfloat16, TG_DTYPE_BFLOAT16, 7, -126, 127, 8};

// The renderer keeps loads, stores and conversions of the 16-bit type but computes nothing in it.
void no_half_math(tg_renderer_caps& c, int tg_dtype) {
  c.ops[tg_dtype] &= (1ull << TG_KIR_CAST) | (1ull << TG_KIR_BITCAST);
}

std::vector<uint16_t> half_inputs(const Half& h, size_t n, std::mt19937& rng) {
  std::vector<uint16_t> v;
  for (double x : {0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, HUGE_VAL, -HUGE_VAL}) v.push_back(h.round(x));
  v.push_back(h.round(std::ldexp(1.0, h.emin - h.mant)));                    // the smallest subnormal
  v.push_back(h.round(std::ldexp(2.0 - std::ldexp(1.0, -h.mant), h.emax)));  // the largest finite value
  std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
  while (v.size() < n) {
    uint16_t x = static_cast<uint16_t>(bits(rng));
    if (std::isnan(h.decode(x))) continue;
    v.push_back(x);
  }
  return v;
}

struct HalfCase {
  const char* name;
  tg_kir_op op;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> ref;  // correctly rounded to the 16-bit type: float32 has 2p+2 bits
  bool zero_sign = true;                      // whether the sign of a zero result is defined (not for max(-0, 0))
};

TEST(Decompositions, SixteenBitFloatsComputeInFloat32) {
  std::mt19937 rng(seed());
  const HalfCase cases[] = {
      {"add", TG_KIR_ADD, [](const Tensor& x, const Tensor& y) { return x + y; },
       [](double x, double y) { return x + y; }},
      {"mul", TG_KIR_MUL, [](const Tensor& x, const Tensor& y) { return x * y; },
       [](double x, double y) { return x * y; }},
      {"div", TG_KIR_FDIV, [](const Tensor& x, const Tensor& y) { return x / y; },
       [](double x, double y) { return x / y; }},
      {"max", TG_KIR_MAX, [](const Tensor& x, const Tensor& y) { return x.maximum(y); },
       [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }, false},
  };
  for (const Half& h : {kFloat16, kBfloat16}) {
    SCOPED_TRACE(h.dtype.name());
    std::vector<uint16_t> a = half_inputs(h, 2048, rng), b = half_inputs(h, 2048, rng);
    std::shuffle(b.begin(), b.end(), rng);
    const int64_t n = static_cast<int64_t>(a.size());
    Tensor ta = Tensor::from_bytes(a.data(), a.size() * 2, {n}, h.dtype),
           tb = Tensor::from_bytes(b.data(), b.size() * 2, {n}, h.dtype);
    for (const HalfCase& c : cases) {
      SCOPED_TRACE(c.name);
      // a renderer claiming the op for the 16-bit type gets it as is (lowered only: the CPU renders no such math)
      auto items = sched::create_schedule({c.fn(ta, tb).node()}, ta.device()).items;
      ASSERT_EQ(items.size(), 1u);
      tg_renderer_caps claims = rt::Device::get(ta.device()).caps();
      claims.ops[h.tg_dtype] |= 1ull << c.op;
      ASSERT_GT(count_op(lower_kernel(items[0].kernel, claims), c.op, h.tg_dtype), 0)
          << "with caps for it the op runs in " << h.dtype.name();
      auto [k, out] =
          run_with_caps<uint16_t>(c.fn(ta, tb), [&](tg_renderer_caps& caps) { no_half_math(caps, h.tg_dtype); });
      ASSERT_EQ(count_op(k, c.op, h.tg_dtype), 0) << "an op computed in " << h.dtype.name() << " without caps for it";
      ASSERT_GT(count_op(k, c.op, TG_DTYPE_FLOAT32), 0) << "the op should run in float32";
      for (size_t i = 0; i < a.size(); ++i) {
        double x = h.decode(a[i]), y = h.decode(b[i]);
        double want = h.decode(h.round(c.ref(x, y))), got = h.decode(out[i]);
        if (!c.zero_sign && want == 0 && got == 0) continue;
        ASSERT_TRUE(same_float(got, want))
            << c.name << "(" << x << ", " << y << ") = " << h.decode(out[i]) << " (bits 0x" << std::hex << out[i]
            << "), want " << want << " (bits 0x" << h.round(c.ref(x, y)) << ")";
      }
    }
    // a comparison of two 16-bit values compares their float32 conversions, exactly
    auto [k, lt] = run_with_caps<uint8_t>(ta.lt(tb), [&](tg_renderer_caps& caps) { no_half_math(caps, h.tg_dtype); });
    ASSERT_GT(count_op(k, TG_KIR_CAST, TG_DTYPE_FLOAT32), 0) << "the operands should be converted to float32";
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(lt[i] != 0, h.decode(a[i]) < h.decode(b[i])) << i;
  }
}

// --- custom kernels: FMA, DOT4, LUT16 and packed loads -----------------------------------------------------------

// A custom kernel's single statement (a loop over one GLOBAL range) as a schedule item over the given buffers, as
// CustomKernel::operator() builds it, so that it can be lowered with edited caps.
struct CustomItem {
  sched::ScheduleItem item;
  std::vector<std::shared_ptr<rt::Buffer>> bufs;
};
CustomItem custom_item(const std::string& name, const KExpr& statement, const KExpr& global,
                       std::vector<std::shared_ptr<rt::Buffer>> bufs) {
  sched::ScheduleItem item;
  item.kernel.sink = ir::UOp::make(ir::Op::SINK, dtypes::bool_, {statement.node});
  item.kernel.out_ranges = {global.node};
  item.kernel.name = name;
  item.kernel.n_outputs = 1;
  item.kernel.custom = true;
  item.kernel.parallel = false;
  for (const auto& b : bufs) item.kernel.params.push_back({b->dtype(), b->numel()});
  return {std::move(item), std::move(bufs)};
}

std::shared_ptr<rt::Buffer> buffer_of(const void* data, DType d, int64_t n) {
  auto b = std::make_shared<rt::Buffer>(rt::Device::get("CPU"), d, n);
  if (data) b->copy_in(data, b->nbytes());
  return b;
}

TEST(Decompositions, FmaWithoutTheRendererRoundsTwice) {
  // a*b = 1 - 2^-46 exactly: rounded once with c = -1 it is -2^-46; rounded twice (product to 1.0f) it is 0
  std::vector<float> a = {1.0f + std::ldexp(1.0f, -23), 3.0f, 0.1f}, b = {1.0f - std::ldexp(1.0f, -23), 5.0f, 10.0f},
                     c = {-1.0f, 1.0f, -1.0f};
  const int64_t n = static_cast<int64_t>(a.size());
  CustomKernel ck("fma3");
  KExpr g = ck.range(n, Axis::GLOBAL);
  KExpr val = KExpr::fma(ck.load(ck.buffer(1, dtypes::float32), g), ck.load(ck.buffer(2, dtypes::float32), g),
                         ck.load(ck.buffer(3, dtypes::float32), g));
  KExpr st = ck.loop({ck.store(ck.buffer(0, dtypes::float32), g, val)}, {g});
  for (bool has_fma : {true, false}) {
    SCOPED_TRACE(has_fma ? "renderer with FMA" : "renderer without FMA");
    auto out = buffer_of(nullptr, dtypes::float32, n);
    auto item = custom_item("fma3", st, g,
                            {out, buffer_of(a.data(), dtypes::float32, n), buffer_of(b.data(), dtypes::float32, n),
                             buffer_of(c.data(), dtypes::float32, n)});
    KirProgram k = run_item(item.item, item.bufs, [&](tg_renderer_caps& caps) {
      if (!has_fma) drop_op(caps, TG_KIR_FMA);
    });
    if (has_fma && count_op(k, TG_KIR_FMA) == 0) GTEST_SKIP() << "the CPU renderer declares no FMA on this host";
    EXPECT_EQ(count_op(k, TG_KIR_FMA), has_fma ? 1 : 0);
    std::vector<float> got(static_cast<size_t>(n));
    out->copy_out(got.data(), got.size() * sizeof(float));
    for (size_t i = 0; i < got.size(); ++i) {
      double exact = static_cast<double>(a[i]) * b[i] + c[i];  // exact in double for these inputs
      volatile float product = a[i] * b[i];                    // rounded on its own: no contraction into an fma here
      float want = has_fma ? static_cast<float>(exact) : product + c[i];
      EXPECT_EQ(got[i], want) << a[i] << " * " << b[i] << " + " << c[i];
    }
    EXPECT_EQ(got[0], has_fma ? -std::ldexp(1.0f, -46) : 0.0f);
  }
}

TEST(Decompositions, Dot4AndLut16FromShiftsAndSelects) {
  std::mt19937 rng(seed());
  const int64_t n = 515;
  std::vector<int32_t> acc(n), u(n), s(n), idx(n);
  for (int64_t i = 0; i < n; ++i)
    acc[i] = static_cast<int32_t>(rng()), u[i] = static_cast<int32_t>(rng()), s[i] = static_cast<int32_t>(rng()),
    idx[i] = static_cast<int32_t>(rng());
  u[0] = -1, s[0] = static_cast<int32_t>(0x80808080u), acc[0] = INT32_MAX;  // 255 x -128 four times, wrapping
  std::array<uint8_t, 16> table;
  for (auto& t : table) t = static_cast<uint8_t>(rng());
  table[15] = 0xff;
  idx[1] = static_cast<int32_t>(0xff0f1f2fu);

  CustomKernel ck("dot4_lut16");
  KExpr g = ck.range(n, Axis::GLOBAL);
  auto in = [&](int i) { return ck.load(ck.buffer(i, dtypes::int32), g); };
  KExpr dot = KExpr::dot4(in(1), in(2), in(3));
  KExpr lut = KExpr::lut16(in(4), table);
  KExpr st = ck.loop(
      {ck.store(ck.buffer(0, dtypes::int32), g * 2, dot), ck.store(ck.buffer(0, dtypes::int32), g * 2 + 1, lut)}, {g});
  auto out = buffer_of(nullptr, dtypes::int32, 2 * n);
  auto item = custom_item("dot4_lut16", st, g,
                          {out, buffer_of(acc.data(), dtypes::int32, n), buffer_of(u.data(), dtypes::int32, n),
                           buffer_of(s.data(), dtypes::int32, n), buffer_of(idx.data(), dtypes::int32, n)});
  KirProgram k = run_item(item.item, item.bufs, [](tg_renderer_caps& caps) {
    drop_op(caps, TG_KIR_DOT4);
    drop_op(caps, TG_KIR_LUT16);
  });
  EXPECT_EQ(count_op(k, TG_KIR_DOT4), 0);
  EXPECT_EQ(count_op(k, TG_KIR_LUT16), 0);
  std::vector<int32_t> got(static_cast<size_t>(2 * n));
  out->copy_out(got.data(), got.size() * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i) {
    int64_t want = acc[i];
    for (int q = 0; q < 4; ++q)
      want += int64_t{static_cast<uint8_t>(static_cast<uint32_t>(u[i]) >> (8 * q))} *
              static_cast<int8_t>(static_cast<uint32_t>(s[i]) >> (8 * q));
    ASSERT_EQ(got[2 * i], static_cast<int32_t>(static_cast<uint32_t>(want))) << "dot4 element " << i;
    uint32_t lw = 0;
    for (int q = 0; q < 4; ++q) lw |= uint32_t{table[(static_cast<uint32_t>(idx[i]) >> (8 * q)) & 15]} << (8 * q);
    ASSERT_EQ(static_cast<uint32_t>(got[2 * i + 1]), lw) << "lut16 element " << i;
  }
}

TEST(Decompositions, PackedLoadsFromBytes) {
  std::mt19937 rng(seed());
  const int64_t n = 257;
  std::vector<uint8_t> bytes(static_cast<size_t>(n * 8 + 16));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  CustomKernel ck("packed");
  KExpr g = ck.range(n, Axis::GLOBAL);
  KExpr src = ck.buffer(1, dtypes::uint8);
  // at odd byte offsets: 4-byte words at 4g+1, 2-byte halves at 2g+3 (as uint16), 8-byte words at 8g+5
  KExpr w32 = ck.load_packed(src, g * 4 + 1, dtypes::int32);
  KExpr w16 = ck.load_packed(src, g * 2 + 3, dtypes::uint16).cast(dtypes::int32);
  KExpr w64 = ck.load_packed(src, g * 8 + 5, dtypes::int64);
  KExpr out0 = ck.buffer(0, dtypes::int64);
  KExpr st = ck.loop({ck.store(out0, g * 3, w32.cast(dtypes::int64)),
                      ck.store(out0, g * 3 + 1, w16.cast(dtypes::int64)), ck.store(out0, g * 3 + 2, w64)},
                     {g});
  auto le = [&](int64_t at, int nbytes) {
    uint64_t v = 0;
    for (int i = 0; i < nbytes; ++i) v |= uint64_t{bytes[static_cast<size_t>(at + i)]} << (8 * i);
    return v;
  };
  for (bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "renderer with packed loads" : "renderer without packed loads");
    auto out = buffer_of(nullptr, dtypes::int64, 3 * n);
    auto item =
        custom_item("packed", st, g, {out, buffer_of(bytes.data(), dtypes::uint8, static_cast<int64_t>(bytes.size()))});
    KirProgram k = run_item(item.item, item.bufs, [&](tg_renderer_caps& caps) {
      if (!packed) caps.packed_loads = 0;
    });
    int wide_loads = 0;
    for (const auto& in : k.insts) wide_loads += in.op == TG_KIR_LOAD && in.dtype != TG_DTYPE_UINT8;
    if (packed)
      EXPECT_GT(wide_loads, 0) << "the CPU takes packed loads whole";
    else
      EXPECT_EQ(wide_loads, 0) << "without packed loads every load should read one byte";
    std::vector<int64_t> got(static_cast<size_t>(3 * n));
    out->copy_out(got.data(), got.size() * sizeof(int64_t));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[3 * i], static_cast<int32_t>(static_cast<uint32_t>(le(4 * i + 1, 4))))
          << "int32 at byte " << 4 * i + 1;
      ASSERT_EQ(got[3 * i + 1], static_cast<int64_t>(le(2 * i + 3, 2))) << "uint16 at byte " << 2 * i + 3;
      ASSERT_EQ(got[3 * i + 2], static_cast<int64_t>(le(8 * i + 5, 8))) << "int64 at byte " << 8 * i + 5;
    }
  }
}

// decompose() itself on single nodes: what it returns for ops it cannot spell otherwise.
TEST(Decompositions, NothingForWhatHasNoDecomposition) {
  using namespace ir;
  UOpPtr f = UOp::make(Op::DEFINE_VAR, dtypes::float32, {}, VarInfo{"f", 0, 1});
  UOpPtr i = UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"i", 0, 9});
  EXPECT_EQ(decompose(alu(Op::MAX, f, f)), nullptr) << "float MAX keeps NaN semantics only whole";
  EXPECT_EQ(decompose(alu(Op::EXP2, i)), nullptr) << "no integer exp2";
  EXPECT_EQ(decompose(alu(Op::SQRT, f)), nullptr);
  EXPECT_EQ(decompose(alu(Op::IDIV, i, i)), nullptr);
  // the shapes of the simple ones, built by hand
  EXPECT_EQ(decompose(alu(Op::SUB, i, i)).get(), alu(Op::ADD, i, alu(Op::NEG, i)).get());
  EXPECT_EQ(decompose(alu(Op::NEG, i)).get(), alu(Op::MUL, i, const_int(dtypes::int32, -1)).get());
  EXPECT_EQ(decompose(alu(Op::RECIP, f)).get(), alu(Op::FDIV, const_float(dtypes::float32, 1.0), f).get());
  EXPECT_EQ(decompose(alu(Op::MULACC, f, f, f)).get(), alu(Op::ADD, alu(Op::MUL, f, f), f).get());
  // each is a named rule of one set (what driver errors and DEBUG name)
  const PatternMatcher& pm = pm_decompositions();
  EXPECT_EQ(pm.rule_name(pm.rewrite_with_rule(alu(Op::SUB, i, i)).second), "sub_as_add_neg");
  EXPECT_EQ(pm.rule_name(pm.rewrite_with_rule(alu(Op::NEG, f)).second), "neg_float");
  UOpPtr h = UOp::make(Op::DEFINE_VAR, dtypes::float16, {}, VarInfo{"h", 0, 1});
  EXPECT_EQ(pm.rule_name(pm.rewrite_with_rule(alu(Op::SUB, h, h)).second), "half_in_float32")
      << "16-bit math goes first";
}

}  // namespace
}  // namespace tg::codegen
