// GPU plan GROUP: a reduction shared by the work-items of a work-group through local memory (plan_grouped).
#include "codegen/gpu/plan_parts.hpp"

#include <algorithm>

namespace tg::codegen {

using namespace ir;

namespace {

// GROUPTOP: each reduce is shared by the L work-items of a group. Work-item `lid` folds the elements lid, lid+L,
// lid+2L, ... of the reduce's innermost range into a partial and writes it to a local array of its own reduce (two
// grouped reduces in one kernel never share an array or a barrier); after that array's barrier every work-item
// folds the L partials. Returns the sink with the reduces replaced.
UOpPtr group_reduces(const UOpPtr& sink, const UOpPtr& lid, int64_t L, int64_t& next_id) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const UOpPtr& u : top_reduces(sink)) {
    const UOpPtr& r = u->src.back();
    if (r->op != Op::RANGE || !is_const_end(r)) continue;
    const int64_t R = r->src[0]->arg_int();
    auto rop = static_cast<ReduceOp>(u->arg_int());
    UOpPtr outer =
        UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, (R + L - 1) / L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr idx = alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, L)), cast(lid, r->dtype));
    UOpPtr value = simplify(substitute(u->src[0], {{r.get(), idx}}));
    if (R % L) {  // the last pass is partial: past R the index is clamped (every load stays inside) and folds nothing
      UOpPtr inside = alu(Op::CMPLT, idx, const_int(r->dtype, R));
      UOpPtr clamped = alu(Op::WHERE, inside, idx, const_int(r->dtype, R - 1));
      value =
          alu(Op::WHERE, inside, simplify(substitute(u->src[0], {{r.get(), clamped}})), reduce_identity(rop, u->dtype));
    }
    std::vector<UOpPtr> psrc{value};
    psrc.insert(psrc.end(), u->src.begin() + 1, u->src.end() - 1);
    psrc.push_back(outer);
    UOpPtr partial = UOp::make(Op::REDUCE, u->dtype, std::move(psrc), u->arg);
    UOpPtr temp = UOp::make(Op::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{L, next_id++});
    UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_,
                              {UOp::make(Op::STORE, u->dtype, {temp, cast(lid, dtypes::int64), partial})});
    UOpPtr j =
        UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr ready = UOp::make(Op::AFTER, u->dtype, {temp, staged}, temp->arg);
    map.emplace_back(u.get(), UOp::make(Op::REDUCE, u->dtype, {UOp::make(Op::LOAD, u->dtype, {ready, j}), j}, u->arg));
  }
  return map.empty() ? sink : substitute(sink, map);
}

}  // namespace

// A reduction with few outputs and a long reduce axis on a GPU: one work-group per output (the output loops are
// group ids, as many as the grid has dims; the rest stay loops), each reduce spread over the group
// (group_reduces), the store made by work-item 0. nullopt when one output per work-item serves better.
std::optional<WorkGroupPlan> plan_grouped(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                          const tg_renderer_caps& caps, int64_t group) {
  const std::vector<UOpPtr> reduces = top_reduces(sink);
  if (reduces.empty()) return std::nullopt;
  int64_t outputs = 1, longest = 0, local_bytes = 0;
  for (const auto& r : ranges) {
    if (!is_const_end(r)) return std::nullopt;
    outputs *= r->src[0]->arg_int();
  }
  for (const auto& u : reduces) {
    const UOpPtr& r = u->src.back();
    if (r->op == Op::RANGE && is_const_end(r)) longest = std::max(longest, r->src[0]->arg_int());
    local_bytes += u->dtype.itemsize();
  }
  // enough outputs to fill the device one per work-item, or too short a reduce to share: the plain path
  // (a size asked for is taken wherever the device can run it)
  constexpr int64_t kMaxOutputs = 4096, kMinReduce = 256;
  if (group == 0 && (outputs > kMaxOutputs || longest < kMinReduce)) return std::nullopt;
  const uint64_t limit =
      std::min<uint64_t>({caps.max_local_threads, caps.max_local[0],
                          caps.local_mem_bytes / static_cast<uint64_t>(std::max<int64_t>(local_bytes, 1))});
  int64_t L = group;
  if (group == 0) {
    L = 1;
    while (static_cast<uint64_t>(L) * 2 <= std::min<uint64_t>(256, limit)) L *= 2;
    if (L < 16) return std::nullopt;
  }
  if (L < 2 || static_cast<uint64_t>(L) > limit) return std::nullopt;

  int64_t next_id = next_range_id(sink);
  WorkGroupPlan w;
  const UOpPtr lid = new_range(L, AxisType::LOCAL, next_id);
  const UOpPtr grouped = group_reduces(sink, lid, L, next_id);
  w.items = {lid};
  std::vector<UOpPtr> loops;  // output loops beyond the grid's dims (or its limits), outermost first
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)  // the innermost output loop on dim 0
    if (w.groups.size() < caps.max_global_dims && (*it)->src[0]->arg_int() <= caps.max_global[w.groups.size()])
      w.groups.push_back(*it);
    else
      loops.insert(loops.begin(), *it);
  // work-item 0 stores each output
  const UOpPtr first = alu(Op::CMPEQ, lid, const_int(dtypes::int32, 0));
  std::vector<UOpPtr> stores;
  for (const auto& st : grouped->src)
    stores.push_back(UOp::make(Op::STORE, st->dtype, {st->src[0], st->src[1], st->src[2], first}));
  if (loops.empty()) {
    w.sink = UOp::make(Op::SINK, dtypes::bool_, std::move(stores));
    return w;
  }
  // output loops around the reduce: every work-item must be done folding the local arrays before the next
  // iteration writes them again
  std::vector<UOpPtr> body{UOp::make(Op::BARRIER, dtypes::bool_, std::move(stores))};
  body.insert(body.end(), loops.begin(), loops.end());
  w.sink = UOp::make(Op::SINK, dtypes::bool_, {UOp::make(Op::END, dtypes::bool_, std::move(body), int64_t{1})});
  return w;
}

}  // namespace tg::codegen
