// Running a schedule, as stages: lower every kernel, fetch or compile their programs, record the launches into
// one command buffer per device and submit once.
#include "runtime/executor.hpp"

#include <algorithm>
#include <cstdio>

#include "codegen/lower.hpp"
#include "codegen/lower_cache.hpp"
#include "codegen/verify.hpp"
#include "runtime/beam.hpp"
#include "runtime/collectives.hpp"
#include "runtime/env.hpp"
#include "runtime/launch.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/options.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/shadow_check.hpp"
#include "runtime/stats.hpp"
#include "tg/device.hpp"

namespace tg::rt {

namespace {

using Bufs = std::vector<std::shared_ptr<Buffer>>;

bool runs(const sched::ScheduleItem& it, const Bufs& bufs) {
  return it.kind == sched::ScheduleItem::Kind::KERNEL && bufs[0]->numel() > 0;
}

// Each kernel lowered for its device: the heuristic's actions (the lower cache), BEAM's where BEAM is on, the
// plain loop nest under NOOPT; a custom kernel as written.
std::vector<ProgramRequest> lower_all(const sched::Schedule& s, const std::vector<Bufs>& bufs, const Options& options) {
  const codegen::LowerSwitches switches{options.images, options.tensor_cores, options.check_ir, debug_level(),
                                        options.time_passes};
  std::vector<ProgramRequest> kernels;
  for (size_t i = 0; i < s.items.size(); ++i) {
    const sched::ScheduleItem& it = s.items[i];
    if (!runs(it, bufs[i])) continue;
    Device& dev = bufs[i][0]->device();
    const codegen::LowerOpts base =
        options.noopt && !it.kernel.custom ? codegen::plain_loops(switches) : codegen::LowerOpts{.switches = switches};
    ProgramRequest r{&dev, codegen::lower_kernel_cached(it.kernel, dev.caps(), dev.name(), base), nullptr, {}};
    if (options.beam > 0 && !options.noopt && !it.kernel.custom) {
      const codegen::Opts best = beam_choice(it, bufs[i], dev, r.kir, options.beam, switches);
      try {
        if (best != r.kir.opts)
          r.kir = codegen::lower_kernel_cached(it.kernel, dev.caps(), dev.name(), {best, switches});
      } catch (
          const codegen::OptError&) {  // a remembered list this kernel does not take (a damaged cache): the heuristic's
      }
    }
    if (options.check_ir) codegen::verify_lowered(r.kir);  // the ABI's KIR rules
    if (debug_level() >= 3)
      std::fprintf(stderr, "kernel %s: opts %s\n  %s\n", r.kir.name.c_str(), codegen::str(r.kir.opts).c_str(),
                   it.kernel.sink->str(12).c_str());
    if (debug_level() >= 5) std::fprintf(stderr, "%s", r.kir.dump().c_str());
    kernels.push_back(std::move(r));
  }
  return kernels;
}

// A copy between devices, through the host; what the kernels recorded before it have written is submitted first.
void copy(const Bufs& bufs, Recorder& recorder) {
  recorder.submit(true);
  copy_between(*bufs[0], *bufs[1]);
  if (capturing()) capture({nullptr, {bufs[0], bufs[1]}, {}, {}, {}, 0, {}});
}

// A collective: the kernels recorded before it are finished, then the ranks combine their values.
void collective(const std::string& name, const Bufs& bufs, Recorder& recorder) {
  recorder.submit(true);
  run_collective(name, *bufs[0], *bufs[1]);
  if (capturing()) capture({nullptr, {bufs[0], bufs[1]}, {}, {}, {}, 0, name});
}

// A kernel launched on its own and waited for: timed (profiling, DEBUG>=2) and/or checked against CHECK's device.
void launch_alone(const ProgramRequest& k, const sched::ScheduleItem& it, const Bufs& bufs,
                  const std::vector<uint8_t>& args, const std::string& check, bool timed) {
  const uint64_t ns = k.device->launch(*k.program, args, k.kir.dims, true);
  if (!check.empty())
    shadow_check(it, bufs, k.kir, k.source.empty() ? k.device->render(k.kir.view()) : k.source, check);
  if (!timed) return;
  KernelRun run{k.kir.name, k.device->name(), ns / 1e6, k.kir.flops / std::max<double>(ns, 1),
                k.kir.bytes / std::max<double>(ns, 1)};
  if (debug_level() >= 2)
    std::fprintf(stderr, "*** %-6s %-28s %9.3f ms %8.2f GFLOP/s %8.2f GB/s\n", run.device.c_str(), run.name.c_str(),
                 run.ms, run.gflops, run.gbps);
  if (profiling()) record(std::move(run));
}

// The items in order: kernels recorded into their device's command buffer (submitted before a copy and at the
// end); a timed or shadow-checked kernel is submitted and waited for on its own.
void record_all(const sched::Schedule& s, const std::vector<Bufs>& bufs, const std::vector<ProgramRequest>& kernels) {
  const bool timed = profiling() || debug_level() >= 2;
  const std::string check = shadow_device();
  Recorder recorder;
  size_t k = 0;
  for (size_t i = 0; i < s.items.size(); ++i) {
    const sched::ScheduleItem& it = s.items[i];
    if (it.kind == sched::ScheduleItem::Kind::COPY) {
      copy(bufs[i], recorder);
      continue;
    }
    if (it.kind == sched::ScheduleItem::Kind::COLLECTIVE) {
      collective(it.kernel.name, bufs[i], recorder);
      continue;
    }
    if (!runs(it, bufs[i])) continue;
    const ProgramRequest& kernel = kernels[k++];
    auto args = pack_args(*kernel.program, bufs[i], it.var_vals);
    ++mutable_schedule_stats().kernels_run;
    if (capturing()) {
      CapturedLaunch c{kernel.program, bufs[i], {}, it.var_vals, kernel.kir.dims, kernel.kir.hash(), {}};
      for (const auto& v : it.kernel.vars) c.var_names.push_back(v->var().name);
      capture(std::move(c));
    }
    const bool shadow = !check.empty() && canonical_device(check) != kernel.device->name();
    if (!timed && !shadow) {
      recorder.record(*kernel.device, *kernel.program, std::move(args), kernel.kir.dims);
      continue;
    }
    recorder.submit(false);  // (in order: what was recorded before this kernel runs before it)
    launch_alone(kernel, it, bufs[i], args, shadow ? check : "", timed);
  }
  recorder.submit(false);
}

}  // namespace

void run_schedule(const sched::Schedule& s, const std::vector<std::shared_ptr<Buffer>>& slots) {
  const Options options = read_options();
  std::vector<Bufs> bufs;  // each item's parameters
  for (const auto& it : s.items) bufs.push_back(item_buffers(it, slots));
  std::vector<ProgramRequest> kernels = lower_all(s, bufs, options);
  fetch_programs(kernels, options.parallel_compile);
  record_all(s, bufs, kernels);
}

}  // namespace tg::rt
