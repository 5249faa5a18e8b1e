// Decompositions of unsupported ops, chosen per renderer from its capability table.
#include "codegen/decompositions.hpp"

#include "codegen/lanes.hpp"
#include "codegen/transcendental.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

bool is_half(DType d) { return d.scalar == ScalarType::Float16 || d.scalar == ScalarType::BFloat16; }

// DOT4 on int32: each byte of a zero-extended (shift, mask), each byte of b sign-extended (shift it to the top,
// shift back arithmetically), four products added to the accumulator. Shifts by constants only.
UOpPtr dot4_from_bytes(const UOpPtr& acc, const UOpPtr& a, const UOpPtr& b) {
  DType d = acc->dtype;
  UOpPtr sum = acc;
  for (int64_t i = 0; i < 4; ++i) {
    UOpPtr ua = alu(Op::AND, alu(Op::SHR, a, const_int(d, 8 * i)), const_int(d, 255));
    UOpPtr sb = alu(Op::SHR, alu(Op::SHL, b, const_int(d, 24 - 8 * i)), const_int(d, 24));
    sum = alu(Op::ADD, sum, alu(Op::MUL, ua, sb));
  }
  return sum;
}

// LUT16 on int32: per byte, its low nibble n picks the table word n / 4 (two levels of selects) and its byte n % 4
// (a shift by a variable amount below the width), ORed into place.
UOpPtr lut16_from_selects(const UOp& u) {
  DType d = u.dtype;
  const UOpPtr& idx = u.src[0];
  UOpPtr out;
  for (int64_t i = 0; i < 4; ++i) {
    UOpPtr n = alu(Op::AND, alu(Op::SHR, idx, const_int(d, 8 * i)), const_int(d, 15));
    UOpPtr lo = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 4)), u.src[1], u.src[2]);
    UOpPtr hi = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 12)), u.src[3], u.src[4]);
    UOpPtr word = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 8)), lo, hi);
    UOpPtr entry = alu(Op::AND, alu(Op::SHR, word, alu(Op::SHL, alu(Op::AND, n, const_int(d, 3)), const_int(d, 3))),
                       const_int(d, 255));
    UOpPtr placed = alu(Op::SHL, entry, const_int(d, 8 * i));
    out = out ? alu(Op::OR, out, placed) : placed;
  }
  return out;
}

// TILE_MMA (plugin_abi.h has the layouts): the loops it means, C[m][n] = (C[m][n] +) the sum over k of
// A[m][k] * B[k][n] in C's dtype. The loops' range ids lie above any a kernel numbers (a kernel's own count from 0);
// two such statements reuse them, one after the other, never nested.
UOpPtr tile_mma_loops(const UOp& u) {
  constexpr int64_t kFirstId = int64_t{1} << 40;
  const DType i64 = dtypes::int64, c = u.dtype, ab = u.src[3]->dtype;
  const int64_t bits = u.arg_int(), isz = static_cast<int64_t>(ab.itemsize());
  const int64_t step = 64 / isz, group = 4 / isz,
                slab_step = 1024 / isz;  // elements: a step's, a group's, a step's slab
  auto num = [&](int64_t v) { return const_int(i64, v); };
  auto at = [&](int j) { return cast(u.src[j], i64); };
  auto range = [&](const UOpPtr& end, int64_t id, AxisType t) {
    return UOp::make(Op::RANGE, i64, {end}, RangeInfo{kFirstId + id, t});
  };
  const UOpPtr m = range(num(16 * (bits & 15)), 0, AxisType::LOOP),
               n = range(num(16 * ((bits >> 4) & 15)), 1, AxisType::LOOP);
  const UOpPtr k = range(alu(Op::MUL, at(9), num(step)), 2, AxisType::REDUCE);
  auto div = [&](const UOpPtr& x, int64_t d) { return alu(Op::IDIV, x, num(d)); };
  auto mod = [&](const UOpPtr& x, int64_t d) { return alu(Op::MOD, x, num(d)); };
  auto sum = [](std::vector<UOpPtr> xs) {
    UOpPtr out = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) out = alu(Op::ADD, out, xs[i]);
    return out;
  };
  auto mul = [&](const UOpPtr& x, const UOpPtr& y) { return alu(Op::MUL, x, y); };
  const UOpPtr ks = mul(div(k, step), num(slab_step)), kk = mod(k, step);
  const UOpPtr a = sum({at(4), mul(div(m, 16), at(5)), ks, mul(mod(m, 16), num(step)), kk});
  const UOpPtr b = sum(
      {at(7), mul(div(n, 16), at(8)), ks, mul(div(kk, group), num(step)), mul(mod(n, 16), num(group)), mod(kk, group)});
  const UOpPtr product =
      mul(cast(UOp::make(Op::LOAD, ab, {u.src[3], a}), c), cast(UOp::make(Op::LOAD, ab, {u.src[6], b}), c));
  UOpPtr value = UOp::make(Op::REDUCE, c, {product, k}, static_cast<int64_t>(ReduceOp::SUM));
  const UOpPtr ci = sum({at(1), mul(m, at(2)), n});
  if (bits & 256) value = alu(Op::ADD, UOp::make(Op::LOAD, c, {u.src[0], ci}), value);
  return UOp::make(Op::END, dtypes::bool_, {UOp::make(Op::STORE, c, {u.src[0], ci, value}), m, n}, int64_t{1});
}

}  // namespace

namespace {

// The dtype an op computes in (a comparison's is its operands').
DType math_dtype(const UOp& u) { return is_comparison(u.op) ? u.src[0]->dtype : u.dtype; }

// 16-bit floats: computed in float32, rounded once per op back to the 16-bit type (as native half math rounds).
UOpPtr in_float32(const Match&, const UOpPtr& u) {
  const DType d = math_dtype(*u);
  std::vector<UOpPtr> src;
  for (const auto& s : u->src) src.push_back(s->dtype == d ? cast(s, dtypes::float32) : s);
  UOpPtr r = UOp::make(u->op, is_comparison(u->op) ? u->dtype : dtypes::float32, std::move(src), u->arg);
  return is_comparison(u->op) ? r : cast(r, u->dtype);
}

bool float_math(const UOp& u) { return math_dtype(u).is_float(); }
bool int_math(const UOp& u) { return !math_dtype(u).is_float(); }

}  // namespace

const PatternMatcher& pm_decompositions() {
  using namespace pat;
  using M = const Match&;
  using U = const UOpPtr&;
  static const PatternMatcher pm(
      "decompositions",
      {
          {any("x").where(
               [](const UOp& u) { return is_half(math_dtype(u)) && u.op != Op::CAST && u.op != Op::BITCAST; }),
           in_float32, "half_in_float32"},
          {ops({Op::SUB}), [](M, U u) { return alu(Op::ADD, u->src[0], alu(Op::NEG, u->src[1])); }, "sub_as_add_neg"},
          {ops({Op::NEG}).where(float_math),
           [](M, U u) { return alu(Op::MUL, u->src[0], const_like(u->src[0], -1.0)); }, "neg_float"},
          {ops({Op::NEG}).where(int_math),
           [](M, U u) { return alu(Op::MUL, u->src[0], const_int(u->src[0]->dtype, -1)); }, "neg_int"},
          {ops({Op::RECIP}), [](M, U u) { return alu(Op::FDIV, const_like(u->src[0], 1.0), u->src[0]); },
           "recip_as_div"},
          // MULACC, and a custom kernel's FMA: a product and a sum (two roundings)
          {ops({Op::MULACC, Op::FMA}),
           [](M, U u) { return alu(Op::ADD, alu(Op::MUL, u->src[0], u->src[1]), u->src[2]); }, "mul_add"},
          {ops({Op::DOT4}), [](M, U u) { return dot4_from_bytes(u->src[0], u->src[1], u->src[2]); }, "dot4_from_bytes"},
          {ops({Op::LUT16}), [](M, U u) { return lut16_from_selects(*u); }, "lut16_from_selects"},
          {ops({Op::TILE_MMA}), [](M, U u) { return tile_mma_loops(*u); }, "tile_mma_loops"},
          // an integer MAX as a select (a float MAX keeps NaN semantics only whole: no rule)
          {ops({Op::MAX}).where(int_math),
           [](M, U u) { return alu(Op::WHERE, alu(Op::CMPLT, u->src[0], u->src[1]), u->src[1], u->src[0]); },
           "max_int"},
          {ops({Op::EXP2}).where(float_math), [](M, U u) { return xexp2(u->src[0]); }, "exp2_polynomial"},
          {ops({Op::LOG2}).where(float_math), [](M, U u) { return xlog2(u->src[0]); }, "log2_polynomial"},
          {ops({Op::SIN}).where(float_math), [](M, U u) { return xsin(u->src[0]); }, "sin_polynomial"},
      });
  return pm;
}

UOpPtr decompose(const UOpPtr& u) { return pm_decompositions().rewrite(u); }

PatternMatcher pm_decompositions_for(const tg_renderer_caps& caps) {
  auto unsupported = [caps](const UOp& u) {  // (a copy: the set may outlive the caller's caps)
    return (is_alu(u.op) || u.op == Op::TILE_MMA) &&
           !e_supports(caps, u.op, u.op == Op::TILE_MMA ? u.dtype : op_dtype(u));
  };
  return PatternMatcher("decompositions_by_caps",
                        {{pat::any("x").where(unsupported), [](const Match&, const UOpPtr& u) { return decompose(u); },
                          "where_the_caps_leave_it_out"}});
}

UOpPtr packed_load_from_bytes(const UOpPtr& load) {
  const int n = load->dtype.itemsize();
  const DType word = n == 2 ? dtypes::uint16 : n == 4 ? dtypes::uint32 : dtypes::uint64;
  UOpPtr v;
  for (int i = 0; i < n; ++i) {
    std::vector<UOpPtr> src{load->src[0],
                            i == 0 ? load->src[1] : alu(Op::ADD, load->src[1], const_int(load->src[1]->dtype, i))};
    if (load->src.size() > 2) src.push_back(load->src[2]);  // a gated byte reads 0, like the gated word
    UOpPtr byte = cast(UOp::make(Op::LOAD, load->src[0]->dtype, std::move(src)), word);
    v = i == 0 ? byte : alu(Op::OR, v, alu(Op::SHL, byte, const_int(word, 8 * i)));
  }
  return load->dtype == word ? v : UOp::make(Op::BITCAST, load->dtype, {v});
}

}  // namespace tg::codegen
