// Kernel planning for work-group devices: grid binding, group-shared reductions, tiled matmuls.
#include "codegen/lower_gpu.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace tg::codegen {

bool is_gpu(const tg_renderer_caps& caps) {
  return caps.has_local && !caps.has_threads && caps.max_local_threads > 1 && caps.max_global_dims >= 1;
}

namespace {

// The largest power of two <= limit that divides n (1 when n is odd): work-groups then tile a loop exactly, so no
// work-item needs a bounds check (a guard before a barrier would deadlock the group).
uint32_t local_size_for(int64_t n, uint64_t limit) {
  uint32_t l = 1;
  while (static_cast<uint64_t>(l) * 2 <= limit && n % (static_cast<int64_t>(l) * 2) == 0) l *= 2;
  return l;
}

// The top-level REDUCEs of a kernel (those not inside another reduce's value).
std::vector<UOpPtr> top_reduces(const UOpPtr& sink) {
  std::vector<UOpPtr> out;
  std::set<const UOp*> seen;
  std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return;
    if (u->op == Op::REDUCE) return out.push_back(u);
    for (const auto& s : u->src) walk(s);
  };
  walk(sink);
  return out;
}

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
    UOpPtr outer = UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, (R + L - 1) / L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr idx = alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, L)), cast(lid, r->dtype));
    UOpPtr value = simplify(substitute(u->src[0], {{r.get(), idx}}));
    if (R % L) {  // the last pass is partial: past R the index is clamped (every load stays inside) and folds nothing
      UOpPtr inside = alu(Op::CMPLT, idx, const_int(r->dtype, R));
      UOpPtr clamped = alu(Op::WHERE, inside, idx, const_int(r->dtype, R - 1));
      value = alu(Op::WHERE, inside, simplify(substitute(u->src[0], {{r.get(), clamped}})), reduce_identity(rop, u->dtype));
    }
    std::vector<UOpPtr> psrc{value};
    psrc.insert(psrc.end(), u->src.begin() + 1, u->src.end() - 1);
    psrc.push_back(outer);
    UOpPtr partial = UOp::make(Op::REDUCE, u->dtype, std::move(psrc), u->arg);
    UOpPtr temp = UOp::make(Op::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{L, next_id++});
    UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_, {UOp::make(Op::STORE, u->dtype, {temp, cast(lid, dtypes::int64), partial})});
    UOpPtr j = UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr ready = UOp::make(Op::AFTER, u->dtype, {temp, staged}, temp->arg);
    map.emplace_back(u.get(), UOp::make(Op::REDUCE, u->dtype, {UOp::make(Op::LOAD, u->dtype, {ready, j}), j}, u->arg));
  }
  return map.empty() ? sink : substitute(sink, map);
}

}  // namespace

// One output per work-item: the innermost constant output loops go on the grid's dims (dim 0 innermost, for
// coalesced access), each split into work-groups of a power of two that divides it, up to 256 work-items per
// group; a loop whose groups would exceed the dim's limit stays a loop.
void bind_gpu_grid(Emitter& e, const std::vector<UOpPtr>& ranges, const tg_renderer_caps& caps) {
  constexpr uint64_t kGroupThreads = 256;
  uint64_t threads = 1;
  uint32_t dim = 0;
  for (size_t i = ranges.size(); i-- > 0 && dim < std::min(caps.max_global_dims, 3u);) {
    if (!is_const_end(ranges[i])) continue;
    const int64_t n = ranges[i]->src[0]->arg_int();
    const uint32_t l = local_size_for(n, std::min<uint64_t>({kGroupThreads / threads, caps.max_local[dim],
                                                             caps.max_local_threads / threads}));
    if (n / l > caps.max_global[dim]) continue;
    e.special(ranges[i], TG_SPECIAL_GLOBAL, dim++, l);
    threads *= l;
  }
}

// A reduction with few outputs and a long reduce axis on a GPU: one work-group per output (the output loops are
// group ids, as many as the grid has dims; the rest stay loops), each reduce spread over the group
// (group_reduces), the store made by work-item 0. nullopt when one output per work-item serves better.
std::optional<KirProgram> lower_grouped(KirProgram& k, const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                        const tg_renderer_caps& caps, const std::map<std::string, int64_t>& var_params) {
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
  constexpr int64_t kMaxOutputs = 4096, kMinReduce = 256;
  if (outputs > kMaxOutputs || longest < kMinReduce) return std::nullopt;
  const uint64_t limit = std::min<uint64_t>({256, caps.max_local_threads, caps.max_local[0],
                                             caps.local_mem_bytes / static_cast<uint64_t>(std::max<int64_t>(local_bytes, 1))});
  int64_t L = 1;
  while (static_cast<uint64_t>(L) * 2 <= limit) L *= 2;
  if (L < 16) return std::nullopt;

  int64_t next_id = 0;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
    if (n->op == Op::RANGE) next_id = std::max(next_id, n->range().id + 1);
  UOpPtr lid = UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, L)}, RangeInfo{next_id++, AxisType::LOCAL});
  UOpPtr grouped = group_reduces(sink, lid, L, next_id);

  Emitter e(k, caps, var_params);
  e.special(lid, TG_SPECIAL_LOCAL, 0);
  uint32_t dim = 0;
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)  // the innermost output loop on dim 0
    if (dim < caps.max_global_dims && (*it)->src[0]->arg_int() <= caps.max_global[dim])
      e.special(*it, TG_SPECIAL_GROUP, dim++);
  e.declare_locals(grouped);
  std::vector<int32_t> loops;
  for (const auto& r : ranges)
    if (!e.bound(r)) loops.push_back(e.open_loop(r));
  const int32_t first = e.emit(alu(Op::CMPEQ, lid, const_int(dtypes::int32, 0)));
  for (const auto& st : grouped->src) {
    const int32_t p = e.emit(st->src[0]), idx = e.emit(st->src[1]), v = e.emit(st->src[2]);
    k.add(TG_KIR_STORE, dt(st->src[2]->dtype), 1, {p, idx, v, first});
  }
  // output loops around the reduce: every work-item must be done folding the local arrays before the next
  // iteration writes them again
  if (!loops.empty()) k.add(TG_KIR_BARRIER, 0, 1, {});
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return std::move(k);
}

}  // namespace tg::codegen
