// Lanes at emission (emitter.hpp): a VECTORIZE's lanes through the vectorize rules (expand.hpp: vector ops, ops per
// lane, equal runs, packed loads from bytes), and what the rules leave to the instructions: one value in every lane
// (a broadcast), a few values repeated or unlike lanes (gathered), an op per lane (bools kept as scalars).
#include <algorithm>

#include "codegen/emitter.hpp"

namespace tg::codegen {

using namespace ir;

std::vector<const UOp*> Emitter::key_of(const std::vector<UOpPtr>& lanes) {
  std::vector<const UOp*> key;
  for (const auto& l : lanes) key.push_back(l.get());
  return key;
}

Emitter::Lanes Emitter::emit_lanes(const std::vector<UOpPtr>& lanes) {
  if (std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l.get() == lanes[0].get(); }))
    return {emit(lanes[0]), 1};
  std::vector<const UOp*> key = key_of(lanes);
  for (auto it = vscopes_.rbegin(); it != vscopes_.rend(); ++it)
    if (auto f = it->find(key); f != it->end()) return f->second;
  Lanes out = emit_lanes_uncached(lanes);
  vscopes_.back().emplace(std::move(key), out);
  keep_.insert(keep_.end(), lanes.begin(), lanes.end());
  return out;
}

int32_t Emitter::broadcast(Lanes v, DType d, int w) {
  if (v.id < 0) return k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), bool_lanes_[-v.id - 1]);
  if (v.vcount == w) return v.id;
  return k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), std::vector<int32_t>(w, v.id));
}

int32_t Emitter::lane(Lanes v, DType d, int l) {
  if (v.vcount == 1) return v.id;
  if (v.id < 0) return bool_lanes_[-v.id - 1][l];  // lanes kept as scalars
  return k_.add(TG_KIR_GEP, dt(d), 1, {v.id}, {.i = l});
}

Emitter::Lanes Emitter::emit_lanes_uncached(const std::vector<UOpPtr>& lanes) {
  int w = static_cast<int>(lanes.size());
  const UOpPtr& u0 = lanes[0];
  DType d = u0->dtype;
  if (is_whole_vector(lanes)) {  // lanes 0..w-1 of one vector (a per-lane op's sources): that vector
    const UOpPtr& v = u0->src[0];
    return v->op == Op::VECTORIZE ? emit_lanes(v->src) : Lanes{emit(v), w};
  }
  if (u0->op == Op::RANGE) return gather_lanes(lanes);
  // the vectorize rules (expand.hpp): one vector op, or other lanes (per lane, equal runs, bytes) to emit instead.
  // (Rewritten to their fixpoint, the nodes are the ones the expand step made of the same lanes: none is emitted
  // twice.)
  const UOpPtr all = UOp::make(Op::VECTORIZE, d.vec(w), lanes);
  if (UOpPtr v = vectorized(all); v.get() != all.get())
    return v->op == Op::VECTORIZE ? emit_lanes(v->src) : Lanes{emit(v), w};
  if (distinct_values(lanes) * 4 <= lanes.size() || !isomorphic(lanes) || !is_alu(u0->op)) return gather_lanes(lanes);
  if (!supports(u0->op, op_dtype(*u0))) {  // an op the renderer lacks: its decomposition, lane by lane
    std::vector<UOpPtr> alt;
    for (const auto& l : lanes) alt.push_back(decompose(l));
    if (!alt[0]) return gather_lanes(lanes);
    return emit_lanes(alt);
  }
  std::vector<Lanes> srcs;  // an op the renderer takes only per lane (the per_lane rule's: on lanes of vectors)
  for (size_t i = 0; i < u0->src.size(); ++i) srcs.push_back(emit_lanes(src_lanes(lanes, i)));
  return per_lane(lanes, srcs);
}

Emitter::Lanes Emitter::per_lane(const std::vector<UOpPtr>& lanes, const std::vector<Lanes>& srcs) {
  const UOpPtr& u0 = lanes[0];
  std::vector<int32_t> out;
  for (int l = 0; l < static_cast<int>(lanes.size()); ++l) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < srcs.size(); ++i) ids.push_back(lane(srcs[i], u0->src[i]->dtype, l));
    flops_ += mult_;
    out.push_back(k_.add(kir_op(u0->op), dt(u0->dtype), 1, std::move(ids)));
  }
  return pack(out, u0->dtype);
}

Emitter::Lanes Emitter::gather_lanes(const std::vector<UOpPtr>& lanes) {
  std::vector<int32_t> out;
  for (const auto& l : lanes) out.push_back(emit(l));
  return pack(out, lanes[0]->dtype);
}

Emitter::Lanes Emitter::pack(const std::vector<int32_t>& scalars, DType d) {
  int w = static_cast<int>(scalars.size());
  if (d.is_bool() || !vector_ok(d, w)) {
    // keep bools as separate scalars: a later per-lane consumer takes them by lane
    bool_lanes_.push_back(scalars);
    return {-static_cast<int32_t>(bool_lanes_.size()), w};
  }
  return {k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), scalars), w};
}

}  // namespace tg::codegen
