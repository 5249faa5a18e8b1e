// The INTERP plugin's Allocator: 64-byte aligned host memory (a buffer's device address is a host pointer), with
// every allocation recorded so that kernel launches can check each load and store against its buffer's bounds.
#include "interp_plugin.hpp"

#include <cstring>
#include <new>

namespace tg::interp {

using sdk::cat;
using sdk::Error;

constexpr size_t kAlignment = 64;  // a cache line; any vector access the core emits is aligned to less

uint64_t Device::allocation_size(uint64_t addr, const std::string& what) {
  std::lock_guard lock(allocations_mutex);
  const auto it = allocations.find(addr);
  if (it == allocations.end())
    throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, " (address 0x", std::hex, addr, std::dec,
                                             ") is not the start of a buffer allocated on this INTERP device"));
  return it->second;
}

tg_status_t allocator_alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) {
  return sdk::guard("interp allocator_alloc", [&] {
    sdk::require(out_buffer, "out_buffer");
    const std::shared_ptr<Device> dev = device_of(device);
    // Refuse what the machine cannot hold before asking (sanitizer allocators abort on absurd sizes).
    if (dev->memory_bytes != 0 && size > dev->memory_bytes)
      throw Error(TG_ERR_OUT_OF_MEMORY,
                  cat("cannot allocate ", size, " bytes: the host has ", dev->memory_bytes, " bytes of memory"));
    // Size 0 still gets a real allocation, so every buffer has a distinct address the bounds map can hold.
    const size_t bytes = (static_cast<size_t>(size) + kAlignment - 1) / kAlignment * kAlignment;
    void* memory = ::operator new (bytes == 0 ? kAlignment : bytes, std::align_val_t{kAlignment}, std::nothrow);
    if (memory == nullptr) throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes of host memory"));
    const auto addr = reinterpret_cast<uint64_t>(memory);
    try {
      std::lock_guard lock(dev->allocations_mutex);
      dev->allocations[addr] = size;
    } catch (...) {
      ::operator delete (memory, std::align_val_t{kAlignment});
      throw;
    }
    *out_buffer = tg_buffer_desc{addr, size, memory};
  });
}

void allocator_free(tg_device device, const tg_buffer_desc* buffer) {
  sdk::guard_void("interp allocator_free", [&] {
    if (buffer == nullptr || buffer->handle == nullptr) return;
    const std::shared_ptr<Device> dev = device_of(device);
    {
      std::lock_guard lock(dev->allocations_mutex);
      dev->allocations.erase(reinterpret_cast<uint64_t>(buffer->handle));
    }
    ::operator delete (buffer->handle, std::align_val_t{kAlignment});
  });
}

tg_status_t allocator_copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                              uint64_t size) {
  return sdk::guard("interp allocator_copy_in", [&] {
    device_of(device);
    sdk::check_range(*sdk::require(dst, "dst"), offset, size, "copy_in");
    if (size == 0) return;
    std::memcpy(reinterpret_cast<char*>(dst->addr) + offset, sdk::require(src, "src"), size);
  });
}

tg_status_t allocator_copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset, uint64_t size) {
  return sdk::guard("interp allocator_copy_out", [&] {
    device_of(device);
    sdk::check_range(*sdk::require(src, "src"), offset, size, "copy_out");
    if (size == 0) return;
    std::memcpy(sdk::require(dst, "dst"), reinterpret_cast<const char*>(src->addr) + offset, size);
  });
}

}  // namespace tg::interp
