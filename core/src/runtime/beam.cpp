#include "runtime/beam.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "codegen/search.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/env.hpp"
#include "runtime/launch.hpp"
#include "runtime/stats.hpp"
#include "tg/device.hpp"

namespace tg::rt {

namespace {

std::mutex g_beam_mu;
auto& g_beam = *new std::map<uint64_t, codegen::Opts>();  // by beam_key

uint64_t beam_key(const codegen::KirProgram& base, const Device& dev) {
  const std::string target = dev.name() + "|" + dev.arch() + "|" + dev.plugin_build();
  return fnv1a(target.data(), target.size(), base.hash());
}

// The search space's distinct programs are compiled (in parallel) and each is timed `runs` times on the kernel's
// own buffers (it only writes its outputs, which the real launch writes again). The fastest median wins; a
// candidate that fails to compile or launch is dropped, and one whose first launch takes over 3x the best median so
// far is not timed further (it cannot win; the plain loops of a 2048^3 matmul take seconds a launch, and a search
// over bench_cpu's GEMMs did not finish in 20 minutes timing every candidate 5 times).
codegen::Opts beam_search(const sched::ScheduleItem& it, const std::vector<std::shared_ptr<Buffer>>& bufs, Device& dev,
                          int runs, const codegen::LowerSwitches& switches) {
  std::vector<codegen::KirProgram> cands = codegen::search_space(it.kernel, dev.caps(), switches);
  std::vector<std::string> sources;
  for (auto& c : cands) sources.push_back(dev.render(c.view()));
  std::vector<std::vector<uint8_t>> blobs(cands.size());
  tbb::parallel_for(size_t{0}, cands.size(), [&](size_t i) {
    try {
      blobs[i] = dev.compile(sources[i], cands[i].name);
    } catch (const Error&) {}
  });
  std::vector<double> median(cands.size(), 0);
  size_t best = 0, cut = 0;
  // the heuristic's candidate (0) is timed first, to cut against, and again last, keeping its faster median: the
  // first candidate timed after the compiles ran slower (2048^3 on 1 thread: 99.7 ms first, 83.6 for the same tile
  // without its THREAD, which on one thread is the same work)
  auto time = [&](size_t i) {
    if (blobs[i].empty()) return;
    try {
      auto program = dev.load(blobs[i], cands[i].view());
      auto args = pack_args(*program, bufs, it.var_vals);
      const double first = static_cast<double>(dev.launch(*program, args, cands[i].dims, true));  // warm-up
      if (median[best] > 0 && first > 3 * median[best]) {
        ++cut;
        return;
      }
      std::vector<double> ns;
      for (int r = 0; r < runs; ++r) ns.push_back(static_cast<double>(dev.launch(*program, args, cands[i].dims, true)));
      std::sort(ns.begin(), ns.end());
      median[i] = median[i] > 0 ? std::min(median[i], ns[ns.size() / 2]) : ns[ns.size() / 2];
    } catch (const Error&) {
      return;
    }
    if (median[best] == 0 || median[i] < median[best]) best = i;
  };
  for (size_t i = 0; i < cands.size(); ++i) time(i);
  if (median[0] > 0) time(0);
  if (debug_level() >= 1)
    std::fprintf(stderr,
                 "BEAM %s: %zu candidates (%zu cut after one launch), best %s: %.3f ms (heuristic %s: %.3f ms)\n",
                 it.kernel.name.c_str(), cands.size(), cut, codegen::str(cands[best].opts).c_str(), median[best] / 1e6,
                 codegen::str(cands[0].opts).c_str(), median[0] / 1e6);
  return cands[best].opts;
}

}  // namespace

codegen::Opts beam_choice(const sched::ScheduleItem& it, const std::vector<std::shared_ptr<Buffer>>& bufs, Device& dev,
                          const codegen::KirProgram& base, int runs, const codegen::LowerSwitches& switches) {
  const uint64_t key = beam_key(base, dev);
  {
    std::lock_guard lock(g_beam_mu);
    if (auto f = g_beam.find(key); f != g_beam.end()) return f->second;
  }
  const DiskCache& disk = DiskCache::get();
  // the table's name changes when the lists' meaning does: beam_opts2 since reductions unroll only by UNROLL,
  // beam_opts3 since host kernels run on threads only by THREAD
  constexpr const char* kTable = "beam_opts3";
  std::optional<codegen::Opts> opts;
  if (auto bytes = disk.load(kTable, key)) opts = codegen::decode(*bytes);
  if (!opts) {
    opts = beam_search(it, bufs, dev, runs, switches);
    ++mutable_schedule_stats().beam_searches;
    const std::vector<int32_t> v = codegen::encode(*opts);
    disk.store(kTable, key,
               std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                    reinterpret_cast<const uint8_t*>(v.data() + v.size())));
  }
  std::lock_guard lock(g_beam_mu);
  g_beam[key] = *opts;
  return *opts;
}

void clear_beam_choices() {
  std::lock_guard lock(g_beam_mu);
  g_beam.clear();
}

}  // namespace tg::rt
