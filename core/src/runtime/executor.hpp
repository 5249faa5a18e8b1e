// Runs a schedule: lowers each kernel for its device, fetches or compiles the programs (program_cache.hpp), and
// records the launches in order (launch.hpp).
#pragma once

#include <memory>
#include <vector>

#include "runtime/buffer.hpp"
#include "schedule/schedule.hpp"

namespace tg::rt {

// Runs the items of `s` with its slots bound to `bufs` (plan_memory).
void run_schedule(const sched::Schedule& s, const std::vector<std::shared_ptr<Buffer>>& bufs);

}  // namespace tg::rt
