// What the runtime counts and times (tg/profile.hpp reports it): counters for the caches and launches, and the
// per-launch records kept while profiling is on.
#pragma once

#include "tg/profile.hpp"

namespace tg::rt {

// The counters tg::schedule_stats() reports, for the parts of the runtime that count.
ScheduleStats& mutable_schedule_stats();

// Whether launches are timed and recorded (set_profiling); record() keeps one.
bool profiling();
void record(KernelRun run);

}  // namespace tg::rt
