// The op battery: every op x dtype the renderer claims (caps.ops per dtype), each at one lane and at every vector
// width claimed for its dtypes, checked element by element against reference.cpp; CAST and BITCAST for every
// pair of claimed dtypes; and vector lane shuffles (GEP + VECTORIZE) per dtype.
//
// One kernel per case, run as a single work-item: for each width w, a RANGE loop loads w lanes of each operand at
// r*w, applies the op, and stores to its own region of the output. Inputs are deterministic per case (seeded by
// the case's name), start with the edge values of the dtype and avoid only what the core itself guards (division
// by zero, INT_MIN / -1, shift counts past the width, float -> int casts out of range).
#include "harness.hpp"
#include "reference.hpp"

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

namespace tg::conformance {
namespace {

constexpr uint32_t kElems = 64;  // elements per width region: a multiple of every power-of-two width up to 64

using sdk::dtype_name;
using sdk::is_float;
using sdk::is_signed_int;
using sdk::is_unsigned_int;
using sdk::op_name;

struct OpCase {
  uint32_t op, src, dst;  // src: the operands' dtype (for WHERE, operands 1 and 2); dst: the result's
};

uint32_t arity(uint32_t op) {
  if (op == TG_KIR_LUT16) return 5;
  if (op == TG_KIR_WHERE || op == TG_KIR_MULACC || op == TG_KIR_FMA || op == TG_KIR_DOT4) return 3;
  return op >= TG_KIR_ADD ? 2 : 1;
}
bool is_cmp(uint32_t op) { return op == TG_KIR_CMPLT || op == TG_KIR_CMPNE || op == TG_KIR_CMPEQ; }

std::string case_name(const OpCase& c) {
  if (c.op == TG_KIR_CAST || c.op == TG_KIR_BITCAST)
    return cat("ops.", op_name(c.op), ".", dtype_name(c.src), "_to_", dtype_name(c.dst));
  return cat("ops.", op_name(c.op), ".", dtype_name(c.src));
}

// "ops.CAST.int32_to_float32" -> "conf_CAST_int32_to_float32": the kernel's name, a C identifier.
std::string identifier(const std::string& name) {
  std::string out = "conf_" + name.substr(name.find('.') + 1);
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return out;
}

uint64_t seed_of(const std::string& name) {  // FNV-1a: the same inputs on every run and every plugin
  uint64_t h = 1469598103934665603ull;
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

// ---- inputs ------------------------------------------------------------------------------------------------------

struct Inputs {
  std::vector<uint64_t> a, b, c, d, e,
      cond;  // element bits (d, e: LUT16's last table words); cond is WHERE's bool operand
};

// The edge values of an integer dtype: 0, 1, -1 (all ones), the signed minimum and maximum, and a few more.
std::vector<uint64_t> int_specials(uint32_t dtype) {
  const uint32_t bits = 8 * tg_dtype_size(dtype);
  const uint64_t top = uint64_t{1} << (bits - 1);
  return {0, 1, truncate_bits(dtype, ~uint64_t{0}), top, top - 1, 2, truncate_bits(dtype, 0x5555555555555555ull), 3};
}

class InputMaker {
 public:
  InputMaker(const OpCase& c, uint64_t seed) : c_(c), rng_(seed) {}

  Inputs make() {
    Inputs in;
    in.a = operand(0);
    if (c_.op == TG_KIR_WHERE) {
      for (uint32_t i = 0; i < kElems; ++i) in.cond.push_back(rng_() & 1);
      in.a = operand(1), in.b = operand(2);
      return in;
    }
    if (arity(c_.op) >= 2) in.b = operand(1);
    if (arity(c_.op) >= 3) in.c = operand(2);
    if (arity(c_.op) >= 5) in.d = operand(3), in.e = operand(4);
    if (!is_float(c_.src) && c_.src != TG_DTYPE_BOOL) fix_int_divisors(in);
    return in;
  }

 private:
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  uint64_t f(double v) { return from_double(c_.src, v); }

  std::vector<uint64_t> operand(uint32_t which) {
    std::vector<uint64_t> out(kElems);
    const uint32_t d = c_.src;
    if (d == TG_DTYPE_BOOL) {
      for (uint64_t& x : out) x = rng_() & 1;
      return out;
    }
    if (!is_float(d) || c_.op == TG_KIR_BITCAST) {  // integers, and any bits at all for a BITCAST
      const std::vector<uint64_t> specials = int_specials(d);
      for (uint32_t i = 0; i < kElems; ++i)
        out[i] = i < 16 && !is_float(d) ? specials[(i * (2 * which + 1) + which) % specials.size()]
                                        : truncate_bits(d, rng_());
      return out;
    }
    const double inf = INFINITY, nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> specials;
    double lo = -100, hi = 100;
    bool log_scale = false;
    switch (c_.op) {
      case TG_KIR_EXP2: specials = {0, -0.0, 1, -1, inf, -inf, nan, 0.5, 10.5, -10.5}, lo = -20, hi = 20; break;
      case TG_KIR_LOG2: specials = {1, 2, 0.5, 0, -1, inf, nan, 3}, lo = -20, hi = 20, log_scale = true; break;
      case TG_KIR_SIN: specials = {0, -0.0, 1, -1, 3.14159265358979, inf, nan}, lo = -10, hi = 10; break;
      case TG_KIR_SQRT: specials = {0, -0.0, 1, 4, 2, -1, inf, nan}, lo = -20, hi = 20, log_scale = true; break;
      case TG_KIR_RECIP: specials = {0, -0.0, 1, -1, 3, inf, -inf, nan}; break;
      case TG_KIR_TRUNC: specials = {0.5, -0.5, 1.5, -1.5, inf, -inf, nan, -0.0}; break;
      case TG_KIR_CAST: cast_range(&specials, &lo, &hi); break;
      default:
        // Binary ops see NaN, inf and zeros against each other and against ordinary values (0/0, inf-inf, ...).
        specials = which == 0 ? std::vector<double>{nan, 1, nan, inf, -inf, 0, -0.0, 2.5, 0, 1e30, -3, 7}
                              : std::vector<double>{1, nan, nan, -inf, inf, 0, 0, 2.5, -0.0, 1e30, -3, 7};
        if (c_.op == TG_KIR_MULACC && which == 2) std::swap(specials[0], specials[3]);
    }
    for (uint32_t i = 0; i < kElems; ++i) {
      const double v = log_scale ? std::exp2(uniform(lo, hi)) : uniform(lo, hi);
      out[i] = f(i < specials.size() ? specials[i] : v);
    }
    return out;
  }

  // Float sources of a CAST: in range for an integer target (truncation of out-of-range floats is undefined),
  // and wide, with edge values, for a float or bool target.
  void cast_range(std::vector<double>* specials, double* lo, double* hi) const {
    const double inf = INFINITY, nan = std::numeric_limits<double>::quiet_NaN();
    if (is_unsigned_int(c_.dst)) {
      *specials = {0, 0.5, 1, 1.99, 127.5, -0.0}, *lo = 0, *hi = 200;
    } else if (is_signed_int(c_.dst)) {
      *specials = {0, -0.5, 0.5, -1.5, 99.9, -99.9, -0.0}, *lo = -100, *hi = 100;
    } else {
      *specials = {0, -0.0, inf, -inf, nan, 1e-7, 65504, 65520, 70000, 3.4e38, 1e-40, 1e300, -1e-300, 1.0 / 3};
      *lo = -1e5, *hi = 1e5;
    }
  }

  // Division by zero and INT_MIN / -1 are guarded by the core; shift counts stay below the width.
  void fix_int_divisors(Inputs& in) {
    const uint32_t bits = 8 * tg_dtype_size(c_.src);
    const uint64_t min = truncate_bits(c_.src, uint64_t{1} << (bits - 1)), minus_one = truncate_bits(c_.src, ~0ull);
    for (uint32_t i = 0; i < kElems; ++i) {
      if (c_.op == TG_KIR_SHL || c_.op == TG_KIR_SHR) in.b[i] = i < 4 ? (i == 0 ? 0 : bits - i) : rng_() % bits;
      if (c_.op != TG_KIR_IDIV && c_.op != TG_KIR_MOD) continue;
      if (in.b[i] == 0) in.b[i] = 3;
      if (is_signed_int(c_.src) && in.a[i] == min && in.b[i] == minus_one) in.b[i] = 2;
    }
  }

  OpCase c_;
  std::mt19937_64 rng_;
};

std::vector<unsigned char> to_bytes(uint32_t dtype, const std::vector<uint64_t>& elems) {
  const uint32_t size = tg_dtype_size(dtype);
  std::vector<unsigned char> out(elems.size() * size);
  for (size_t i = 0; i < elems.size(); ++i) std::memcpy(out.data() + i * size, &elems[i], size);
  return out;
}

uint64_t element(const std::vector<unsigned char>& bytes, uint32_t dtype, size_t i) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + i * tg_dtype_size(dtype), tg_dtype_size(dtype));
  return v;
}

// ---- the case runner -------------------------------------------------------------------------------------------

// Index arithmetic in every battery kernel is int32 ADD and MUL.
void require_index_math() {
  const Session& s = session();
  if (!s.claims_op(TG_DTYPE_INT32, TG_KIR_ADD) || !s.claims_op(TG_DTYPE_INT32, TG_KIR_MUL))
    throw Skip("the renderer does not claim int32 ADD and MUL, which the battery's index arithmetic uses");
}

// Widths to test: one lane, and every vector width claimed for all dtypes the kernel loads or stores.
std::vector<uint32_t> widths_for(const OpCase& c) {
  const Session& s = session();
  std::vector<uint32_t> out{1};
  for (uint32_t w = 2; w < 32 && w <= kElems; ++w)
    if (s.claims_width(c.src, w) && s.claims_width(c.dst, w)) out.push_back(w);
  return out;
}

void run_case(const OpCase& c) {
  require_index_math();
  const Session& s = session();
  const std::string name = case_name(c);
  const std::vector<uint32_t> widths = widths_for(c);
  Inputs in = InputMaker(c, seed_of(name)).make();
  const bool where = c.op == TG_KIR_WHERE;

  Kir k;
  const int out = k.buffer(c.dst, true), pa = k.buffer(c.src);
  const int pb = in.b.empty() ? -1 : k.buffer(c.src), pc = in.c.empty() ? -1 : k.buffer(c.src);
  const int pd = in.d.empty() ? -1 : k.buffer(c.src), pe = in.e.empty() ? -1 : k.buffer(c.src);
  const int pcond = where ? k.buffer(TG_DTYPE_BOOL) : -1;
  for (uint32_t wi = 0; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(kElems / w)}, 1, wi);
    const int in_idx = w == 1 ? r : k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {r, k.i32(w)});
    const int out_idx = wi == 0 ? in_idx : k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {in_idx, k.i32(wi * kElems)});
    std::vector<int> srcs;
    // WHERE's condition is a bool vector where bool claims the width, else one bool for all lanes.
    if (where) srcs.push_back(k.load(TG_DTYPE_BOOL, pcond, in_idx, s.claims_width(TG_DTYPE_BOOL, w) ? w : 1));
    srcs.push_back(k.load(c.src, pa, in_idx, w));
    if (pb >= 0) srcs.push_back(k.load(c.src, pb, in_idx, w));
    if (pc >= 0) srcs.push_back(k.load(c.src, pc, in_idx, w));
    if (pd >= 0) srcs.push_back(k.load(c.src, pd, in_idx, w)), srcs.push_back(k.load(c.src, pe, in_idx, w));
    k.store(out, out_idx, k.alu(static_cast<tg_kir_op>(c.op), c.dst, srcs, w));
    k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  }
  Kernel kernel(k, identifier(name));

  const uint32_t dst_size = tg_dtype_size(c.dst);
  Buffer bout(std::vector<unsigned char>(widths.size() * kElems * dst_size, 0xCD));
  Buffer ba(to_bytes(c.src, in.a));
  std::vector<uint64_t> args{bout.addr(), ba.addr()};
  std::unique_ptr<Buffer> bb, bc, bd, be, bcond;
  if (pb >= 0) args.push_back((bb = std::make_unique<Buffer>(to_bytes(c.src, in.b)))->addr());
  if (pc >= 0) args.push_back((bc = std::make_unique<Buffer>(to_bytes(c.src, in.c)))->addr());
  if (pd >= 0) args.push_back((bd = std::make_unique<Buffer>(to_bytes(c.src, in.d)))->addr());
  if (pe >= 0) args.push_back((be = std::make_unique<Buffer>(to_bytes(c.src, in.e)))->addr());
  if (where) args.push_back((bcond = std::make_unique<Buffer>(to_bytes(TG_DTYPE_BOOL, in.cond)))->addr());
  kernel.launch(args);
  const std::vector<unsigned char> got = bout.read();

  std::string report;
  size_t wrong = 0;
  for (uint32_t wi = 0; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    const bool vector_cond = s.claims_width(TG_DTYPE_BOOL, w);
    for (uint32_t i = 0; i < kElems / w * w; ++i) {
      uint64_t srcs[5] = {};
      if (where) {
        srcs[0] = in.cond[w == 1 || vector_cond ? i : i / w * w], srcs[1] = in.a[i], srcs[2] = in.b[i];
      } else {
        srcs[0] = in.a[i], srcs[1] = in.b.empty() ? 0 : in.b[i], srcs[2] = in.c.empty() ? 0 : in.c[i];
        srcs[3] = in.d.empty() ? 0 : in.d[i], srcs[4] = in.e.empty() ? 0 : in.e[i];
      }
      const uint64_t result = element(got, c.dst, wi * kElems + i);
      if (acceptable(c.op, c.src, c.dst, srcs, result)) continue;
      if (++wrong > 8) continue;
      std::string operands;
      for (uint32_t j = 0; j < arity(c.op); ++j)
        operands += cat(j ? ", " : "", show(where && j == 0 ? uint32_t{TG_DTYPE_BOOL} : c.src, srcs[j]));
      report += cat("  ", w == 1 ? std::string("scalar") : cat(w, " lanes"), ", element ", i, ": ", op_name(c.op), "(",
                    operands, ") gave ", show(c.dst, result), ", expected ",
                    show(c.dst, evaluate(c.op, c.src, c.dst, srcs)), "\n");
    }
  }
  if (wrong == 0) return;
  std::string tested;
  for (uint32_t w : widths) tested += cat(tested.empty() ? "" : ", ", w);
  kernel.fail(cat(wrote_nothing(got, 0xCD), wrong, " wrong ", op_name(c.op), " results (", dtype_name(c.src), " -> ",
                  dtype_name(c.dst), ", rule: ", rule_of(c.op, c.src, c.dst), "; lane counts tested: ", tested,
                  ") after hwqueue_exec; the first ones:\n", report));
}

// GEP and VECTORIZE at every claimed width: load w lanes, store them reversed.
void run_lane_shuffle(uint32_t dtype) {
  require_index_math();
  const OpCase c{TG_KIR_GEP, dtype, dtype};
  const std::vector<uint32_t> widths = widths_for(c);
  Kir k;
  const int out = k.buffer(dtype, true), pa = k.buffer(dtype);
  for (uint32_t wi = 1; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(kElems / w)}, 1, wi);
    const int in_idx = k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {r, k.i32(w)});
    const int v = k.load(dtype, pa, in_idx, w);
    std::vector<int> lanes;
    for (uint32_t lane = 0; lane < w; ++lane) lanes.push_back(k.op(TG_KIR_GEP, dtype, {v}, 1, w - 1 - lane));
    k.store(out, k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {in_idx, k.i32(wi * kElems)}),
            k.op(TG_KIR_VECTORIZE, dtype, lanes, w));
    k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  }
  Kernel kernel(k, cat("conf_lanes_", dtype_name(dtype)));
  std::mt19937_64 rng(seed_of(dtype_name(dtype)));
  std::vector<uint64_t> a(kElems);
  for (uint64_t& x : a) x = dtype == TG_DTYPE_BOOL ? rng() & 1 : truncate_bits(dtype, rng());
  const uint32_t size = tg_dtype_size(dtype);
  Buffer bout(std::vector<unsigned char>(widths.size() * kElems * size, 0xCD)), ba(to_bytes(dtype, a));
  kernel.launch({bout.addr(), ba.addr()});
  const std::vector<unsigned char> got = bout.read();
  for (uint32_t wi = 1; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    for (uint32_t i = 0; i < kElems / w * w; ++i) {
      const uint64_t want = a[i / w * w + (w - 1 - i % w)], result = element(got, dtype, wi * kElems + i);
      if (result != want)
        kernel.fail(cat(w, " lanes reversed with GEP + VECTORIZE: element ", i, " is ", show(dtype, result),
                        ", expected ", show(dtype, want), " (bits compared)"));
    }
  }
}

// Packed loads (ABI 1.3) at every claimed width: `w` values of `dtype` read from uint8 memory at odd byte offsets,
// stored to a typed buffer, compared with the bytes they were read from.
void run_packed_load(uint32_t dtype) {
  require_index_math();
  const OpCase c{TG_KIR_LOAD, dtype, dtype};
  const std::vector<uint32_t> widths = widths_for(c);
  const uint32_t size = tg_dtype_size(dtype);
  Kir k;
  const int out = k.buffer(dtype, true), bytes = k.buffer(TG_DTYPE_UINT8);
  for (uint32_t wi = 0; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(kElems / w)}, 1, wi);
    const int value_idx = k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {r, k.i32(w)});
    const int byte_idx = k.alu(TG_KIR_ADD, TG_DTYPE_INT32,
                               {k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {value_idx, k.i32(size)}), k.i32(2 * wi + 1)});
    k.store(out, k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {value_idx, k.i32(wi * kElems)}), k.load(dtype, bytes, byte_idx, w));
    k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  }
  Kernel kernel(k, cat("conf_packed_", dtype_name(dtype)));
  std::mt19937_64 rng(seed_of(cat("packed_", dtype_name(dtype))));
  std::vector<unsigned char> src(kElems * size + 2 * widths.size() + 8);
  for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
  Buffer bout(std::vector<unsigned char>(widths.size() * kElems * size, 0xCD)), bin(src);
  kernel.launch({bout.addr(), bin.addr()});
  const std::vector<unsigned char> got = bout.read();
  for (uint32_t wi = 0; wi < widths.size(); ++wi) {
    const uint32_t w = widths[wi];
    for (uint32_t i = 0; i < kElems / w * w; ++i) {
      uint64_t want = 0;
      std::memcpy(&want, src.data() + i * size + 2 * wi + 1, size);  // little-endian host, as the ABI
      const uint64_t result = element(got, dtype, wi * kElems + i);
      if (result != want)
        kernel.fail(cat(w == 1 ? std::string("a scalar") : cat(w, " lanes"), " packed load of ", dtype_name(dtype),
                        " at byte ", i * size + 2 * wi + 1, ": value ", i, " is ", show(dtype, result),
                        ", its bytes say ", show(dtype, want)));
    }
  }
}

}  // namespace

void add_op_tests(Tests& tests) {
  const Session* s = nullptr;
  try {
    s = &session();
  } catch (const std::runtime_error&) {                               // Failure, or Skip when there is no device
    tests.push_back({"ops.session", Tier::Core, [] { session(); }});  // reports why the session did not open
    return;
  }
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    if (!s->claims_dtype(d)) continue;
    for (uint32_t op = TG_KIR_NEG; op < TG_KIR_OP_COUNT; ++op) {
      if (!s->claims_op(d, op) || op == TG_KIR_TILE_MMA) continue;  // a statement: control_tests.cpp checks it
      if (op == TG_KIR_CAST || op == TG_KIR_BITCAST) {
        // To every other claimed dtype (BITCAST: of the same size; bool has no bit pattern to reinterpret).
        for (uint32_t to = 0; to < TG_DTYPE_COUNT; ++to) {
          if (to == d || !s->claims_dtype(to)) continue;
          if (op == TG_KIR_BITCAST &&
              (tg_dtype_size(to) != tg_dtype_size(d) || to == TG_DTYPE_BOOL || d == TG_DTYPE_BOOL))
            continue;
          const OpCase c{op, d, to};
          tests.push_back({case_name(c), Tier::Core, [c] { run_case(c); }});
        }
        continue;
      }
      const OpCase c{op, d, is_cmp(op) ? uint32_t{TG_DTYPE_BOOL} : d};
      if (!has_reference(op, d)) {
        tests.push_back({case_name(c), Tier::Core, [c] {
                           throw Skip(cat("the renderer claims ", op_name(c.op), " on ", dtype_name(c.src),
                                          ", which KIR does not define"));
                         }});
        continue;
      }
      tests.push_back({case_name(c), Tier::Core, [c] { run_case(c); }});
    }
    if (s->caps.vector_widths[d] & ~3u) {
      tests.push_back({cat("vectors.gep_vectorize.", dtype_name(d)), Tier::Core, [d] { run_lane_shuffle(d); }});
    }
    if (TG_ABI_HAS(&s->caps, tg_renderer_caps, packed_loads) && (s->caps.packed_loads >> d & 1u))
      tests.push_back({cat("memory.packed_load.", dtype_name(d)), Tier::Core, [d] { run_packed_load(d); }});
  }
}

}  // namespace tg::conformance
