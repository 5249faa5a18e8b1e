// Elementwise ops of tg::Tensor vs plain C++ loops (long double references rounded to the result dtype),
// over every dtype each op makes sense for, odd shapes, 0-size tensors and numpy broadcasting.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iostream>
#include <numbers>

#include "tensor_test_util.hpp"
#include "test_sweep.hpp"

namespace {

using namespace tgtest;

constexpr uint32_t kSeed = 20240611;

// Tolerances per result dtype class.
struct Tols {
  Tol f32, f64, f16, bf16;
  Tol for_dtype(DType d) const {
    switch (d.scalar) {
      case ScalarType::Float64: return f64;
      case ScalarType::Float16: return f16;
      case ScalarType::BFloat16: return bf16;
      default: return f32;
    }
  }
};
const Tols kExact{};
// float32 transcendentals: a few ulp / 1e-5 relative; 16-bit formats: composites are spelled in the dtype itself
const Tols kTrans{{4, 1e-5, 1e-6}, {8, 1e-12, 1e-14}, {2, 4e-3, 1e-3}, {2, 3e-2, 8e-3}};
const Tols kOneUlp{{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};

bool any(DType) { return true; }
bool not_bool(DType d) { return !d.is_bool(); }
bool ints(DType d) { return d.is_int(); }
bool is_16bit_float(DType d) { return d.is_float() && d.itemsize() == 2; }
DType same(DType d) { return d; }
DType to_bool(DType) { return dt::bool_; }
DType floaty(DType d) { return d.is_float() ? d : dt::float32; }

// integer ops on the 64-bit patterns, wrapped to d
LD iadd(LD a, LD b, DType d) { return wrap_bits(d, to_bits64(a) + to_bits64(b)); }
LD isub(LD a, LD b, DType d) { return wrap_bits(d, to_bits64(a) - to_bits64(b)); }
LD imul(LD a, LD b, DType d) { return wrap_bits(d, to_bits64(a) * to_bits64(b)); }
LD idiv_ref(LD a, LD b, DType d) {
  if (b == 0) return 0;
  if (d.is_unsigned()) return static_cast<LD>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
  if (b == -1) return wrap_bits(d, uint64_t{0} - to_bits64(a));
  return static_cast<LD>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
}
LD mod_ref(LD a, LD b, DType d) {
  if (b == 0) return 0;
  if (d.is_unsigned()) return static_cast<LD>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
  if (b == -1) return 0;
  return static_cast<LD>(static_cast<int64_t>(a) % static_cast<int64_t>(b));
}
LD ipow(LD a, LD b) {
  LD r = 1;
  for (int i = 0; i < static_cast<int>(b); ++i) r *= a;
  return r;
}
// value as the float type an int operand is converted to before a float op
LD as_float_operand(LD x, DType d) { return d.is_float() ? x : static_cast<LD>(static_cast<float>(x)); }

struct BinOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<LD(LD, LD, DType)> ref;  // d: operand dtype
  bool (*applies)(DType);
  DType (*out)(DType);
  double lo, hi, lo2, hi2;      // float ranges of the two operands
  double ilo, ihi, ilo2, ihi2;  // integer ranges (clamped to the dtype)
  Tols tol;
  bool lowp_separate = false;  // composite op: checked on float16/bfloat16 by UnaryLowPrecision below
};

const double kBig = 1e30;  // integer ranges clamp to the dtype: full range

const std::vector<BinOp>& bin_ops() {
  static const std::vector<BinOp> ops = {
      {"add", [](auto& a, auto& b) { return a + b; },
       [](LD a, LD b, DType d) { return d.is_bool()    ? LD(a || b)
                                        : d.is_float() ? a + b
                                                       : iadd(a, b, d); }, any, same,
       -100, 100, -100, 100, -kBig, kBig, -kBig, kBig, kExact},
      {"sub", [](auto& a, auto& b) { return a - b; },
       [](LD a, LD b, DType d) { return d.is_float() ? a - b : isub(a, b, d); }, not_bool, same, -100, 100, -100, 100,
       -kBig, kBig, -kBig, kBig, kExact},
      {"mul", [](auto& a, auto& b) { return a * b; },
       [](LD a, LD b, DType d) { return d.is_bool()    ? LD(a && b)
                                        : d.is_float() ? a * b
                                                       : imul(a, b, d); }, any, same,
       -100, 100, -100, 100, -kBig, kBig, -kBig, kBig, kExact},
      {"div", [](auto& a, auto& b) { return a / b; },
       [](LD a, LD b, DType d) { return as_float_operand(a, d) / as_float_operand(b, d); }, not_bool, floaty, -100, 100,
       0.5, 100, -1000, 1000, -1000, 1000, kExact},
      {"idiv", [](auto& a, auto& b) { return a.idiv(b); }, idiv_ref, ints, same, 0, 0, 0, 0, -kBig, kBig, -20, 20,
       kExact},
      {"mod", [](auto& a, auto& b) { return a.mod(b); }, mod_ref, ints, same, 0, 0, 0, 0, -kBig, kBig, -20, 20, kExact},
      {"minimum", [](auto& a, auto& b) { return a.minimum(b); }, [](LD a, LD b, DType) { return std::min(a, b); }, any,
       same, -100, 100, -100, 100, -kBig, kBig, -kBig, kBig, kExact},
      {"maximum", [](auto& a, auto& b) { return a.maximum(b); }, [](LD a, LD b, DType) { return std::max(a, b); }, any,
       same, -100, 100, -100, 100, -kBig, kBig, -kBig, kBig, kExact},
      {"lt", [](auto& a, auto& b) { return a.lt(b); }, [](LD a, LD b, DType) { return LD(a < b); }, any, to_bool, -3, 3,
       -3, 3, -3, 3, -3, 3, kExact},
      {"le", [](auto& a, auto& b) { return a.le(b); }, [](LD a, LD b, DType) { return LD(a <= b); }, any, to_bool, -3,
       3, -3, 3, -3, 3, -3, 3, kExact},
      {"gt", [](auto& a, auto& b) { return a.gt(b); }, [](LD a, LD b, DType) { return LD(a > b); }, any, to_bool, -3, 3,
       -3, 3, -3, 3, -3, 3, kExact},
      {"ge", [](auto& a, auto& b) { return a.ge(b); }, [](LD a, LD b, DType) { return LD(a >= b); }, any, to_bool, -3,
       3, -3, 3, -3, 3, -3, 3, kExact},
      {"eq", [](auto& a, auto& b) { return a.eq(b); }, [](LD a, LD b, DType) { return LD(a == b); }, any, to_bool, -3,
       3, -3, 3, -3, 3, -3, 3, kExact},
      {"ne", [](auto& a, auto& b) { return a.ne(b); }, [](LD a, LD b, DType) { return LD(a != b); }, any, to_bool, -3,
       3, -3, 3, -3, 3, -3, 3, kExact},
      {"pow",
       [](auto& a, auto& b) { return a.pow(b); },
       [](LD a, LD b, DType d) { return d.is_float() ? std::pow(a, b) : ipow(a, b); },
       not_bool,
       same,
       0.1,
       10,
       -3,
       3,
       -5,
       5,
       0,
       3,
       {{4, 1e-5, 0}, {8, 1e-12, 0}, {2, 4e-3, 0}, {2, 3e-2, 0}},
       true},
  };
  return ops;
}

// Comparisons are also checked on the full integer range, where float-based shortcuts would break.
const std::vector<const char*> kCompareOps = {"lt", "le", "gt", "ge", "eq", "ne"};

class BinaryOpTest : public ::testing::TestWithParam<size_t> {};

void run_binary(const BinOp& op, DType d, const Shape& sa, const Shape& sb, std::mt19937& rng,
                bool full_range_ints = false) {
  SCOPED_TRACE(std::string(op.name) + " " + d.name() + " " + tg::shape_str(sa) + " with " + tg::shape_str(sb));
  Vals a = random_vals(d, numel_of(sa), rng, d.is_float() ? op.lo : op.ilo, d.is_float() ? op.hi : op.ihi);
  Vals b = random_vals(d, numel_of(sb), rng, d.is_float() ? op.lo2 : op.ilo2, d.is_float() ? op.hi2 : op.ihi2);
  if (full_range_ints) {
    std::mt19937_64 r64(rng());
    a = random_bits(d, numel_of(sa), r64);
    b = random_bits(d, numel_of(sb), r64);
    for (size_t i = 0; i < b.size() && i < a.size(); i += 3) b[i] = a[i];  // some equal pairs
  }
  Tensor ta = make(a, sa, d), tb = make(b, sb, d);
  Tensor got = op.fn(ta, tb);
  Shape so = got.shape();
  DType od = op.out(d);
  Vals exp(static_cast<size_t>(numel_of(so)));
  for (int64_t i = 0; i < numel_of(so); ++i)
    exp[i] = round_to(od, op.ref(a[bcast_index(so, sa, i)], b[bcast_index(so, sb, i)], d));
  EXPECT_TRUE(check(got, so, od, exp, op.tol.for_dtype(od)));
}

TEST_P(BinaryOpTest, AllDtypes) {
  const BinOp& op = bin_ops()[GetParam()];
  std::mt19937 rng(kSeed + static_cast<uint32_t>(GetParam()));
  SCOPED_TRACE(seed_trace(kSeed + static_cast<uint32_t>(GetParam())));
  for (DType d : all_dtypes())
    if (op.applies(d) && !(op.lowp_separate && is_16bit_float(d))) run_binary(op, d, {3, 11}, {3, 11}, rng);
}

TEST_P(BinaryOpTest, OddShapesAndBroadcasting) {
  const BinOp& op = bin_ops()[GetParam()];
  std::mt19937 rng(kSeed + 100 + static_cast<uint32_t>(GetParam()));
  SCOPED_TRACE(seed_trace(kSeed + 100 + static_cast<uint32_t>(GetParam())));
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1}, {1}},    {{7}, {7}},       {{33}, {33}},           {{1000}, {1000}},
      {{0}, {0}},    {{}, {}},         {{2, 3, 4}, {2, 3, 4}}, {{3, 1}, {1, 4}},
      {{5}, {2, 5}}, {{}, {2, 3}},     {{2, 3}, {}},           {{2, 1, 3}, {4, 1}},
      {{1}, {0}},    {{0, 3}, {1, 3}},
  };
  for (DType d : {dt::float32, dt::int32})
    if (op.applies(d))
      for (auto& pair : shapes)  // every shape on the first op, the first few on every op
        if (tgtest::swept(GetParam() == 0, &pair - shapes.data() < 4)) run_binary(op, d, pair.first, pair.second, rng);
}

TEST(BinaryOps, ComparisonsOnFullIntegerRange) {
  SCOPED_TRACE(seed_trace(kSeed + 200));
  for (const BinOp& op : bin_ops()) {
    if (std::find_if(kCompareOps.begin(), kCompareOps.end(),
                     [&](const char* n) { return std::string(n) == op.name; }) == kCompareOps.end())
      continue;
    std::mt19937 rng(kSeed + 200);
    for (DType d : all_dtypes())
      if (d.is_int()) run_binary(op, d, {64}, {64}, rng, true);
  }
}

TEST(BinaryOps, IntegerArithmeticOnFullRangeWraps) {
  std::mt19937 rng(kSeed + 300);
  SCOPED_TRACE(seed_trace(kSeed + 300));
  for (const BinOp& op : bin_ops()) {
    std::string n = op.name;
    if (n != "add" && n != "sub" && n != "mul" && n != "minimum" && n != "maximum" && n != "idiv" && n != "mod")
      continue;
    for (DType d : all_dtypes())
      if (d.is_int()) run_binary(op, d, {97}, {97}, rng, true);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOpTest, ::testing::Range<size_t>(0, bin_ops().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return std::string(bin_ops()[i.param].name);
                         });

// ---- unary --------------------------------------------------------------------------------------------------------
struct UnOp {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<LD(LD, DType)> ref;
  bool (*applies)(DType);
  DType (*out)(DType);
  double lo, hi, ilo, ihi;
  Tols tol;
  bool lowp_separate = false;  // composite op: checked on float16/bfloat16 by UnaryLowPrecision below
};

LD sigmoid_ref(LD x) { return 1 / (1 + std::exp(-x)); }

const std::vector<UnOp>& un_ops() {
  static const std::vector<UnOp> ops = {
      {"neg", [](auto& a) { return a.neg(); },
       [](LD x, DType d) {
         return d.is_bool() ? LD(x == 0) : d.is_float() ? -x : wrap_bits(d, uint64_t{0} - to_bits64(x));
       },
       any, same, -100, 100, -kBig, kBig, kExact},
      {"logical_not", [](auto& a) { return a.logical_not(); }, [](LD x, DType) { return LD(x == 0); }, any, to_bool, -2,
       2, -2, 2, kExact},
      {"abs", [](auto& a) { return a.abs(); },
       [](LD x, DType d) { return d.is_float() || x >= 0 ? std::fabs(x) : wrap_bits(d, uint64_t{0} - to_bits64(x)); },
       any, same, -100, 100, -kBig, kBig, kExact},
      {"relu", [](auto& a) { return a.relu(); }, [](LD x, DType) { return x > 0 ? x : 0; }, not_bool, same, -100, 100,
       -kBig, kBig, kExact},
      {"exp", [](auto& a) { return a.exp(); }, [](LD x, DType d) { return std::exp(as_float_operand(x, d)); }, any,
       floaty, -10, 10, -10, 10, kTrans, true},
      {"exp2", [](auto& a) { return a.exp2(); }, [](LD x, DType d) { return std::exp2(as_float_operand(x, d)); }, any,
       floaty, -14, 14, -14, 14, kTrans},
      {"log", [](auto& a) { return a.log(); }, [](LD x, DType d) { return std::log(as_float_operand(x, d)); }, not_bool,
       floaty, 0.01, 100, 1, 100, kTrans},
      {"log2", [](auto& a) { return a.log2(); }, [](LD x, DType d) { return std::log2(as_float_operand(x, d)); },
       not_bool, floaty, 0.01, 100, 1, 100, kTrans},
      {"sin", [](auto& a) { return a.sin(); }, [](LD x, DType d) { return std::sin(as_float_operand(x, d)); }, any,
       floaty, -10, 10, -10, 10, kTrans},
      {"cos", [](auto& a) { return a.cos(); }, [](LD x, DType d) { return std::cos(as_float_operand(x, d)); }, any,
       floaty, -10, 10, -10, 10, kTrans, true},
      {"sqrt", [](auto& a) { return a.sqrt(); }, [](LD x, DType d) { return std::sqrt(as_float_operand(x, d)); }, any,
       floaty, 0, 100, 0, 100, kOneUlp},
      {"rsqrt", [](auto& a) { return a.rsqrt(); }, [](LD x, DType d) { return 1 / std::sqrt(as_float_operand(x, d)); },
       not_bool, floaty, 0.01, 100, 1, 100, kTrans},
      {"reciprocal", [](auto& a) { return a.reciprocal(); }, [](LD x, DType d) { return 1 / as_float_operand(x, d); },
       not_bool, floaty, -100, 100, -100, 100, kOneUlp},
      {"sigmoid", [](auto& a) { return a.sigmoid(); },
       [](LD x, DType d) { return sigmoid_ref(as_float_operand(x, d)); }, any, floaty, -8, 8, -8, 8, kTrans},
      {"tanh", [](auto& a) { return a.tanh(); }, [](LD x, DType d) { return std::tanh(as_float_operand(x, d)); }, any,
       floaty, -8, 8, -8, 8, kTrans},
      {"gelu", [](auto& a) { return a.gelu(); },
       [](LD x, DType d) {
         x = as_float_operand(x, d);
         return 0.5L * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi_v<LD>) * (x + 0.044715L * x * x * x)));
       },
       any, floaty, -6, 6, -6, 6, kTrans},
      {"silu", [](auto& a) { return a.silu(); },
       [](LD x, DType d) { return as_float_operand(x, d) * sigmoid_ref(as_float_operand(x, d)); }, any, floaty, -8, 8,
       -8, 8, kTrans},
  };
  return ops;
}

class UnaryOpTest : public ::testing::TestWithParam<size_t> {};

void run_unary(const UnOp& op, DType d, const Shape& s, std::mt19937& rng) {
  SCOPED_TRACE(std::string(op.name) + " " + d.name() + " " + tg::shape_str(s));
  Vals a = random_vals(d, numel_of(s), rng, d.is_float() ? op.lo : op.ilo, d.is_float() ? op.hi : op.ihi);
  DType od = op.out(d);
  Vals exp(a.size());
  for (size_t i = 0; i < a.size(); ++i) exp[i] = round_to(od, op.ref(a[i], d));
  EXPECT_TRUE(check(op.fn(make(a, s, d)), s, od, exp, op.tol.for_dtype(od)));
}

TEST_P(UnaryOpTest, AllDtypes) {
  const UnOp& op = un_ops()[GetParam()];
  uint32_t seed = kSeed + 400 + static_cast<uint32_t>(GetParam());
  std::mt19937 rng(seed);
  SCOPED_TRACE(seed_trace(seed));
  for (DType d : all_dtypes())
    if (op.applies(d) && !(op.lowp_separate && is_16bit_float(d))) run_unary(op, d, {5, 13}, rng);
}

TEST_P(UnaryOpTest, OddShapes) {
  const UnOp& op = un_ops()[GetParam()];
  uint32_t seed = kSeed + 500 + static_cast<uint32_t>(GetParam());
  std::mt19937 rng(seed);
  SCOPED_TRACE(seed_trace(seed));
  for (const Shape& s : std::vector<Shape>{{}, {1}, {7}, {33}, {1000}, {0}, {2, 0, 3}, {3, 5}, {2, 3, 7}})
    run_unary(op, dt::float32, s, rng);
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryOpTest, ::testing::Range<size_t>(0, un_ops().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(un_ops()[i.param].name); });

// exp, cos and pow are composites (x * (1/ln2) before exp2, pi/2 - x before sin, y * log2|x| before exp2); on
// float16/bfloat16 they must run in float32 and round once, or they drift by ~5 ulp (this test caught
// float16 exp(6.95) = 1046, not 1051). The reference is the exact value rounded once to the 16-bit format.
void run_scalar_pow(const std::vector<DType>& dts);

TEST(UnaryLowPrecision, ExpCosPowWithinAFewUlpOnFloat16AndBFloat16) {
  std::mt19937 rng(kSeed + 450);
  SCOPED_TRACE(seed_trace(kSeed + 450));
  for (const UnOp& op : un_ops())
    if (op.lowp_separate)
      for (DType d : {dt::float16, dt::bfloat16}) run_unary(op, d, {5, 13}, rng);
  for (const BinOp& op : bin_ops())
    if (op.lowp_separate)
      for (DType d : {dt::float16, dt::bfloat16}) run_binary(op, d, {5, 13}, {5, 13}, rng);
  run_scalar_pow({dt::float16, dt::bfloat16});
}

// cos and tanh in ulps where their old decompositions cancelled: cos(x) as sin(pi/2 - x) lost ulp(x)/2 in the
// subtraction (cos(10000) was 1.5e-4 off), tanh as 2 sigmoid(2x) - 1 lost everything near 0 (tanh(1e-6): 7%).
// Reference: long double libm on the float32 inputs. Wide and tiny random arguments, and the floats next to the
// zeros of cos, where only an exact quadrant reduction keeps the relative error small.
TEST(UnaryAccuracy, CosAndTanhWithinAFewUlpAcrossTheirRange) {
  std::mt19937 rng(kSeed + 470);
  SCOPED_TRACE(seed_trace(kSeed + 470));
  std::vector<float> xs;
  std::uniform_real_distribution<float> wide(-1e4f, 1e4f), unit(-1, 1);
  std::uniform_real_distribution<double> expo(-30, 0);
  for (int i = 0; i < 2000; ++i) xs.push_back(wide(rng)), xs.push_back(unit(rng));
  for (int i = 0; i < 1000; ++i) xs.push_back((i % 2 ? -1 : 1) * static_cast<float>(std::exp2(expo(rng))));
  for (int k = -3000; k <= 3000; k += 7) xs.push_back(static_cast<float>((k + 0.5L) * std::numbers::pi_v<long double>));
  Tensor x = Tensor::from_vector(xs, {static_cast<int64_t>(xs.size())});
  auto c = x.cos().to_vector<float>(), t = x.tanh().to_vector<float>();
  auto ulps = [](float got, long double want) {
    float w = static_cast<float>(want);
    return static_cast<double>(std::fabs(static_cast<long double>(got) - want) /
                               (std::nextafter(std::fabs(w), INFINITY) - std::fabs(w)));
  };
  double worst_cos = 0, worst_tanh = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    long double xi = xs[i];
    worst_cos = std::max(worst_cos, ulps(c[i], std::cos(xi)));
    worst_tanh = std::max(worst_tanh, ulps(t[i], std::tanh(xi)));
  }
  EXPECT_LE(worst_cos, 4) << "cos";
  EXPECT_LE(worst_tanh, 4) << "tanh";
  EXPECT_EQ(Tensor::from_vector(std::vector<float>{1e-6f}, {1}).tanh().item<float>(), 1e-6f);
}

// ---- where
// -----------------------------------------------------------------------------------------------------------
TEST(Where, AllDtypesAndBroadcasting) {
  std::mt19937 rng(kSeed + 600);
  SCOPED_TRACE(seed_trace(kSeed + 600));
  const std::vector<std::array<Shape, 3>> shapes = {{Shape{4, 9}, Shape{4, 9}, Shape{4, 9}},
                                                    {Shape{3, 1}, Shape{1, 4}, Shape{}},
                                                    {Shape{5}, Shape{2, 5}, Shape{2, 1}},
                                                    {Shape{0}, Shape{1}, Shape{0}},
                                                    {Shape{}, Shape{7}, Shape{7}}};
  for (DType d : all_dtypes())
    for (DType cd : {dt::bool_, dt::int32, dt::float32})  // non-bool conditions count as true when nonzero
      for (auto& s : shapes) {
        if (!tgtest::swept(d == dt::float32, cd == dt::bool_ && &s == &shapes[0])) continue;
        SCOPED_TRACE(std::string(d.name()) + " cond " + cd.name() + " " + tg::shape_str(s[0]));
        Vals c = random_vals(cd, numel_of(s[0]), rng, -1, 1), a = random_vals(d, numel_of(s[1]), rng, -50, 50),
             b = random_vals(d, numel_of(s[2]), rng, -50, 50);
        if (cd.is_float())
          for (auto& x : c) x = std::round(x * 2) / 2;  // -1, -0.5, 0, 0.5, 1
        Tensor got = Tensor::where(make(c, s[0], cd), make(a, s[1], d), make(b, s[2], d));
        Shape so = got.shape();
        Vals exp(static_cast<size_t>(numel_of(so)));
        for (int64_t i = 0; i < numel_of(so); ++i)
          exp[i] = c[bcast_index(so, s[0], i)] != 0 ? a[bcast_index(so, s[1], i)] : b[bcast_index(so, s[2], i)];
        EXPECT_TRUE(check(got, so, d, exp));
      }
}

// ---- dtype promotion of mixed operands
// -------------------------------------------------------------------------------
TEST(Promotion, MixedDtypesFollowTheLattice) {
  struct Case {
    DType a, b, out;
  };
  const std::vector<Case> cases = {
      {dt::int8, dt::uint8, dt::int16},         {dt::uint8, dt::int32, dt::int32},
      {dt::int16, dt::uint16, dt::int32},       {dt::uint32, dt::int32, dt::int64},
      {dt::bool_, dt::int8, dt::int8},          {dt::int32, dt::float16, dt::float16},
      {dt::float16, dt::bfloat16, dt::float32}, {dt::float32, dt::float64, dt::float64},
      {dt::uint64, dt::float32, dt::float32},
  };
  std::mt19937 rng(kSeed + 700);
  SCOPED_TRACE(seed_trace(kSeed + 700));
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.a.name()) + " + " + c.b.name());
    Vals a = random_vals(c.a, 19, rng, 0, 100), b = random_vals(c.b, 19, rng, -100, 100);
    if (c.b.is_unsigned() || c.b.is_bool()) b = random_vals(c.b, 19, rng, 0, 100);
    Vals exp(19);
    for (size_t i = 0; i < 19; ++i) exp[i] = round_to(c.out, a[i] + b[i]);
    EXPECT_TRUE(check(make(a, {19}, c.a) + make(b, {19}, c.b), {19}, c.out, exp));
  }
}

// ---- scalar overloads
// ------------------------------------------------------------------------------------------------
TEST(ScalarOverloads, MatchTensorOps) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    std::function<LD(LD)> ref;
  };
  const std::vector<Case> cases = {
      {"t+3", [](const Tensor& t) { return t + 3.0; }, [](LD x) { return x + 3; }},
      {"t-3", [](const Tensor& t) { return t - 3.0; }, [](LD x) { return x - 3; }},
      {"t*3", [](const Tensor& t) { return t * 3.0; }, [](LD x) { return x * 3; }},
      {"3+t", [](const Tensor& t) { return 3.0 + t; }, [](LD x) { return 3 + x; }},
      {"3*t", [](const Tensor& t) { return 3.0 * t; }, [](LD x) { return 3 * x; }},
      {"3-t", [](const Tensor& t) { return 3.0 - t; }, [](LD x) { return 3 - x; }},
  };
  std::mt19937 rng(kSeed + 800);
  SCOPED_TRACE(seed_trace(kSeed + 800));
  for (DType d : all_dtypes()) {
    if (d.is_bool()) continue;
    Vals a = random_vals(d, 23, rng, -20, 20);
    for (auto& c : cases) {
      SCOPED_TRACE(std::string(c.name) + " " + d.name());
      Vals exp(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        exp[i] = round_to(d, d.is_int() ? wrap_bits(d, to_bits64(c.ref(a[i]))) : c.ref(a[i]));
      EXPECT_TRUE(check(c.fn(make(a, {23}, d)), {23}, d, exp));
    }
    // true division by a scalar: ints give float32
    DType od = floaty(d);
    Vals exp(a.size());
    for (size_t i = 0; i < a.size(); ++i) exp[i] = round_to(od, as_float_operand(a[i], d) / 4);
    EXPECT_TRUE(check(make(a, {23}, d) / 4.0, {23}, od, exp)) << d.name() << " / 4";
  }
}

TEST(ScalarOverloads, FractionalScalarOnIntsGivesFloat32AndBoolPromotes) {
  Tensor i = make({1, -2, 7}, {3}, dt::int32);
  EXPECT_TRUE(check(i + 2.5, {3}, dt::float32, {3.5, 0.5, 9.5}));
  EXPECT_TRUE(check(i * 0.5, {3}, dt::float32, {0.5, -1, 3.5}));
  Tensor b = make({1, 0, 1}, {3}, dt::bool_);
  EXPECT_TRUE(check(b + 2.0, {3}, dt::int32, {3, 2, 3}));
  EXPECT_TRUE(check(b + 1.0, {3}, dt::bool_, {1, 1, 1}));  // bool + true is logical or
  Tensor h = make({1.5, -2.25}, {2}, dt::float16);
  EXPECT_TRUE(check(h * 2.0, {2}, dt::float16, {3, -4.5}));
}

void run_scalar_pow(const std::vector<DType>& dts) {
  std::mt19937 rng(kSeed + 900);
  SCOPED_TRACE(seed_trace(kSeed + 900));
  for (DType d : dts) {
    for (double e : {0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -2.5}) {
      SCOPED_TRACE(std::string(d.name()) + " pow " + std::to_string(e));
      Vals a = random_vals(d, 31, rng, 0.1, 8);
      Vals exp(a.size());
      for (size_t i = 0; i < a.size(); ++i) exp[i] = round_to(d, std::pow(a[i], static_cast<LD>(e)));
      EXPECT_TRUE(check(make(a, {31}, d).pow(e), {31}, d, exp, kTrans.for_dtype(d)));
    }
  }
}

TEST(ScalarOverloads, PowWithScalarExponent) {
  run_scalar_pow({dt::float32, dt::float64});
  // negative bases with integer exponents keep the sign; 0^0 = 1; 0^positive = 0
  Vals a = {-2, -3, -1.5, 0, 0, 2};
  Tensor ta = make(a, {6}, dt::float32);
  EXPECT_TRUE(check(ta.pow(3.0), {6}, dt::float32, {-8, -27, -3.375, 0, 0, 8}, {4, 1e-6, 0}));
  EXPECT_TRUE(check(ta.pow(2.0), {6}, dt::float32, {4, 9, 2.25, 0, 0, 4}, {4, 1e-6, 0}));
  EXPECT_TRUE(check(ta.pow(0.0), {6}, dt::float32, {1, 1, 1, 1, 1, 1}));
  Vals nanres = read(make({-2}, {1}, dt::float32).pow(0.5));
  EXPECT_TRUE(std::isnan(nanres[0])) << "(-2)^0.5 = " << fmt(nanres[0]);
}

// ---- casts
// ------------------------------------------------------------------------------------------------------------- Values
// representable in both dtypes (plus fractions when casting float -> int, which truncate toward zero).
TEST(Cast, EveryDtypePairOnRepresentableValues) {
  std::mt19937 rng(kSeed + 1000);
  SCOPED_TRACE(seed_trace(kSeed + 1000));
  for (DType src : all_dtypes())
    for (DType dst : all_dtypes()) {
      SCOPED_TRACE(std::string(src.name()) + " -> " + dst.name());
      bool nonneg = src.is_unsigned() || dst.is_unsigned() || src.is_bool() || dst.is_bool();
      Vals a = random_vals(src, 41, rng, nonneg ? 0 : -100, 100.9);
      if (src.is_float() && dst.is_bool())
        for (size_t i = 0; i < a.size(); i += 4) a[i] = 0;
      Vals exp(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        exp[i] = dst.is_bool() ? LD(a[i] != 0) : round_to(dst, dst.is_float() ? a[i] : std::trunc(a[i]));
      Tol tol = src == dt::float64 && dst.itemsize() == 2 && dst.is_float() ? Tol{1, 0, 0} : Tol{};
      EXPECT_TRUE(check(make(a, {41}, src).cast(dst), {41}, dst, exp, tol));
    }
}

TEST(Cast, IntegersToNarrowerIntegersWrap) {
  std::mt19937_64 rng(kSeed + 1100);
  SCOPED_TRACE(seed_trace(kSeed + 1100));
  for (DType src : all_dtypes())
    for (DType dst : all_dtypes()) {
      if (!src.is_int() || !dst.is_int()) continue;
      SCOPED_TRACE(std::string(src.name()) + " -> " + dst.name());
      Vals a = random_bits(src, 50, rng);
      Vals exp(a.size());
      for (size_t i = 0; i < a.size(); ++i) exp[i] = wrap_bits(dst, to_bits64(a[i]));
      EXPECT_TRUE(check(make(a, {50}, src).cast(dst), {50}, dst, exp));
    }
}

TEST(Cast, FullRangeIntegersToFloatsRoundToNearest) {
  std::mt19937_64 rng(kSeed + 1200);
  SCOPED_TRACE(seed_trace(kSeed + 1200));
  for (DType src : all_dtypes())
    for (DType dst : {dt::float16, dt::bfloat16, dt::float32, dt::float64}) {
      if (!src.is_int()) continue;
      SCOPED_TRACE(std::string(src.name()) + " -> " + dst.name());
      Vals a = random_bits(src, 64, rng);
      a[0] = wrap_bits(src, ~uint64_t{0}), a[1] = wrap_bits(src, uint64_t{1} << (src.itemsize() * 8 - 1));
      Vals exp(a.size());
      // ints up to 64 bits go to float first only for 16-bit targets (the host helpers take float)
      for (size_t i = 0; i < a.size(); ++i) exp[i] = round_to(dst, a[i]);
      Tol tol = dst.itemsize() == 2 && src.itemsize() >= 4 ? Tol{1, 0, 0} : Tol{};
      EXPECT_TRUE(check(make(a, {64}, src).cast(dst), {64}, dst, exp, tol));
    }
}

// ---- bitcast
// -----------------------------------------------------------------------------------------------------------
TEST(Bitcast, ReinterpretsBytes) {
  std::mt19937 rng(kSeed + 1300);
  SCOPED_TRACE(seed_trace(kSeed + 1300));
  const std::vector<std::pair<DType, DType>> pairs = {
      {dt::float32, dt::int32}, {dt::int32, dt::float32},  {dt::float32, dt::uint32},   {dt::uint32, dt::int32},
      {dt::float16, dt::int16}, {dt::uint16, dt::float16}, {dt::float16, dt::bfloat16}, {dt::bfloat16, dt::uint16},
      {dt::float64, dt::int64}, {dt::uint64, dt::float64}, {dt::int64, dt::uint64},     {dt::int8, dt::uint8},
      {dt::uint8, dt::int8}};
  for (auto [src, dst] : pairs) {
    for (const Shape& s : std::vector<Shape>{{37}, {3, 5}, {0}}) {
      SCOPED_TRACE(std::string(src.name()) + " -> " + dst.name() + " " + tg::shape_str(s));
      size_t n = static_cast<size_t>(numel_of(s)) * src.itemsize();
      std::vector<uint8_t> bytes(n);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      Tensor t = Tensor::from_bytes(bytes.data(), n, s, src).bitcast(dst);
      ASSERT_EQ(t.dtype(), dst);
      ASSERT_EQ(t.shape(), s);
      std::vector<uint8_t> got(n);
      t.copy_out(got.data(), n);
      for (size_t i = 0; i < n; ++i)
        if (got[i] != bytes[i]) {
          ADD_FAILURE() << "byte " << i << " got " << int(got[i]) << " expected " << int(bytes[i]);
          break;
        }
    }
  }
  // a computed value bitcast: 1.0f is 0x3f800000
  EXPECT_TRUE(
      check((make({0.5, 2}, {2}, dt::float32) * 2.0).bitcast(dt::int32), {2}, dt::int32, {0x3f800000, 0x40800000}));
}

}  // namespace
