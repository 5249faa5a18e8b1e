// The METAL plugin's HWQueue: Metal command buffers need the Metal runtime, so hwqueue_create says it is missing;
// the other slots can only be reached with a queue, which never exists, and say the same.
#include "metal_plugin.hpp"

namespace tg::metal {

namespace {

tg_status_t no_queue(const char* where) {
  return sdk::guard(where, [&] { throw_no_runtime("no Metal command queue"); });
}

}  // namespace

tg_status_t hwqueue_create(tg_device /*device*/, tg_hwqueue* /*out_queue*/) { return no_queue("metal hwqueue_create"); }
void hwqueue_destroy(tg_hwqueue /*queue*/) {}  // no queue is ever made
tg_status_t hwqueue_exec(tg_hwqueue /*queue*/, tg_program /*program*/, const void* /*args*/, size_t /*args_size*/,
                         const tg_launch_dims* /*dims*/) {
  return no_queue("metal hwqueue_exec");
}
tg_status_t hwqueue_copy(tg_hwqueue /*queue*/, const tg_buffer_desc* /*dst*/, uint64_t /*dst_offset*/,
                         const tg_buffer_desc* /*src*/, uint64_t /*src_offset*/, uint64_t /*size*/) {
  return no_queue("metal hwqueue_copy");
}
tg_status_t hwqueue_signal(tg_hwqueue /*queue*/, uint64_t /*value*/) { return no_queue("metal hwqueue_signal"); }
tg_status_t hwqueue_timestamp(tg_hwqueue /*queue*/, uint64_t* /*out_slot*/) { return no_queue("metal hwqueue_timestamp"); }
tg_status_t hwqueue_submit(tg_hwqueue /*queue*/) { return no_queue("metal hwqueue_submit"); }
tg_status_t hwqueue_wait(tg_hwqueue /*queue*/, uint64_t /*value*/, uint64_t /*timeout_ns*/) {
  return no_queue("metal hwqueue_wait");
}
tg_status_t hwqueue_read_timestamp(tg_hwqueue /*queue*/, uint64_t /*slot*/, uint64_t* /*out_ns*/) {
  return no_queue("metal hwqueue_read_timestamp");
}

}  // namespace tg::metal
