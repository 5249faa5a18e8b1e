// tg::sdk::DeviceAllocatorSlots: the table's allocator_* slots for a GPU whose buffers are device memory named by
// an address (CUDA's CUdeviceptr, HIP's device pointer): size checks against the device's memory, a real
// allocation for size 0 (every buffer has a distinct address), bounds-checked synchronous copies in and out.
//
// The plugin describes its memory in a hooks struct:
//
//   struct AllocatorHooks {
//     using Device = my::Device;  // has memory_bytes, description, and bind() (makes it current on this thread)
//     static constexpr std::string_view plugin = "mydev";  // messages read "mydev allocator_alloc: ..."
//     static std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL
//     static uint64_t allocate(uint64_t size);                     // the device is bound; throws on failure
//     static void release(uint64_t addr);                          // best effort
//     static void copy_in(uint64_t addr, const void* src, uint64_t size);   // synchronous
//     static void copy_out(void* dst, uint64_t addr, uint64_t size);        // synchronous
//     // (optional, ABI 1.7's allocator_copy_peer) device to device between two of the plugin's devices, synchronous
//     static void copy_peer(Device& dst, uint64_t dst_addr, Device& src, uint64_t src_addr, uint64_t size);
//   };
//   using AllocatorSlots = tg::sdk::DeviceAllocatorSlots<AllocatorHooks>;
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <cstdint>
#include <memory>
#include <string_view>

namespace tg::sdk {

// Throws TG_ERR_INVALID_ARGUMENT unless [offset, offset+size) lies inside the buffer and it has a device address.
inline void check_device_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  check_extent(buffer, offset, size, what);
  if (buffer.addr == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": buffer has no address"));
}

namespace device_allocator_detail {

inline constexpr std::string_view kAlloc = "allocator_alloc", kFree = "allocator_free", kCopyIn = "allocator_copy_in",
                                  kCopyOut = "allocator_copy_out", kCopyPeer = "allocator_copy_peer";

template <class Hooks>
concept CopiesPeer =
    requires(typename Hooks::Device& d) { Hooks::copy_peer(d, uint64_t{}, d, uint64_t{}, uint64_t{}); };

}  // namespace device_allocator_detail

template <class Hooks>
struct DeviceAllocatorSlots {
  template <const std::string_view& Slot>
  static constexpr const char* where = slot_where<Hooks::plugin, Slot>;

  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
    return guard(where<device_allocator_detail::kAlloc>, [&] {
      require(out_buffer, "out_buffer");
      const auto dev = Hooks::device_of(device);
      if (size > dev->memory_bytes)
        throw Error(TG_ERR_OUT_OF_MEMORY,
                    cat("cannot allocate ", size, " bytes: ", dev->description, " has ", dev->memory_bytes, " bytes"));
      dev->bind();
      // Size 0 still gets a real allocation, so every buffer has a distinct address.
      *out_buffer = tg_buffer_desc{Hooks::allocate(size == 0 ? 1 : size), size, nullptr};
    });
  }

  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept {
    guard_void(where<device_allocator_detail::kFree>, [&] {
      if (buffer == nullptr || buffer->addr == 0) return;
      Hooks::device_of(device)->bind();
      Hooks::release(buffer->addr);
    });
  }

  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept {
    return guard(where<device_allocator_detail::kCopyIn>, [&] {
      const auto dev = Hooks::device_of(device);
      check_device_range(*require(dst, "dst"), offset, size, "copy_in");
      if (size == 0) return;
      dev->bind();
      Hooks::copy_in(dst->addr + offset, require(src, "src"), size);
    });
  }

  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept {
    return guard(where<device_allocator_detail::kCopyOut>, [&] {
      const auto dev = Hooks::device_of(device);
      check_device_range(*require(src, "src"), offset, size, "copy_out");
      if (size == 0) return;
      dev->bind();
      Hooks::copy_out(require(dst, "dst"), src->addr + offset, size);
    });
  }

  static tg_status_t copy_peer(tg_device dst_device, const tg_buffer_desc* dst, uint64_t dst_offset,
                               tg_device src_device, const tg_buffer_desc* src, uint64_t src_offset,
                               uint64_t size) noexcept
    requires device_allocator_detail::CopiesPeer<Hooks>
  {
    return guard(where<device_allocator_detail::kCopyPeer>, [&] {
      const auto to = Hooks::device_of(dst_device), from = Hooks::device_of(src_device);
      check_device_range(*require(dst, "dst"), dst_offset, size, "copy_peer");
      check_device_range(*require(src, "src"), src_offset, size, "copy_peer");
      if (size == 0) return;
      Hooks::copy_peer(*to, dst->addr + dst_offset, *from, src->addr + src_offset, size);
    });
  }
};

}  // namespace tg::sdk
