// The SKELETON plugin's Allocator. Fill in: device memory and copies to and from the host. A device whose
// buffers are host memory takes tg/sdk/host_allocator.hpp's HostAllocatorSlots as they are.
#include "skeleton.hpp"

namespace tg::skeleton {

tg_status_t AllocatorSlots::alloc(tg_device, uint64_t, tg_buffer_desc*) noexcept {
  return sdk::guard("skeleton allocator_alloc",
                    [] { not_implemented("allocator_alloc (<size> bytes of device memory)"); });
}
void AllocatorSlots::free(tg_device, const tg_buffer_desc*) noexcept {}  // nothing was allocated
tg_status_t AllocatorSlots::copy_in(tg_device, const tg_buffer_desc*, uint64_t, const void*, uint64_t) noexcept {
  return sdk::guard("skeleton allocator_copy_in", [] { not_implemented("allocator_copy_in (host -> device)"); });
}
tg_status_t AllocatorSlots::copy_out(tg_device, void*, const tg_buffer_desc*, uint64_t, uint64_t) noexcept {
  return sdk::guard("skeleton allocator_copy_out", [] { not_implemented("allocator_copy_out (device -> host)"); });
}

}  // namespace tg::skeleton
