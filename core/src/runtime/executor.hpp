// Runs a schedule: lowers each kernel for its device, compiles what the program cache lacks (in parallel),
// launches in order.
#pragma once

#include <vector>

#include "schedule/schedule.hpp"

namespace tg::rt {

void run_schedule(std::vector<sched::ScheduleItem>& items);

// The packed argument blob of a launch (buffers, then variable values).
std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals);

}  // namespace tg::rt
