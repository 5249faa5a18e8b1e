// The METAL plugin's HWQueue: Metal command buffers need the Metal runtime, so hwqueue_create says it is missing;
// the other slots can only be reached with a queue, which never exists, and say the same.
#include "metal_plugin.hpp"

namespace tg::metal {

namespace {

tg_status_t no_queue(const char* where) {
  return sdk::guard(where, [&] { throw_no_runtime("no Metal command queue"); });
}

}  // namespace

tg_status_t QueueSlots::create(tg_device /*device*/, tg_hwqueue* /*out_queue*/) noexcept { return no_queue("metal hwqueue_create"); }
void QueueSlots::destroy(tg_hwqueue /*queue*/) noexcept {}  // no queue is ever made
tg_status_t QueueSlots::exec(tg_hwqueue /*queue*/, tg_program /*program*/, const void* /*args*/, size_t /*args_size*/,
                         const tg_launch_dims* /*dims*/) noexcept {
  return no_queue("metal hwqueue_exec");
}
tg_status_t QueueSlots::copy(tg_hwqueue /*queue*/, const tg_buffer_desc* /*dst*/, uint64_t /*dst_offset*/,
                         const tg_buffer_desc* /*src*/, uint64_t /*src_offset*/, uint64_t /*size*/) noexcept {
  return no_queue("metal hwqueue_copy");
}
tg_status_t QueueSlots::signal(tg_hwqueue /*queue*/, uint64_t /*value*/) noexcept { return no_queue("metal hwqueue_signal"); }
tg_status_t QueueSlots::timestamp(tg_hwqueue /*queue*/, uint64_t* /*out_slot*/) noexcept { return no_queue("metal hwqueue_timestamp"); }
tg_status_t QueueSlots::submit(tg_hwqueue /*queue*/) noexcept { return no_queue("metal hwqueue_submit"); }
tg_status_t QueueSlots::wait(tg_hwqueue /*queue*/, uint64_t /*value*/, uint64_t /*timeout_ns*/) noexcept {
  return no_queue("metal hwqueue_wait");
}
tg_status_t QueueSlots::read_timestamp(tg_hwqueue /*queue*/, uint64_t /*slot*/, uint64_t* /*out_ns*/) noexcept {
  return no_queue("metal hwqueue_read_timestamp");
}

}  // namespace tg::metal
