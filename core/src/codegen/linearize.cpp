// The linearizer (the pipeline's last lowering step) writes a kernel's instructions through the Emitter
// (emitter.hpp), by the kernel's form: a planned kernel's grid, loops, staged panel and statements; a kernel of
// work-groups (a GPU plan's or a hand-written one's); a hand-written kernel's loops as written. The steps before it
// made the statements (expand, unroll_reduces, lower_reduces).
#include <algorithm>
#include <map>

#include "codegen/emitter.hpp"
#include "codegen/gpu/plans.hpp"
#include "codegen/plan.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

// A planned kernel: the grid, the loops, the staged panel, and the statements.
void linearize_planned(Plan& p) {
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
void linearize_work_groups(Plan& p) {
  KirProgram& k = p.kir;
  const WorkGroupPlan& w = *p.work_groups;
  const tg_renderer_caps& caps = p.caps;
  auto fail = [&](const std::string& what) { throw Error("tg: kernel " + k.name + ": " + what); };
  if (!caps.has_local) fail("LOCAL ranges need work-groups with local memory, which this renderer does not have");
  if (w.groups.size() > caps.max_global_dims || w.items.size() > caps.max_global_dims)
    fail(std::to_string(w.groups.size()) + " GLOBAL and " + std::to_string(w.items.size()) +
         " LOCAL ranges; the renderer launches at most " + std::to_string(caps.max_global_dims) + " dims");
  Emitter e(k, caps, p.var_params);
  const UOpPtr& sink = p.sink;
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
  e.declare_registers(
      p.before_reduces);  // the plan's own (lower_reduces' accumulators live where their reduction runs)
  for (const auto& st : sink->src) e.emit(st);
  if (e.local_bytes() > caps.local_mem_bytes)
    fail(std::to_string(e.local_bytes()) + " bytes of local arrays; the device has " +
         std::to_string(caps.local_mem_bytes) + " (local_mem_bytes)");
  k.flops = w.flops > 0 ? w.flops : e.flops();
}

// A hand-written kernel without LOCAL ranges: its GLOBAL ranges around its statements, in order, exactly as written.
void linearize_as_written(Plan& p) {
  KirProgram& k = p.kir;
  const sched::Kernel& kernel = p.kernel;
  const tg_renderer_caps& caps = p.caps;
  Emitter e(k, caps, p.var_params);
  const UOpPtr& s = p.sink;
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
  e.declare_registers(
      p.before_reduces);  // the kernel's own (lower_reduces' accumulators live where their reduction runs)
  for (const auto& st : s->src) e.emit(st);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
}

}  // namespace

void linearize(Plan& p) {
  if (p.form == Plan::Form::work_groups) return linearize_work_groups(p);
  if (p.form == Plan::Form::as_written) return linearize_as_written(p);
  linearize_planned(p);
}

}  // namespace tg::codegen
