// The runtime's counters and profile records (process-wide; the records under a lock, launches may come from
// several threads).
#include "runtime/stats.hpp"

#include <atomic>
#include <mutex>
#include <utility>

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
bool rt::profiling() { return g_profiling; }
void rt::record(KernelRun run) {
  std::lock_guard lock(g_profile_mu);
  g_profile.push_back(std::move(run));
}

}  // namespace tg
