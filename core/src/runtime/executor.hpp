// Runs a schedule: lowers each kernel for its device, compiles what the program cache lacks (in parallel),
// launches in order.
#pragma once

#include <vector>

#include "schedule/schedule.hpp"

namespace tg::rt {

void run_schedule(std::vector<sched::ScheduleItem>& items);

}  // namespace tg::rt
