// The free functions the Emitter (emitter.hpp) and the planners share: UOp ops and dtypes as KIR's, and the checks
// that decide whether the lanes of an upcast axis (lane l: the axis index replaced by base + l) become one vector
// instruction: consecutive indices, isomorphic graphs, vectorizable values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/decompositions.hpp"
#include "codegen/kir.hpp"
#include "ir/symbolic.hpp"
#include "ir/uop.hpp"
#include "tg/error.hpp"

namespace tg::codegen {

using ir::Op;
using ir::ReduceOp;
using ir::UOp;
using ir::UOpPtr;

inline tg_kir_op kir_op(Op op) {
  switch (op) {
    case Op::NEG: return TG_KIR_NEG;
    case Op::EXP2: return TG_KIR_EXP2;
    case Op::LOG2: return TG_KIR_LOG2;
    case Op::SIN: return TG_KIR_SIN;
    case Op::SQRT: return TG_KIR_SQRT;
    case Op::RECIP: return TG_KIR_RECIP;
    case Op::TRUNC: return TG_KIR_TRUNC;
    case Op::CAST: return TG_KIR_CAST;
    case Op::BITCAST: return TG_KIR_BITCAST;
    case Op::ADD: return TG_KIR_ADD;
    case Op::SUB: return TG_KIR_SUB;
    case Op::MUL: return TG_KIR_MUL;
    case Op::IDIV: return TG_KIR_IDIV;
    case Op::MOD: return TG_KIR_MOD;
    case Op::FDIV: return TG_KIR_FDIV;
    case Op::MAX: return TG_KIR_MAX;
    case Op::CMPLT: return TG_KIR_CMPLT;
    case Op::CMPNE: return TG_KIR_CMPNE;
    case Op::CMPEQ: return TG_KIR_CMPEQ;
    case Op::AND: return TG_KIR_AND;
    case Op::OR: return TG_KIR_OR;
    case Op::XOR: return TG_KIR_XOR;
    case Op::SHL: return TG_KIR_SHL;
    case Op::SHR: return TG_KIR_SHR;
    case Op::WHERE: return TG_KIR_WHERE;
    case Op::MULACC: return TG_KIR_MULACC;
    case Op::FMA: return TG_KIR_FMA;
    case Op::DOT4: return TG_KIR_DOT4;
    case Op::LUT16: return TG_KIR_LUT16;
    case Op::TILE_MMA: return TG_KIR_TILE_MMA;
    default: throw Error(std::string("tg: no KIR op for ") + op_name(op));
  }
}

inline uint8_t dt(DType d) { return static_cast<uint8_t>(d.scalar); }

// a range whose iterations are written out (UPCAST, UNROLL) instead of looped over
inline bool is_unrolled(const UOpPtr& r) {
  return r->op == Op::RANGE && (r->range().type == ir::AxisType::UPCAST || r->range().type == ir::AxisType::UNROLL);
}

// a loop of fixed length (a symbolic dim's loop ends at an expression of variables)
inline bool is_const_end(const UOpPtr& range) { return range->src[0]->op == Op::CONST; }

// The dtype whose op table decides whether the renderer takes an op (comparisons: the operands').
inline DType op_dtype(const UOp& u) {
  if (is_comparison(u.op) || u.op == Op::CAST || u.op == Op::BITCAST) return u.src[0]->dtype;
  return u.dtype;
}

inline bool e_vector_ok(const tg_renderer_caps& caps, DType d, int w) {
  return (caps.dtypes >> dt(d) & 1u) && (caps.vector_widths[dt(d)] >> w & 1u);
}

// The renderer takes `op` on d whole (no decomposition).
inline bool e_supports(const tg_renderer_caps& caps, Op op, DType d) {
  return (caps.dtypes >> dt(d) & 1u) && (caps.ops[dt(d)] >> kir_op(op) & 1ull);
}

// Whether acc (op) v runs on w lanes of d as vector instructions (combine's ops; MIN as -max(-a, -b), so integers
// have none).
inline bool reduce_vector_ok(const tg_renderer_caps& caps, ReduceOp rop, DType d, int w) {
  const Op comb = rop == ReduceOp::SUM ? Op::ADD : Op::MAX;
  return w <= 16 && e_vector_ok(caps, d, w) && e_supports(caps, comb, d) &&
         (rop != ReduceOp::MIN || (d.is_float() && e_supports(caps, Op::NEG, d)));
}

// The loop a REDUCE's lanes unroll along (UNROLL): its innermost, the last RANGE it reduces over; null if none.
inline UOpPtr reduce_loop(const UOp& reduce) {
  for (size_t i = reduce.src.size(); i-- > 1;)
    if (reduce.src[i]->op == Op::RANGE) return reduce.src[i];
  return nullptr;
}

// Whether REDUCE u can keep w lanes of its loop per iteration in one vector accumulator: a fixed length that w
// divides, a vector of w lanes of its dtype within 64 bytes, a combine the renderer takes on it. (The lanes must
// also vectorize: unrolled_lanes's, checked by the caller.)
inline bool unroll_fits(const tg_renderer_caps& caps, const UOp& u, int w) {
  const UOpPtr r = reduce_loop(u);
  return r && is_const_end(r) && r->src[0]->arg_int() % w == 0 && w * u.dtype.itemsize() <= 64 &&
         reduce_vector_ok(caps, static_cast<ReduceOp>(u.arg_int()), u.dtype, w);
}

// The widest vector of accumulators (16, 8 or 4 lanes) every one of these reductions over one loop fits; 0: none.
inline int widest_unroll(const tg_renderer_caps& caps, const std::vector<const UOp*>& reductions) {
  for (int w : {16, 8, 4})
    if (std::all_of(reductions.begin(), reductions.end(), [&](const UOp* u) { return unroll_fits(caps, *u, w); }))
      return w;
  return 0;
}

// REDUCE u's loop unrolled by w: lane l of its value reads the loop's index as outer * w + l, where `outer` is the
// loop that is left (end / w iterations).
struct UnrolledReduce {
  UOpPtr outer;
  std::vector<UOpPtr> lanes;
};
inline UnrolledReduce unrolled_lanes(const UOp& u, int w) {
  const UOpPtr r = reduce_loop(u);
  UnrolledReduce out;
  out.outer = UOp::make(Op::RANGE, r->dtype, {ir::const_int(r->dtype, r->src[0]->arg_int() / w)},
                        ir::RangeInfo{r->range().id, r->range().type});
  for (int l = 0; l < w; ++l)
    out.lanes.push_back(ir::simplify(substitute(
        u.src[0],
        {{r.get(), alu(Op::ADD, alu(Op::MUL, out.outer, ir::const_int(r->dtype, w)), ir::const_int(r->dtype, l))}})));
  return out;
}

// idx[l] == idx[0] + l * stride for every lane
inline bool consecutive_index(const std::vector<UOpPtr>& idx, int64_t stride = 1) {
  for (size_t l = 1; l < idx.size(); ++l) {
    UOpPtr diff = ir::simplify(alu(Op::SUB, idx[l], idx[0]));
    if (diff->op != Op::CONST || diff->arg_int() != static_cast<int64_t>(l) * stride) return false;
  }
  return true;
}

// Index steps between the lanes of a vector load: 1, or a packed load's bytes per value.
inline int64_t lane_stride(const UOp& load) { return is_packed_load(load) ? load.dtype.itemsize() : 1; }

inline bool isomorphic(const std::vector<UOpPtr>& lanes) {
  const UOp& a = *lanes[0];
  for (const auto& l : lanes)
    if (l->op != a.op || l->dtype != a.dtype || l->src.size() != a.src.size() || !(l->arg == a.arg)) return false;
  return true;
}

inline std::vector<UOpPtr> src_lanes(const std::vector<UOpPtr>& lanes, size_t i) {
  std::vector<UOpPtr> out;
  for (const auto& l : lanes) out.push_back(l->src[i]);
  return out;
}

// Lanes that are lane 0, 1, .. w-1 of one vector of w (GEPs): that vector, taken apart.
inline bool is_whole_vector(const std::vector<UOpPtr>& lanes) {
  const UOpPtr& v = lanes[0]->op == Op::GEP ? lanes[0]->src[0] : nullptr;
  if (!v || v->dtype.count != static_cast<int>(lanes.size())) return false;
  for (size_t l = 0; l < lanes.size(); ++l)
    if (lanes[l]->op != Op::GEP || lanes[l]->src[0].get() != v.get() || lanes[l]->arg_int() != static_cast<int64_t>(l))
      return false;
  return true;
}

// Packed loads of d the renderer reads whole (ABI 1.3: an older plugin's caps end before packed_loads, which then
// stays 0); else they are read as bytes (packed_load_from_bytes).
inline bool takes_packed(const tg_renderer_caps& caps, DType d) {
  return TG_ABI_HAS(&caps, tg_renderer_caps, packed_loads) && (caps.packed_loads >> dt(d) & 1u);
}

// The renderer takes vectors of w lanes of d (16 at most: the widest value any renderer holds).
inline bool vector_ok(const tg_renderer_caps& caps, DType d, int w) { return w <= 16 && e_vector_ok(caps, d, w); }

// How many distinct values the lanes hold. A few repeated (a quarter of the lanes or fewer: a sub-block's scale over
// half the lanes) are computed once each as scalars: a vector would do the same work w times.
inline size_t distinct_values(const std::vector<UOpPtr>& lanes) {
  std::vector<const UOp*> v;
  for (const auto& l : lanes) v.push_back(l.get());
  std::sort(v.begin(), v.end());
  return static_cast<size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

// Every lane (LOADs: gate at src[2]; STOREs: at src[3]) has the same gate, or none.
inline bool same_gate(const std::vector<UOpPtr>& lanes, size_t at) {
  auto gate = [at](const UOpPtr& l) { return l->src.size() > at ? l->src[at].get() : nullptr; };
  return std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return gate(l) == gate(lanes[0]); });
}

// Whether two REDUCEs run over the same loops.
inline bool same_loops(const UOp& a, const UOp& b) {
  if (a.src.size() != b.src.size()) return false;
  for (size_t i = 1; i < a.src.size(); ++i)
    if (a.src[i].get() != b.src[i].get()) return false;
  return true;
}

// The nodes `roots` reach that do not depend on `ranges` (the loops a statement or a reduction runs over) and pass
// `want`, in toposort order: what can run once before those loops.
template <class Want>
std::vector<UOpPtr> independent_of(const std::vector<UOpPtr>& roots, const std::vector<UOpPtr>& ranges, Want want) {
  std::unordered_map<const UOp*, bool> varies;
  for (const auto& r : ranges) varies[r.get()] = true;
  std::vector<UOpPtr> out;
  for (const UOp* n : toposort(roots)) {
    bool v = varies.count(n) && varies[n];
    for (const auto& s : n->src) v = v || varies[s.get()];
    varies[n] = v;
    if (!v && want(*n)) out.push_back(n->ptr());
  }
  return out;
}

// Lanes that vectorize cleanly: isomorphic, every load the same in all lanes or contiguous, reductions over the
// same loops. Anything else would be gathered lane by lane, which costs more than the vector saves.
inline bool vectorizable(const std::vector<UOpPtr>& lanes, std::map<const UOp*, bool>& memo) {
  if (std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l.get() == lanes[0].get(); })) return true;
  if (auto it = memo.find(lanes[0].get()); it != memo.end()) return it->second;
  bool ok = isomorphic(lanes) && lanes[0]->op != Op::RANGE;
  if (ok && lanes[0]->op == Op::LOAD) {
    ok = consecutive_index(src_lanes(lanes, 1), lane_stride(*lanes[0])) && same_gate(lanes, 2);
  } else if (ok && lanes[0]->op == Op::REDUCE) {
    ok = std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return same_loops(*l, *lanes[0]); }) &&
         vectorizable(src_lanes(lanes, 0), memo);
  } else {
    for (size_t i = 0; ok && i < lanes[0]->src.size(); ++i) ok = vectorizable(src_lanes(lanes, i), memo);
  }
  return memo[lanes[0].get()] = ok;
}

}  // namespace tg::codegen
