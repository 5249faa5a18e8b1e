// Schedule execution: codegen per kernel, the in-memory program cache, parallel compile with oneTBB, launches.
#include "runtime/executor.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "codegen/lower.hpp"
#include "codegen/lower_cache.hpp"
#include "codegen/verify.hpp"
#include "runtime/beam.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/env.hpp"
#include "runtime/options.hpp"
#include "runtime/shadow_check.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/profile.hpp"

namespace tg {

namespace {
std::atomic<bool> g_profiling{false};
std::mutex g_profile_mu;
std::vector<KernelRun> g_profile;
ScheduleStats g_stats;
}  // namespace

void set_profiling(bool on) { g_profiling = on; }
std::vector<KernelRun> take_profile() {
  std::lock_guard lock(g_profile_mu);
  return std::exchange(g_profile, {});
}
const ScheduleStats& schedule_stats() { return g_stats; }

ScheduleStats& rt::mutable_schedule_stats() { return g_stats; }

}  // namespace tg

namespace tg::rt {

namespace {

struct CacheKey {
  uint64_t hash;
  std::string device;
  auto operator<=>(const CacheKey&) const = default;
};

thread_local std::vector<CapturedLaunch>* t_capture = nullptr;

std::mutex g_cache_mu;
// never destroyed: releasing programs at exit would call into plugins that may already be unloaded
auto& g_programs = *new std::map<CacheKey, std::shared_ptr<Program>>();

struct Prepared {
  sched::ScheduleItem* item;
  Device* device;
  codegen::KirProgram kir;
  std::shared_ptr<Program> program;
  std::string source;
  std::vector<uint8_t> blob;
  uint64_t disk_key = 0;
};

}  // namespace

std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals);

// Buffers as 64-bit addresses, then variables at their own width (little endian: the low bytes of the value).
std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals) {
  std::vector<uint8_t> args(p.signature.args_size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    uint64_t addr = bufs[i]->desc().addr;
    std::memcpy(args.data() + p.signature.offsets()[i], &addr, sizeof(addr));
  }
  for (size_t j = 0; j < var_vals.size(); ++j) {
    size_t i = bufs.size() + j;
    std::memcpy(args.data() + p.signature.offsets()[i], &var_vals[j], tg_param_size(&p.signature.params()[i]));
  }
  return args;
}

void set_capture(std::vector<CapturedLaunch>* sink) { t_capture = sink; }

void clear_program_cache(const Device* device) {
  codegen::clear_lower_cache(device ? device->name() : "");
  {
    std::lock_guard lock(g_cache_mu);
    std::erase_if(g_programs, [&](const auto& kv) { return !device || kv.second->device == device; });
  }
  if (!device) clear_beam_choices();
}

void run_schedule(std::vector<sched::ScheduleItem>& items) {
  const Options options = read_options();
  const codegen::LowerSwitches switches{options.images, options.tensor_cores, options.check_ir, debug_level(),
                                        options.time_passes};
  // 1. codegen (serial: cheap) and cache lookup
  std::vector<Prepared> prepared;
  for (auto& it : items) {
    if (it.kind != sched::ScheduleItem::Kind::KERNEL || it.bufs[0]->numel() == 0) continue;
    Device& dev = it.bufs[0]->device();
    sched::describe_buffers(it);  // codegen sees the bound buffers' dtypes and sizes, never the buffers
    // NOOPT: the plain loop nest (no vectors, no register tiles); a custom kernel is lowered as written anyway
    const codegen::LowerOpts base =
        options.noopt && !it.kernel.custom ? codegen::plain_loops(switches) : codegen::LowerOpts{.switches = switches};
    Prepared p{&it, &dev, codegen::lower_kernel_cached(it.kernel, dev.caps(), dev.name(), base), nullptr, {}, {}};
    if (options.beam > 0 && !options.noopt && !it.kernel.custom) {
      const codegen::Opts best = beam_choice(it, dev, p.kir, options.beam, switches);
      try {
        if (best != p.kir.opts) p.kir = codegen::lower_kernel_cached(it.kernel, dev.caps(), dev.name(), {best, switches});
      } catch (const codegen::OptError&) {  // a remembered list this kernel does not take (a damaged cache): the heuristic's
      }
    }
    if (options.check_ir) codegen::verify_lowered(p.kir);  // the ABI's KIR rules
    if (debug_level() >= 3)
      std::fprintf(stderr, "kernel %s: opts %s\n  %s\n", p.kir.name.c_str(), codegen::str(p.kir.opts).c_str(),
                   it.kernel.sink->str(12).c_str());
    if (debug_level() >= 5) std::fprintf(stderr, "%s", p.kir.dump().c_str());
    {
      std::lock_guard lock(g_cache_mu);
      if (auto f = g_programs.find({p.kir.hash(), dev.name()}); f != g_programs.end()) p.program = f->second, ++g_stats.cache_hits;
    }
    prepared.push_back(std::move(p));
  }
  // 2. render (serial per device) and compile the misses in parallel
  std::vector<Prepared*> misses;
  std::map<std::pair<uint64_t, std::string>, Prepared*> unique;
  for (auto& p : prepared) {
    if (p.program) continue;
    auto key = std::make_pair(p.kir.hash(), p.device->name());
    if (unique.count(key)) continue;
    unique[key] = &p;
    p.source = p.device->render(p.kir.view());
    if (debug_level() >= 4) std::fprintf(stderr, "%s\n", p.source.c_str());
    misses.push_back(&p);
  }
  // 2b. the disk cache, keyed by the rendered source and the exact target (CPU blobs depend on host features)
  const DiskCache& disk = DiskCache::get();
  std::vector<Prepared*> to_compile;
  std::map<uint64_t, Prepared*> same_source;  // different KIR can render to the same source: compile it once
  for (auto* m : misses) {
    std::string target = m->device->name() + "|" + m->device->arch() + "|" + m->device->description() + "|" + m->device->plugin_build();
    m->disk_key = fnv1a(target.data(), target.size(), fnv1a(m->source.data(), m->source.size()));
    if (!same_source.emplace(m->disk_key, m).second) continue;
    if (auto blob = disk.load("programs", m->disk_key)) {
      m->blob = std::move(*blob);
      ++g_stats.disk_hits;
    } else {
      if (debug_level() >= 3) std::fprintf(stderr, "compiling %s: not in the disk cache\n", m->kir.name.c_str());
      to_compile.push_back(m);
    }
  }
  // 2c. compile the rest, PARALLEL_COMPILE=N at a time (default: all cores)
  const int par = options.parallel_compile;
  auto compile_one = [&](size_t i) { to_compile[i]->blob = to_compile[i]->device->compile(to_compile[i]->source, to_compile[i]->kir.name); };
  if (par == 1 || to_compile.size() <= 1) {
    for (size_t i = 0; i < to_compile.size(); ++i) compile_one(i);
  } else {
    tbb::task_arena arena(par > 0 ? par : tbb::task_arena::automatic);
    arena.execute([&] { tbb::parallel_for(size_t{0}, to_compile.size(), compile_one); });
  }
  for (auto* m : to_compile) {
    disk.store("programs", m->disk_key, m->blob);
    ++g_stats.programs_compiled;
  }
  for (auto* m : misses)
    if (m->blob.empty()) m->blob = same_source.at(m->disk_key)->blob;
  for (auto* m : misses) {
    m->program = m->device->load(m->blob, m->kir.view());
    std::lock_guard lock(g_cache_mu);
    g_programs[{m->kir.hash(), m->device->name()}] = m->program;
  }
  for (auto& p : prepared)
    if (!p.program) p.program = unique.at({p.kir.hash(), p.device->name()})->program;

  // 3. record in order: one command buffer per device, submitted once (before a copy reads what it wrote, and at
  // the end); a timed or shadow-checked kernel is submitted and waited for on its own
  bool timed = g_profiling || debug_level() >= 2;
  std::map<Device*, std::vector<Device::LaunchCmd>> recorded;
  std::deque<std::vector<uint8_t>> recorded_args;  // stable addresses until the submit
  auto submit_recorded = [&](bool sync) {
    for (auto& [dev, cmds] : recorded) dev->launch_batch(cmds, sync);
    recorded.clear(), recorded_args.clear();
  };
  size_t pi = 0;
  for (auto& it : items) {
    if (it.kind == sched::ScheduleItem::Kind::COPY) {
      submit_recorded(true);
      auto& dst = it.bufs[0];
      auto& src = it.bufs[1];
      std::vector<uint8_t> host(src->nbytes());
      src->copy_out(host.data(), host.size());
      dst->copy_in(host.data(), host.size());
      if (t_capture) t_capture->push_back({nullptr, {dst, src}, {}, {}, {}, 0});
      continue;
    }
    if (it.bufs[0]->numel() == 0) continue;
    Prepared& p = prepared[pi++];
    auto args = pack_args(*p.program, it.bufs, it.var_vals);
    std::string check = shadow_device();
    bool shadow = !check.empty() && canonical_device(check) != p.device->name();
    ++g_stats.kernels_run;
    if (t_capture) {
      CapturedLaunch c{p.program, it.bufs, {}, it.var_vals, p.kir.dims, p.kir.hash()};
      for (const auto& v : it.kernel.vars) c.var_names.push_back(v->var().name);
      t_capture->push_back(std::move(c));
    }
    if (!timed && !shadow) {
      recorded[p.device].push_back({p.program.get(), &recorded_args.emplace_back(std::move(args)), p.kir.dims});
      continue;
    }
    submit_recorded(false);  // (in order: what was recorded before this kernel runs before it)
    uint64_t ns = p.device->launch(*p.program, args, p.kir.dims, true);
    if (shadow) shadow_check(it, p.kir, p.source.empty() ? p.device->render(p.kir.view()) : p.source, check);
    if (!timed) continue;
    KernelRun run{p.kir.name, p.device->name(), ns / 1e6, p.kir.flops / std::max<double>(ns, 1), p.kir.bytes / std::max<double>(ns, 1)};
    if (debug_level() >= 2)
      std::fprintf(stderr, "*** %-6s %-28s %9.3f ms %8.2f GFLOP/s %8.2f GB/s\n", run.device.c_str(), run.name.c_str(), run.ms,
                   run.gflops, run.gbps);
    if (g_profiling) {
      std::lock_guard lock(g_profile_mu);
      g_profile.push_back(run);
    }
  }
  submit_recorded(false);
}

}  // namespace tg::rt
