// The METAL plugin's Allocator: one MTLBuffer per buffer in shared storage (Apple GPUs share the host's memory),
// its object pointer doubling as the buffer's address (the queue binds it back with setBuffer), and copies in and
// out through `contents` with memcpy. Synchronous: the core waits for the queue before it touches a buffer.
#include "metal_plugin.hpp"

#include <algorithm>
#include <cstring>

namespace tg::metal {

using sdk::cat;
using sdk::Error;

void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  sdk::check_extent(buffer, offset, size, what);
  if (buffer.handle == nullptr) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": buffer has no MTLBuffer"));
}

namespace {

unsigned char* contents(const tg_buffer_desc& buffer) {
  auto* base = static_cast<unsigned char*>(send(buffer.handle, "contents"));
  if (base == nullptr) throw Error(TG_ERR_INTERNAL, "MTLBuffer contents is NULL: the buffer is not in shared storage");
  return base;
}

}  // namespace

tg_status_t AllocatorSlots::alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
  return sdk::guard("metal allocator_alloc", [&] {
    sdk::require(out_buffer, "out_buffer");
    const std::shared_ptr<Device> dev = device_of(device);
    if (size > dev->max_buffer_bytes)
      throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes: ", dev->description, " takes at most ",
                                            dev->max_buffer_bytes, " bytes in one buffer"));
    // Size 0 still gets a real MTLBuffer (Metal refuses empty ones), so every buffer has a distinct address.
    id buffer = send(dev->device.get(), "newBufferWithLength:options:", std::max<uint64_t>(size, 1),
                     kMTLResourceStorageModeShared);
    if (buffer == nullptr)
      throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size,
                                            " bytes: newBufferWithLength:options: returned nil on ", dev->description));
    *out_buffer = tg_buffer_desc{reinterpret_cast<uint64_t>(buffer), size, buffer};
  });
}

void AllocatorSlots::free(tg_device /*device*/, const tg_buffer_desc* buffer) noexcept {
  sdk::guard_void("metal allocator_free", [&] {
    if (buffer == nullptr || buffer->handle == nullptr) return;
    Release()(buffer->handle);
  });
}

tg_status_t AllocatorSlots::copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                                    uint64_t size) noexcept {
  return sdk::guard("metal allocator_copy_in", [&] {
    device_of(device);
    check_range(*sdk::require(dst, "dst"), offset, size, "copy_in");
    if (size == 0) return;
    std::memcpy(contents(*dst) + offset, sdk::require(src, "src"), size);
  });
}

tg_status_t AllocatorSlots::copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                                     uint64_t size) noexcept {
  return sdk::guard("metal allocator_copy_out", [&] {
    device_of(device);
    check_range(*sdk::require(src, "src"), offset, size, "copy_out");
    if (size == 0) return;
    std::memcpy(sdk::require(dst, "dst"), contents(*src) + offset, size);
  });
}

}  // namespace tg::metal
