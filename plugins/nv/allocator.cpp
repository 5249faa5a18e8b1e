// The NV plugin's Allocator: cuMemAlloc'ed device memory (a buffer's address is its CUdeviceptr) and synchronous,
// bounds-checked copies in and out.
#include "nv_plugin.hpp"

namespace tg::nv {

using sdk::cat;
using sdk::Error;

void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  if (offset > buffer.size || size > buffer.size - offset)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": offset ", offset, " + size ", size, " is past the end of a ",
                                             buffer.size, "-byte buffer"));
  if (buffer.addr == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": buffer has no address"));
}

tg_status_t AllocatorSlots::alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
  return sdk::guard("nv allocator_alloc", [&] {
    sdk::require(out_buffer, "out_buffer");
    const std::shared_ptr<Device> dev = device_of(device);
    if (size > dev->memory_bytes)
      throw Error(TG_ERR_OUT_OF_MEMORY,
                  cat("cannot allocate ", size, " bytes: ", dev->description, " has ", dev->memory_bytes, " bytes"));
    dev->bind();
    CUdeviceptr ptr = 0;
    // Size 0 still gets a real allocation, so every buffer has a distinct address.
    check_cu(cuda().cuMemAlloc(&ptr, size == 0 ? 1 : size), "cuMemAlloc");
    *out_buffer = tg_buffer_desc{ptr, size, nullptr};
  });
}

void AllocatorSlots::free(tg_device device, const tg_buffer_desc* buffer) noexcept {
  sdk::guard_void("nv allocator_free", [&] {
    if (buffer == nullptr || buffer->addr == 0) return;
    device_of(device)->bind();
    cuda().cuMemFree(buffer->addr);
  });
}

tg_status_t AllocatorSlots::copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                                    uint64_t size) noexcept {
  return sdk::guard("nv allocator_copy_in", [&] {
    const std::shared_ptr<Device> dev = device_of(device);
    check_range(*sdk::require(dst, "dst"), offset, size, "copy_in");
    if (size == 0) return;
    dev->bind();
    check_cu(cuda().cuMemcpyHtoD(dst->addr + offset, sdk::require(src, "src"), size), "cuMemcpyHtoD");
  });
}

tg_status_t AllocatorSlots::copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                                     uint64_t size) noexcept {
  return sdk::guard("nv allocator_copy_out", [&] {
    const std::shared_ptr<Device> dev = device_of(device);
    check_range(*sdk::require(src, "src"), offset, size, "copy_out");
    if (size == 0) return;
    dev->bind();
    check_cu(cuda().cuMemcpyDtoH(sdk::require(dst, "dst"), src->addr + offset, size), "cuMemcpyDtoH");
  });
}

}  // namespace tg::nv
