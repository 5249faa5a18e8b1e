// The schedule cache: a tensor graph that differs from one scheduled before only in its input buffers and the
// values bound to its variables gets that schedule again, with the new values, instead of being scheduled anew.
// Schedules live in memory and, across processes, in the disk cache (TG_CACHE_DIR, table "schedules"); SCACHE=0
// turns the cache off.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/uop.hpp"
#include "schedule/schedule.hpp"

namespace tg::rt {

// create_schedule() through the cache; `inputs` gets the graph's buffers for its input slots (input_buffers()).
// Without `use_cache` (SCACHE=0) it schedules afresh.
sched::Schedule cached_schedule(const std::vector<ir::UOpPtr>& roots, const std::string& device,
                                std::vector<std::shared_ptr<ir::Payload>>& inputs, bool use_cache = true);

// (hits and misses are counted in tg::schedule_stats())
// Forgets the in-memory schedules (tests use it to exercise the disk tier).
void clear_schedule_cache();

}  // namespace tg::rt
