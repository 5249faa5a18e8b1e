// The program cache's three tiers: memory (never freed: releasing programs at exit would call into plugins that
// may already be unloaded), disk (keyed by the rendered source and the exact target: CPU blobs depend on host
// features), and compiling with oneTBB.
#include "runtime/program_cache.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "codegen/lower_cache.hpp"
#include "runtime/beam.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/env.hpp"
#include "runtime/stats.hpp"

namespace tg::rt {

namespace {

using Key = std::pair<uint64_t, std::string>;  // KIR hash, device instance

std::mutex g_mu;
auto& g_programs = *new std::map<Key, std::shared_ptr<Program>>();

Key key_of(const ProgramRequest& r) { return {r.kir.hash(), r.device->name()}; }

// Looks the misses up on disk and compiles the rest; each request gets its blob (equal sources share one).
void fill_blobs(const std::vector<ProgramRequest*>& misses, std::vector<std::vector<uint8_t>>& blobs, int parallel) {
  const DiskCache& disk = DiskCache::get();
  ScheduleStats& stats = mutable_schedule_stats();
  std::vector<uint64_t> disk_key(misses.size());
  std::map<uint64_t, size_t> first_with;  // different KIR can render to the same source: compile it once
  std::vector<size_t> to_compile;
  for (size_t i = 0; i < misses.size(); ++i) {
    const Device& d = *misses[i]->device;
    const std::string target = d.name() + "|" + d.arch() + "|" + d.description() + "|" + d.plugin_build();
    disk_key[i] = fnv1a(target.data(), target.size(), fnv1a(misses[i]->source.data(), misses[i]->source.size()));
    if (!first_with.emplace(disk_key[i], i).second) continue;
    if (auto blob = disk.load("programs", disk_key[i])) {
      blobs[i] = std::move(*blob);
      ++stats.disk_hits;
    } else {
      if (debug_level() >= 3)
        std::fprintf(stderr, "compiling %s: not in the disk cache\n", misses[i]->kir.name.c_str());
      to_compile.push_back(i);
    }
  }
  auto compile_one = [&](size_t j) {
    ProgramRequest& r = *misses[to_compile[j]];
    blobs[to_compile[j]] = r.device->compile(r.source, r.kir.name);
  };
  if (parallel == 1 || to_compile.size() <= 1) {
    for (size_t j = 0; j < to_compile.size(); ++j) compile_one(j);
  } else {
    tbb::task_arena arena(parallel > 0 ? parallel : tbb::task_arena::automatic);
    arena.execute([&] { tbb::parallel_for(size_t{0}, to_compile.size(), compile_one); });
  }
  for (size_t i : to_compile) disk.store("programs", disk_key[i], blobs[i]), ++stats.programs_compiled;
  for (size_t i = 0; i < misses.size(); ++i)
    if (blobs[i].empty()) blobs[i] = blobs[first_with.at(disk_key[i])];
}

}  // namespace

void fetch_programs(std::vector<ProgramRequest>& requests, int parallel) {
  ScheduleStats& stats = mutable_schedule_stats();
  // memory; the rest rendered once per (KIR, device)
  std::map<Key, ProgramRequest*> unique;
  std::vector<ProgramRequest*> misses;
  for (auto& r : requests) {
    {
      std::lock_guard lock(g_mu);
      if (auto f = g_programs.find(key_of(r)); f != g_programs.end()) {
        r.program = f->second, ++stats.cache_hits;
        continue;
      }
    }
    if (!unique.emplace(key_of(r), &r).second) continue;
    r.source = r.device->render(r.kir.view());
    if (debug_level() >= 4) std::fprintf(stderr, "%s\n", r.source.c_str());
    misses.push_back(&r);
  }
  std::vector<std::vector<uint8_t>> blobs(misses.size());
  fill_blobs(misses, blobs, parallel);
  for (size_t i = 0; i < misses.size(); ++i) {
    misses[i]->program = misses[i]->device->load(blobs[i], misses[i]->kir.view());
    std::lock_guard lock(g_mu);
    g_programs[key_of(*misses[i])] = misses[i]->program;
  }
  for (auto& r : requests)
    if (!r.program) r.program = unique.at(key_of(r))->program;
}

void clear_program_cache(const Device* device) {
  codegen::clear_lower_cache(device ? device->name() : "");
  {
    std::lock_guard lock(g_mu);
    std::erase_if(g_programs, [&](const auto& kv) { return !device || kv.second->device == device; });
  }
  if (!device) clear_beam_choices();
}

}  // namespace tg::rt
