// The METAL plugin's Allocator: MTLBuffers need the Metal runtime, so every slot says it is missing (there is no
// device to allocate on in this build).
#include "metal_plugin.hpp"

namespace tg::metal {

tg_status_t AllocatorSlots::alloc(tg_device /*device*/, uint64_t size, tg_buffer_desc* /*out_buffer*/) noexcept {
  return sdk::guard("metal allocator_alloc", [&] { throw_no_runtime(sdk::cat("cannot allocate ", size, " bytes").c_str()); });
}

void AllocatorSlots::free(tg_device /*device*/, const tg_buffer_desc* /*buffer*/) noexcept {}  // nothing was ever allocated

tg_status_t AllocatorSlots::copy_in(tg_device /*device*/, const tg_buffer_desc* /*dst*/, uint64_t /*offset*/,
                              const void* /*src*/, uint64_t size) noexcept {
  return sdk::guard("metal allocator_copy_in", [&] { throw_no_runtime(sdk::cat("cannot copy ", size, " bytes in").c_str()); });
}

tg_status_t AllocatorSlots::copy_out(tg_device /*device*/, void* /*dst*/, const tg_buffer_desc* /*src*/, uint64_t /*offset*/,
                               uint64_t size) noexcept {
  return sdk::guard("metal allocator_copy_out", [&] { throw_no_runtime(sdk::cat("cannot copy ", size, " bytes out").c_str()); });
}

}  // namespace tg::metal
