// The CPU plugin's Allocator: 64-byte aligned host memory, so a buffer's device address is a host pointer, and
// bounds-checked copies in and out.
#include "cpu_plugin.hpp"

#include <cstdint>
#include <cstring>
#include <new>

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

constexpr size_t kAlignment = 64;  // a cache line, and enough for any vector load the renderer emits

tg_status_t allocator_alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) {
  return sdk::guard("cpu allocator_alloc", [&] {
    sdk::require(out_buffer, "out_buffer");
    const std::shared_ptr<Device> dev = device_of(device);
    // More than the machine's RAM cannot be served; refuse before asking (sanitizer allocators abort instead of
    // returning NULL for absurd sizes).
    if (dev->memory_bytes != 0 && size > dev->memory_bytes)
      throw Error(TG_ERR_OUT_OF_MEMORY,
                  cat("cannot allocate ", size, " bytes: the host has ", dev->memory_bytes, " bytes of memory"));
    // Size 0 still gets a real allocation, so every buffer has a distinct, freeable address.
    void* memory = nullptr;
    if (size <= SIZE_MAX - kAlignment) {
      const size_t bytes = (static_cast<size_t>(size) + kAlignment - 1) / kAlignment * kAlignment;
      memory = ::operator new (bytes == 0 ? kAlignment : bytes, std::align_val_t{kAlignment}, std::nothrow);
    }
    if (memory == nullptr) throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes of host memory"));
    *out_buffer = tg_buffer_desc{reinterpret_cast<uint64_t>(memory), size, memory};
  });
}

void allocator_free(tg_device device, const tg_buffer_desc* buffer) {
  sdk::guard_void("cpu allocator_free", [&] {
    if (buffer != nullptr && buffer->handle != nullptr)
      ::operator delete (buffer->handle, std::align_val_t{kAlignment});
  });
}

tg_status_t allocator_copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                              uint64_t size) {
  return sdk::guard("cpu allocator_copy_in", [&] {
    device_of(device);
    sdk::check_range(*sdk::require(dst, "dst"), offset, size, "copy_in");
    if (size == 0) return;
    std::memcpy(reinterpret_cast<char*>(dst->addr) + offset, sdk::require(src, "src"), size);
  });
}

tg_status_t allocator_copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset, uint64_t size) {
  return sdk::guard("cpu allocator_copy_out", [&] {
    device_of(device);
    sdk::check_range(*sdk::require(src, "src"), offset, size, "copy_out");
    if (size == 0) return;
    std::memcpy(sdk::require(dst, "dst"), reinterpret_cast<const char*>(src->addr) + offset, size);
  });
}

}  // namespace tg::cpu
