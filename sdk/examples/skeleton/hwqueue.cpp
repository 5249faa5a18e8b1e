// The SKELETON plugin's HWQueue. Fill in: commands recorded (exec, copy, signal, timestamp), then submitted; a
// signal is a 64-bit value that only grows, and wait blocks until it is reached. A device that runs kernels on the
// host takes tg/sdk/host_queue.hpp's HostQueue and supplies only how one exec runs.
#include "skeleton.hpp"

namespace tg::skeleton {

tg_status_t QueueSlots::create(tg_device, tg_hwqueue*) noexcept {
  return sdk::guard("skeleton hwqueue_create", [] { not_implemented("hwqueue_create (a command queue)"); });
}
void QueueSlots::destroy(tg_hwqueue) noexcept {}  // nothing was created
tg_status_t QueueSlots::exec(tg_hwqueue, tg_program, const void*, size_t, const tg_launch_dims*) noexcept {
  return sdk::guard("skeleton hwqueue_exec", [] { not_implemented("hwqueue_exec (record a launch)"); });
}
tg_status_t QueueSlots::copy(tg_hwqueue, const tg_buffer_desc*, uint64_t, const tg_buffer_desc*, uint64_t,
                             uint64_t) noexcept {
  return sdk::guard("skeleton hwqueue_copy", [] { not_implemented("hwqueue_copy (record a device copy)"); });
}
tg_status_t QueueSlots::signal(tg_hwqueue, uint64_t) noexcept {
  return sdk::guard("skeleton hwqueue_signal", [] { not_implemented("hwqueue_signal (record: set the signal)"); });
}
tg_status_t QueueSlots::timestamp(tg_hwqueue, uint64_t*) noexcept {
  return sdk::guard("skeleton hwqueue_timestamp", [] { not_implemented("hwqueue_timestamp (record a time stamp)"); });
}
tg_status_t QueueSlots::submit(tg_hwqueue) noexcept {
  return sdk::guard("skeleton hwqueue_submit", [] { not_implemented("hwqueue_submit (run what was recorded)"); });
}
tg_status_t QueueSlots::wait(tg_hwqueue, uint64_t, uint64_t) noexcept {
  return sdk::guard("skeleton hwqueue_wait", [] { not_implemented("hwqueue_wait (block until the signal)"); });
}
tg_status_t QueueSlots::read_timestamp(tg_hwqueue, uint64_t, uint64_t*) noexcept {
  return sdk::guard("skeleton hwqueue_read_timestamp",
                    [] { not_implemented("hwqueue_read_timestamp (ns of a stamp)"); });
}

}  // namespace tg::skeleton
