// Runs a schedule: lowers each kernel for its device, compiles what the program cache lacks (in parallel),
// launches in order.
#pragma once

#include <vector>

#include "schedule/schedule.hpp"
#include "tg/profile.hpp"

namespace tg::rt {

class Device;

// The counters tg::schedule_stats() reports, for the parts of the runtime that count.
ScheduleStats& mutable_schedule_stats();

void run_schedule(std::vector<sched::ScheduleItem>& items);

// One launch (or copy) as the JIT records it.
struct CapturedLaunch {
  std::shared_ptr<Program> program;               // null for a copy
  std::vector<std::shared_ptr<Buffer>> bufs;      // kernel params; copies: {dst, src}
  std::vector<std::string> var_names;             // kernel variables, in parameter order
  std::vector<int64_t> var_vals;
  tg_launch_dims dims{};
  uint64_t kir_hash = 0;
};

// While set (per thread), run_schedule appends every launch it makes to *sink; nullptr stops capturing.
void set_capture(std::vector<CapturedLaunch>* sink);

// Forgets the in-memory programs of one device instance, or of all together with the BEAM choices (tests and
// benchmarks use it to exercise the disk cache; unload_plugin before closing a device).
void clear_program_cache(const Device* device = nullptr);

// The packed argument blob of a launch (buffers, then variable values).
std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals);

}  // namespace tg::rt
