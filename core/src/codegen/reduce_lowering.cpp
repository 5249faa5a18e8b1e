// Reduce lowering (emitter.hpp): every REDUCE becomes one accumulator (accumulate): scalar, a vector of a loop's
// lanes (UNROLL), a vector of output lanes, or several sharing one loop nest (prefuse_reduces); unrolled ranges are
// combined in straight-line code first. One combine step for every op (combine, and ir::reduce_combine where the
// step goes through the ordinary ALU lowering); a SUM of products is one FMA where the renderer takes it.
#include <algorithm>

#include "codegen/emitter.hpp"

namespace tg::codegen {

bool Emitter::is_unrolled(const UOpPtr& r) {
  return r->op == Op::RANGE && (r->range().type == AxisType::UPCAST || r->range().type == AxisType::UNROLL);
}

int32_t Emitter::fused_sum(ReduceOp rop, const std::vector<UOpPtr>& values, int32_t cur, DType d, int w) {
  if (rop != ReduceOp::SUM || !supports(Op::FMA, d)) return -1;
  std::vector<UOpPtr> xs, ys;
  for (const auto& v : values) {
    if (v->op != Op::MUL || v->dtype != d) return -1;
    xs.push_back(v->src[0]), ys.push_back(v->src[1]);
  }
  const int32_t x = broadcast(emit_lanes(xs), d, w), y = broadcast(emit_lanes(ys), d, w);
  flops_ += 2 * mult_ * w;
  return k_.add(TG_KIR_FMA, dt(d), static_cast<uint8_t>(w), {x, y, cur});
}

bool Emitter::same_loops(const UOpPtr& a, const UOpPtr& b) {
  if (a->src.size() != b->src.size()) return false;
  for (size_t i = 1; i < a->src.size(); ++i)
    if (a->src[i].get() != b->src[i].get()) return false;
  return true;
}

bool Emitter::one_accumulator(const std::vector<UOpPtr>& lanes) const {
  for (const auto& l : lanes)
    if (!same_loops(l, lanes[0])) return false;
  return vector_combines(static_cast<ReduceOp>(lanes[0]->arg_int()), lanes[0]->dtype, static_cast<int>(lanes.size()));
}

Emitter::Step Emitter::vector_step(ReduceOp rop, std::vector<UOpPtr> values, DType d, int w) {
  return [this, rop, values = std::move(values), d, w](int32_t cur) {
    if (int32_t fused = fused_sum(rop, values, cur, d, w); fused >= 0) return fused;
    flops_ += mult_ * w;
    return combine(rop, d, w, cur, broadcast(emit_lanes(values), d, w));
  };
}

void Emitter::prefuse_reduces(const std::vector<std::vector<UOpPtr>>& all) {
  if (all.size() < 2) return;
  const UOpPtr& first = all[0][0];
  std::vector<std::vector<UOpPtr>> groups;
  for (const auto& g : all)
    if (same_loops(g[0], first) && static_cast<ReduceOp>(g[0]->arg_int()) != ReduceOp::MIN && one_accumulator(g))
      groups.push_back(g);
  if (groups.size() < 2) return;
  std::vector<Accumulator> accs;
  for (const auto& g : groups) {
    const auto rop = static_cast<ReduceOp>(g[0]->arg_int());
    const int w = static_cast<int>(g.size());
    accs.push_back({rop, g[0]->dtype, w, vector_step(rop, src_lanes(g, 0), g[0]->dtype, w)});
  }
  const std::vector<int32_t> results = accumulate(accs, nullptr, std::vector<UOpPtr>(first->src.begin() + 1, first->src.end()));
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    std::vector<const UOp*> key;
    for (const auto& l : g) key.push_back(l.get());
    keep_.insert(keep_.end(), g.begin(), g.end());
    vscopes_.back()[key] = {results[gi], static_cast<int>(g.size())};
  }
}

Emitter::Lanes Emitter::emit_reduce_lanes(const std::vector<UOpPtr>& lanes) {
  if (!one_accumulator(lanes)) return gather_lanes(lanes);
  const UOpPtr& u0 = lanes[0];
  const int w = static_cast<int>(lanes.size());
  const auto rop = static_cast<ReduceOp>(u0->arg_int());
  const DType d = u0->dtype;
  std::vector<UOpPtr> loops(u0->src.begin() + 1, u0->src.end());
  return {accumulate({{rop, d, w, vector_step(rop, src_lanes(lanes, 0), d, w)}}, nullptr, loops)[0], w};
}

UOpPtr Emitter::unroll_reduce(const UOpPtr& u) {
  std::vector<UOpPtr> loops, unrolled;
  for (size_t i = 1; i < u->src.size(); ++i) (is_unrolled(u->src[i]) ? unrolled : loops).push_back(u->src[i]);
  if (unrolled.empty()) return nullptr;
  auto rop = static_cast<ReduceOp>(u->arg_int());
  UOpPtr value = u->src[0];
  for (const auto& r : unrolled) {
    UOpPtr acc;
    for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
      UOpPtr term = simplify_substituted(value, {{r.get(), const_int(r->dtype, k)}});
      acc = acc ? reduce_combine(rop, acc, term) : term;
    }
    value = acc;
  }
  if (loops.empty()) return value;
  std::vector<UOpPtr> src{value};
  src.insert(src.end(), loops.begin(), loops.end());
  return UOp::make(Op::REDUCE, u->dtype, std::move(src), u->arg);
}

int32_t Emitter::emit_vector_reduce(const UOpPtr& u) {
  const UOpPtr r = reduce_loop(*u);
  if (!r) return -1;
  int w = 0;
  if (unrolls_) {
    auto it = unrolls_->find(r.get());
    w = it == unrolls_->end() ? 0 : it->second;
  } else {
    w = widest_unroll(caps_, {u.get()});
  }
  if (!w) return -1;
  auto rop = static_cast<ReduceOp>(u->arg_int());
  DType d = u->dtype;
  const UnrolledReduce unrolled = unrolled_lanes(*u, w);
  std::map<const UOp*, bool> memo;
  if (!vectorizable(unrolled.lanes, memo)) return -1;
  std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
  std::replace(loops.begin(), loops.end(), r, unrolled.outer);
  const int32_t all = accumulate({{rop, d, w, vector_step(rop, unrolled.lanes, d, w)}}, u, loops)[0];
  int32_t out = k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = 0});
  for (int l = 1; l < w; ++l) out = combine(rop, d, 1, out, k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = l}));
  return out;
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
  if (int32_t v = emit_vector_reduce(u); v >= 0) return v;
  auto rop = static_cast<ReduceOp>(u->arg_int());
  DType d = u->dtype;
  std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
  // the combine step through the ordinary ALU lowering (an op without a scalar instruction decomposes)
  return accumulate({{rop, d, 1, [&](int32_t cur) {
                        if (int32_t fused = fused_sum(rop, {u->src[0]}, cur, d, 1); fused >= 0) return fused;
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
