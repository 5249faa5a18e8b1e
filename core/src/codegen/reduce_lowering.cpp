// Reduce lowering (reduce_lowering.hpp): REDUCE -> one accumulator of DEFINE_REG / STORE / END / AFTER, the step
// through reduce_combine and the FMA rules; vector REDUCEs over one loop nest share its END.
#include "codegen/reduce_lowering.hpp"

#include <algorithm>
#include <set>

#include "codegen/expand.hpp"
#include "codegen/fma.hpp"
#include "codegen/lanes.hpp"
#include "codegen/plan.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

// A register id no node of the graph uses (ids keep DEFINE_REGs of the same size distinct nodes).
int64_t next_register_id(const std::vector<const UOp*>& nodes) {
  int64_t id = 0;
  for (const UOp* n : nodes) {
    if (n->op == Op::RANGE) id = std::max(id, n->range().id + 1);
    if ((n->op == Op::DEFINE_REG || n->op == Op::DEFINE_LOCAL) && n->arg_ints().size() > 1)
      id = std::max(id, n->arg_ints()[1] + 1);
  }
  return id;
}

// What a reduction's value reads besides the loops it reduces over:
//  - statements: the AFTERs that do not depend on those loops (a tile staged in local memory, a barrier); the
//    accumulator's first read waits for them, so they run once before the loops, not once per iteration. Not a
//    register's: an inner reduction's accumulator starts where its own loop does (emit_carried_inits);
//  - unrolled: the UPCAST/UNROLL ranges it reads, which the linearizer writes out by substitution (a hand-written
//    kernel's END): the accumulator's register takes them as sources, so each copy gets a register of its own.
struct Reads {
  std::vector<UOpPtr> statements, unrolled;
};
Reads reads(const UOpPtr& value, const std::vector<UOpPtr>& loops) {
  Reads out;
  for (UOpPtr& n :
       independent_of({value}, loops, [](const UOp& n) { return n.op == Op::AFTER || n.op == Op::RANGE; })) {
    if (n->op == Op::AFTER && n->src[0]->op != Op::DEFINE_REG)
      out.statements.push_back(std::move(n));
    else if (is_unrolled(n))
      out.unrolled.push_back(std::move(n));
  }
  return out;
}

// The accumulators of REDUCEs over the same loops, in one END; their results in order.
class Accumulators {
 public:
  Accumulators(const tg_renderer_caps& caps, int64_t next_id)
      : fma_(pm_fma_for(caps)), vectorize_(caps), id_(next_id) {}

  std::vector<UOpPtr> operator()(const std::vector<UOpPtr>& reduces) {
    const std::vector<UOpPtr> loops(reduces[0]->src.begin() + 1, reduces[0]->src.end());
    const UOpPtr zero = const_int(dtypes::int32, 0);
    std::vector<UOpPtr> regs, stmts;
    for (const UOpPtr& u : reduces) {
      const auto rop = static_cast<ReduceOp>(u->arg_int());
      const DType d = u->dtype;
      const UOpPtr value = vectorize_(u->src[0]);  // UNROLL's loop lanes (pm_unroll_reduces) as vector ops
      Reads r = reads(value, loops);
      const UOpPtr acc = UOp::make(Op::DEFINE_REG, d, std::move(r.unrolled), std::vector<int64_t>{1, id_++});
      UOpPtr identity = reduce_identity(rop, DType(d.scalar));
      if (d.count > 1) identity = UOp::make(Op::VECTORIZE, d, std::vector<UOpPtr>(d.count, identity));
      std::vector<UOpPtr> first{UOp::make(Op::STORE, d, {acc, zero, identity})};
      for (UOpPtr& st : r.statements) first.push_back(std::move(st));
      UOpPtr step = reduce_combine(rop, UOp::make(Op::LOAD, d, {after(acc, std::move(first)), zero}), value);
      if (UOpPtr f = fma_.rewrite(step)) step = f;
      stmts.push_back(UOp::make(Op::STORE, d, {acc, zero, step}));
      regs.push_back(acc);
    }
    const int64_t n = static_cast<int64_t>(stmts.size());
    stmts.insert(stmts.end(), loops.begin(), loops.end());
    const UOpPtr end = UOp::make(Op::END, dtypes::bool_, std::move(stmts), n);
    std::vector<UOpPtr> results;
    for (size_t i = 0; i < reduces.size(); ++i)
      results.push_back(UOp::make(Op::LOAD, reduces[i]->dtype, {after(regs[i], {end}), zero}));
    return results;
  }

 private:
  PatternMatcher fma_;
  Vectorizer vectorize_;
  int64_t id_;
};

// The vector REDUCEs the statements reach, in reading order; a REDUCE's own value is not searched.
void vector_reduces(const UOpPtr& u, std::set<const UOp*>& seen, std::vector<UOpPtr>& out) {
  if (!seen.insert(u.get()).second) return;
  if (u->op == Op::REDUCE) {
    if (u->dtype.count > 1) out.push_back(u);
    return;
  }
  for (const auto& s : u->src) vector_reduces(s, seen, out);
}

}  // namespace

UOpPtr lower_reduces(const UOpPtr& sink, const tg_renderer_caps& caps) {
  const std::vector<const UOp*> nodes = toposort(std::vector<UOpPtr>{sink});
  if (std::none_of(nodes.begin(), nodes.end(), [](const UOp* n) { return n->op == Op::REDUCE; })) return sink;
  Accumulators accumulate(caps, next_register_id(nodes));
  // vector REDUCEs over the first one's loops share its loop nest (not MIN: its combine is three ops per lane)
  std::vector<UOpPtr> reduces, group;
  std::set<const UOp*> seen;
  for (const auto& st : sink->src) vector_reduces(st, seen, reduces);
  for (const auto& u : reduces)
    if (same_loops(*u, *reduces[0]) && static_cast<ReduceOp>(u->arg_int()) != ReduceOp::MIN) group.push_back(u);
  UOpPtr s = sink;
  if (group.size() >= 2) {
    const std::vector<UOpPtr> results = accumulate(group);
    std::vector<std::pair<const UOp*, UOpPtr>> map;
    for (size_t i = 0; i < group.size(); ++i) map.emplace_back(group[i].get(), results[i]);
    s = substitute(s, map);
  }
  const PatternMatcher one(
      "lower_reduces",
      {{pat::ops({Op::REDUCE}), [&](const Match&, const UOpPtr& u) { return accumulate({u})[0]; }, "one_accumulator"}});
  // top-down: a reduction before the ones in its value, so UNROLL's lanes of an inner REDUCE vectorize (one vector
  // REDUCE, vectorize_) before each lane would become an accumulator of its own
  return rewrite(s, one, {.name = "lower_reduces", .top_down = true});
}

void lower_reduces(Plan& p) {
  if (p.form != Plan::Form::planned) p.before_reduces = p.sink;
  p.rewrite_sink(lower_reduces(p.sink, p.caps));
}

}  // namespace tg::codegen
