// Kernel launch records for tools (tg demo, benchmarks): what ran, where, how long.
#pragma once

#include <string>
#include <vector>

namespace tg {

struct KernelRun {
  std::string name, device;
  double ms = 0;      // wall time of the launch, queue submit to completion
  double gflops = 0;  // estimated from the kernel's ALU op count
  double gbps = 0;    // buffer bytes touched / time
};

// While on, every launch waits for completion and is recorded (DEBUG>=2 also prints it).
void set_profiling(bool on);
std::vector<KernelRun> take_profile();

struct ScheduleStats {
  size_t kernels_run = 0;
  size_t copies_run = 0;          // copies between devices (a Jit replay counts its copies too)
  size_t peer_copies = 0;         // ... of them, device to device by the plugin (allocator_copy_peer), not via the host
  size_t programs_compiled = 0;   // compiler invocations
  size_t cache_hits = 0;          // programs found in the in-memory cache
  size_t disk_hits = 0;           // binaries found in the disk cache (TG_CACHE_DIR)
  size_t schedules_computed = 0;  // graphs the scheduler cut into kernels
  size_t schedule_memory_hits = 0;  // graphs whose schedule was reused from memory
  size_t schedule_disk_hits = 0;    // ... or from the disk cache
  size_t beam_searches = 0;         // kernels whose lowering BEAM=n searched (not found in memory or on disk)
};
const ScheduleStats& schedule_stats();

}  // namespace tg
