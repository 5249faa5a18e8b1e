// The memory planner: binds a schedule's buffer slots to device buffers.
#pragma once

#include <memory>
#include <vector>

#include "runtime/buffer.hpp"
#include "schedule/schedule.hpp"

namespace tg::rt {

// One buffer per slot: the input slots are `inputs` (input_buffers() of the scheduled graph, in order); outputs and
// temporaries are allocated on their devices. A temporary takes over the buffer of an earlier one whose last use
// came before its first (same device, dtype and length), so a chain of kernels does not hold every intermediate.
std::vector<std::shared_ptr<Buffer>> plan_memory(const sched::Schedule& s,
                                                 const std::vector<std::shared_ptr<ir::Payload>>& inputs);

// The buffers of one item's parameters (COPY: {dst, src}), from the planned slots.
std::vector<std::shared_ptr<Buffer>> item_buffers(const sched::ScheduleItem& item,
                                                  const std::vector<std::shared_ptr<Buffer>>& slots);

}  // namespace tg::rt
