// The linearizer (the pipeline's last lowering step): a planned kernel's grid, loops, staged panel, reductions and
// stores; a kernel of work-groups (a GPU plan's or a hand-written one's); a hand-written kernel's loops as written.
// The Emitter (emitter.hpp) writes every instruction.
#include <algorithm>
#include <map>
#include <set>

#include "codegen/emitter.hpp"
#include "codegen/expand.hpp"
#include "codegen/gpu/plans.hpp"
#include "codegen/plan.hpp"
#include "codegen/reduce_lowering.hpp"

namespace tg::codegen {

using namespace ir;

// The kernel's instructions, through the Emitter (the linearizer, with linearize_work_groups): the grid, the loops,
// the staged panel, and the statements of the (expanded, reduce-lowered) graph.
void linearize(Plan& p) {
  KirProgram& k = p.kir;
  const UOpPtr& sink = p.sink;
  const std::vector<UOpPtr>& ranges = p.ranges;
  Emitter e(k, p.caps, p.var_params);
  std::vector<int32_t> loops;
  // a host CPU's grid is THREAD's loop (output loops are independent, so one before it can run inside it); a
  // GPU's is bound below
  const size_t grid =
      p.grid ? static_cast<size_t>(std::find(ranges.begin(), ranges.end(), p.grid) - ranges.begin()) : ranges.size();
  if (grid < ranges.size()) e.special(ranges[grid]);
  if (is_gpu(p.caps)) bind_gpu_grid(e, ranges, p.caps, next_range_id(sink));
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (p.staged && ranges[i] == p.staged_row) {  // the panel, once per iteration of the loops outside the rows
      e.emit(p.staged->buffer);
      const int32_t copy_loop = e.open_loop(p.staged->loop);
      for (const auto& copy : p.staged->copies)
        for (const auto& st : copy) e.emit(st);
      e.close_loop(copy_loop);
    }
    if (i != grid && !e.bound(ranges[i])) loops.push_back(e.open_loop(ranges[i]));
  }
  for (const auto& st : sink->src) e.emit(st);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
}

// A kernel of work-groups (a hand-written one with LOCAL ranges, or a GPU plan's): its i-th group range is the
// work-group id along dim i and its i-th item range the work-item id inside the group. Limits the device cannot
// meet are errors naming the limit (a hand-written kernel is not re-planned; a plan checks them first).
KirProgram linearize_work_groups(KirProgram& k, const WorkGroupPlan& w, const tg_renderer_caps& caps,
                                 std::map<std::string, int64_t> var_params) {
  auto fail = [&](const std::string& what) { throw Error("tg: kernel " + k.name + ": " + what); };
  if (!caps.has_local) fail("LOCAL ranges need work-groups with local memory, which this renderer does not have");
  if (w.groups.size() > caps.max_global_dims || w.items.size() > caps.max_global_dims)
    fail(std::to_string(w.groups.size()) + " GLOBAL and " + std::to_string(w.items.size()) +
         " LOCAL ranges; the renderer launches at most " + std::to_string(caps.max_global_dims) + " dims");
  Emitter e(k, caps, std::move(var_params));
  const UOpPtr unrolled =
      expand_upcast_stores(rewrite(w.sink, pm_unroll_reduces(caps, nullptr), {.name = "unroll_reduces"}), caps);
  const UOpPtr sink = lower_reduces(unrolled, caps);
  uint64_t threads = 1;
  for (size_t d = 0; d < w.items.size(); ++d) {
    const int64_t n = w.items[d]->src[0]->arg_int();
    if (n > caps.max_local[d])
      fail("LOCAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-items; the device allows " +
           std::to_string(caps.max_local[d]) + " (max_local[" + std::to_string(d) + "])");
    threads *= static_cast<uint64_t>(n);
    e.special(w.items[d], TG_SPECIAL_LOCAL, static_cast<uint32_t>(d));
  }
  if (threads > caps.max_local_threads)
    fail("work-groups of " + std::to_string(threads) + " work-items; the device allows " +
         std::to_string(caps.max_local_threads) + " (max_local_threads)");
  for (size_t d = 0; d < w.groups.size(); ++d) {
    const int64_t n = w.groups[d]->src[0]->arg_int();
    if (n > caps.max_global[d])
      fail("GLOBAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-groups; the device allows " +
           std::to_string(caps.max_global[d]));
    e.special(w.groups[d], TG_SPECIAL_GROUP, static_cast<uint32_t>(d));
  }
  e.declare_locals(sink);
  e.declare_registers(unrolled);  // the plan's own (lower_reduces' accumulators live where their reduction runs)
  for (const auto& st : sink->src) e.emit(st);
  if (e.local_bytes() > caps.local_mem_bytes)
    fail(std::to_string(e.local_bytes()) + " bytes of local arrays; the device has " +
         std::to_string(caps.local_mem_bytes) + " (local_mem_bytes)");
  k.flops = w.flops > 0 ? w.flops : e.flops();
  return std::move(k);
}

// A hand-written kernel: its GLOBAL ranges around its statements, in order, exactly as written (with LOCAL ranges,
// a kernel of work-groups: linearize_work_groups).
KirProgram linearize_as_written(KirProgram& k, const sched::Kernel& kernel, const UOpPtr& sink,
                                const tg_renderer_caps& caps, std::map<std::string, int64_t> var_params) {
  if (!kernel.local_ranges.empty())
    return linearize_work_groups(k, {sink, kernel.out_ranges, kernel.local_ranges}, caps, std::move(var_params));
  Emitter e(k, caps, std::move(var_params));
  // the steps a planned kernel goes through, for the hand-written graph: UNROLL, lanes (its UPCAST stores), reductions
  const UOpPtr unrolled =
      expand_upcast_stores(rewrite(sink, pm_unroll_reduces(caps, nullptr), {.name = "unroll_reduces"}), caps);
  const UOpPtr s = lower_reduces(unrolled, caps);
  e.declare_locals(s);
  std::vector<int32_t> loops;
  bool first = true;
  for (const auto& r : kernel.out_ranges) {
    if (r->src[0]->arg_int() <= 1) continue;
    if (first && kernel.parallel && caps.max_global_dims >= 1)
      e.special(r);
    else
      loops.push_back(e.open_loop(r));
    first = false;
  }
  e.declare_registers(unrolled);  // the kernel's own (lower_reduces' accumulators live where their reduction runs)
  for (const auto& st : s->src) e.emit(st);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return std::move(k);
}

}  // namespace tg::codegen
