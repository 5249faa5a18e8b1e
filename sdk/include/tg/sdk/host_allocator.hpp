// tg::sdk::HostAllocatorSlots: the allocator_* slots of a device whose buffers are host memory (a buffer's
// device address is a host pointer): 64-byte aligned allocations, refused above the device's memory size, copies
// bounds-checked, and (ABI 1.7) peer copies between two of the plugin's devices as one memcpy. The plugin supplies a
// hooks struct:
//
//   struct AllocatorHooks {
//     using Device = my::Device;                                 // has `memory_bytes` (0: no limit known)
//     static constexpr std::string_view plugin = "mydev";        // starts every message: "mydev allocator_alloc: ..."
//     static std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL
//     // (optional) told of each allocation and free, e.g. to bounds-check launches (INTERP records them)
//     static void on_alloc(Device& device, uint64_t addr, uint64_t size);
//     static void on_free(Device& device, uint64_t addr);
//   };
//   .allocator_alloc = tg::sdk::HostAllocatorSlots<my::AllocatorHooks>::alloc,  (and free, copy_in, copy_out)
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/status.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string_view>

namespace tg::sdk {

namespace host_allocator_detail {

inline constexpr std::string_view kAlloc = "allocator_alloc", kFree = "allocator_free", kCopyIn = "allocator_copy_in",
                                  kCopyOut = "allocator_copy_out", kCopyPeer = "allocator_copy_peer";

template <class Hooks>
concept Tracks = requires(typename Hooks::Device& d) {
  Hooks::on_alloc(d, uint64_t{}, uint64_t{});
  Hooks::on_free(d, uint64_t{});
};

}  // namespace host_allocator_detail

template <class Hooks>
struct HostAllocatorSlots {
  static constexpr size_t kAlignment = 64;  // a cache line; any vector access the core emits is aligned to less

  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
    return guard(slot_where<Hooks::plugin, host_allocator_detail::kAlloc>, [&] {
      require(out_buffer, "out_buffer");
      const auto dev = Hooks::device_of(device);
      // Refuse what the machine cannot hold before asking (sanitizer allocators abort on absurd sizes).
      if (dev->memory_bytes != 0 && size > dev->memory_bytes)
        throw Error(TG_ERR_OUT_OF_MEMORY,
                    cat("cannot allocate ", size, " bytes: the host has ", dev->memory_bytes, " bytes of memory"));
      if (size > SIZE_MAX - kAlignment) throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes"));
      // Size 0 still gets a real allocation, so every buffer has a distinct address.
      const size_t bytes = (static_cast<size_t>(size) + kAlignment - 1) / kAlignment * kAlignment;
      void* memory = ::operator new(bytes == 0 ? kAlignment : bytes, std::align_val_t{kAlignment}, std::nothrow);
      if (memory == nullptr) throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes of host memory"));
      const auto addr = reinterpret_cast<uint64_t>(memory);
      if constexpr (host_allocator_detail::Tracks<Hooks>) {
        try {
          Hooks::on_alloc(*dev, addr, size);
        } catch (...) {
          ::operator delete(memory, std::align_val_t{kAlignment});
          throw;
        }
      }
      *out_buffer = tg_buffer_desc{addr, size, memory};
    });
  }

  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept {
    guard_void(slot_where<Hooks::plugin, host_allocator_detail::kFree>, [&] {
      if (buffer == nullptr || buffer->handle == nullptr) return;
      if constexpr (host_allocator_detail::Tracks<Hooks>)
        Hooks::on_free(*Hooks::device_of(device), reinterpret_cast<uint64_t>(buffer->handle));
      ::operator delete(buffer->handle, std::align_val_t{kAlignment});
    });
  }

  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept {
    return guard(slot_where<Hooks::plugin, host_allocator_detail::kCopyIn>, [&] {
      Hooks::device_of(device);
      check_range(*require(dst, "dst"), offset, size, "copy_in");
      if (size == 0) return;
      std::memcpy(reinterpret_cast<char*>(dst->addr) + offset, require(src, "src"), size);
    });
  }

  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept {
    return guard(slot_where<Hooks::plugin, host_allocator_detail::kCopyOut>, [&] {
      Hooks::device_of(device);
      check_range(*require(src, "src"), offset, size, "copy_out");
      if (size == 0) return;
      std::memcpy(require(dst, "dst"), reinterpret_cast<const char*>(src->addr) + offset, size);
    });
  }

  static tg_status_t copy_peer(tg_device dst_device, const tg_buffer_desc* dst, uint64_t dst_offset,
                               tg_device src_device, const tg_buffer_desc* src, uint64_t src_offset,
                               uint64_t size) noexcept {
    return guard(slot_where<Hooks::plugin, host_allocator_detail::kCopyPeer>, [&] {
      Hooks::device_of(dst_device), Hooks::device_of(src_device);
      check_range(*require(dst, "dst"), dst_offset, size, "copy_peer");
      check_range(*require(src, "src"), src_offset, size, "copy_peer");
      if (size == 0) return;
      std::memmove(reinterpret_cast<char*>(dst->addr) + dst_offset,
                   reinterpret_cast<const char*>(src->addr) + src_offset, size);
    });
  }
};

}  // namespace tg::sdk
