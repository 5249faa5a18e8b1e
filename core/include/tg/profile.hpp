// Kernel launch records for tools (tg demo, benchmarks): what ran, where, how long.
#pragma once

#include <string>
#include <vector>

namespace tg {

struct KernelRun {
  std::string name, device;
  double ms = 0;       // wall time of the launch, queue submit to completion
  double gflops = 0;   // estimated from the kernel's ALU op count
  double gbps = 0;     // buffer bytes touched / time
};

// While on, every launch waits for completion and is recorded (DEBUG>=2 also prints it).
void set_profiling(bool on);
std::vector<KernelRun> take_profile();

struct ScheduleStats {
  size_t kernels_run = 0, programs_compiled = 0, cache_hits = 0;
};
const ScheduleStats& schedule_stats();

}  // namespace tg
