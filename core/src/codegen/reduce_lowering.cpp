// Reduce lowering (emitter.hpp): every REDUCE becomes one accumulator (accumulate): scalar, or a vector REDUCE's
// (the expand step's rules make those of output lanes and of UNROLL's loop lanes), several over one loop sharing its
// loop nest (prefuse_reduces). A vector combines with `combine`; a scalar through the ordinary ALU lowering
// (ir::reduce_combine, decompositions included); a SUM of products is one FMA where the renderer takes it.
#include <algorithm>

#include "codegen/emitter.hpp"

namespace tg::codegen {

int32_t Emitter::vector_step(ReduceOp rop, const UOpPtr& value, int32_t cur, DType d, int w) {
  const UOpPtr v = value->op == Op::VECTORIZE ? vectorized(value) : value;  // lanes made here (UNROLL's)
  if (rop == ReduceOp::SUM && v->op == Op::MUL && v->dtype == d.vec(w) && supports(Op::FMA, d)) {
    const int32_t x = emit(v->src[0]), y = emit(v->src[1]);
    flops_ += 2 * mult_ * w;
    return k_.add(TG_KIR_FMA, dt(d), static_cast<uint8_t>(w), {x, y, cur});
  }
  flops_ += mult_ * w;
  return combine(rop, d, w, cur, emit(v));
}

Emitter::Accumulator Emitter::accumulator(const UOpPtr& u) {
  const auto rop = static_cast<ReduceOp>(u->arg_int());
  const DType d(u->dtype.scalar);
  const int w = u->dtype.count;
  return {rop, d, w, [this, u, rop, d, w](int32_t cur) { return vector_step(rop, u->src[0], cur, d, w); }};
}

int32_t Emitter::emit_reduce_vector(const UOpPtr& u) {
  return accumulate({accumulator(u)}, u, std::vector<UOpPtr>(u->src.begin() + 1, u->src.end()))[0];
}

void Emitter::prefuse_reduces(const std::vector<UOpPtr>& reduces) {
  if (reduces.size() < 2) return;
  const UOpPtr& first = reduces[0];
  std::vector<UOpPtr> group;
  for (const auto& u : reduces)
    if (same_loops(*u, *first) && static_cast<ReduceOp>(u->arg_int()) != ReduceOp::MIN) group.push_back(u);
  if (group.size() < 2) return;
  std::vector<Accumulator> accs;
  for (const auto& u : group) accs.push_back(accumulator(u));
  const std::vector<int32_t> results = accumulate(accs, nullptr, std::vector<UOpPtr>(first->src.begin() + 1, first->src.end()));
  for (size_t i = 0; i < group.size(); ++i) set(group[i], results[i]);
}

void Emitter::hoist_statements(const UOpPtr& reduce) {
  std::unordered_map<const UOp*, bool> varies;
  for (size_t i = 1; i < reduce->src.size(); ++i) varies[reduce->src[i].get()] = true;
  for (const UOp* n : toposort(std::vector<UOpPtr>{reduce->src[0]})) {
    bool v = varies.count(n) && varies[n];
    for (const auto& s : n->src) v = v || varies[s.get()];
    varies[n] = v;
    if (n->op == Op::AFTER && !v) emit(n->ptr());
  }
}

int32_t Emitter::emit_reduce(const UOpPtr& u) {
  auto rop = static_cast<ReduceOp>(u->arg_int());
  DType d = u->dtype;
  std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
  // the combine step through the ordinary ALU lowering (an op without a scalar instruction decomposes)
  return accumulate({{rop, d, 1, [&](int32_t cur) {
                        if (rop == ReduceOp::SUM && u->src[0]->op == Op::MUL && supports(Op::FMA, d))
                          return vector_step(rop, u->src[0], cur, d, 1);  // one FMA
                        const int32_t v = emit(u->src[0]);
                        UOpPtr a = UOp::make(Op::PARAM, d, {}, int64_t{-1});
                        UOpPtr b = UOp::make(Op::PARAM, d, {}, int64_t{-2});
                        set(a, cur);
                        set(b, v);
                        return emit(reduce_combine(rop, a, b));
                      }}},
                    u, loops)[0];
}

std::vector<int32_t> Emitter::accumulate(const std::vector<Accumulator>& accs, const UOpPtr& reduce,
                                         const std::vector<UOpPtr>& loops) {
  const int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
  std::vector<int32_t> regs;
  for (const Accumulator& a : accs) {
    regs.push_back(k_.add(TG_KIR_DEFINE_REG, dt(a.d), static_cast<uint8_t>(a.w), {}, {.i = 1}, TG_ADDR_REG));
    k_.add(TG_KIR_STORE, dt(a.d), static_cast<uint8_t>(a.w), {regs.back(), zero, broadcast({emit(reduce_identity(a.rop, a.d)), 1}, a.d, a.w)});
  }
  if (reduce) hoist_statements(reduce);
  std::vector<int32_t> open;
  for (const auto& r : loops)
    if (r->op == Op::RANGE) open.push_back(open_loop(r));
  for (size_t i = 0; i < accs.size(); ++i) {
    const Accumulator& a = accs[i];
    const int32_t next = a.step(k_.add(TG_KIR_LOAD, dt(a.d), static_cast<uint8_t>(a.w), {regs[i], zero}));
    k_.add(TG_KIR_STORE, dt(a.d), static_cast<uint8_t>(a.w), {regs[i], zero, next});
  }
  for (auto it = open.rbegin(); it != open.rend(); ++it) close_loop(*it);
  std::vector<int32_t> results;
  for (size_t i = 0; i < accs.size(); ++i)
    results.push_back(k_.add(TG_KIR_LOAD, dt(accs[i].d), static_cast<uint8_t>(accs[i].w), {regs[i], zero}));
  return results;
}

int32_t Emitter::combine(ReduceOp rop, DType d, int w, int32_t a, int32_t b) {
  const uint8_t n = static_cast<uint8_t>(w);
  if (rop != ReduceOp::MIN) return k_.add(kir_op(rop == ReduceOp::SUM ? Op::ADD : Op::MAX), dt(d), n, {a, b});
  const int32_t m = k_.add(TG_KIR_MAX, dt(d), n, {k_.add(TG_KIR_NEG, dt(d), n, {a}), k_.add(TG_KIR_NEG, dt(d), n, {b})});
  return k_.add(TG_KIR_NEG, dt(d), n, {m});
}

}  // namespace tg::codegen
