// The CPU plugin's Allocator: 64-byte aligned host memory, so a buffer's device address is a host pointer; large
// buffers are mappings of their own. The bounds-checked copies in and out are the SDK's (tg/sdk/host_allocator.hpp).
#include "cpu_plugin.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

// Large buffers are mapped pages of their own, returned to the system when freed, except for freed ones kept
// (up to kCacheBytes) for reuse by size. Through malloc they stayed in its heap once freed (glibc raises its mmap
// threshold after each such free): Gemma 3 270M's 256-token prefill left ~45 MB there, peak RSS 375 MB;
// unmapping every one instead made the next layer fault its pages in again (prefill 320 -> 236 tok/s). Layers
// repeat their sizes, so the cache keeps both: peak RSS 346 MB, prefill as fast (cache of 8 MB: 285 tok/s).
constexpr size_t kMappedFrom = 256 << 10, kPage = 4096, kCacheBytes = 48 << 20;

class MappedBuffers {
 public:
  static MappedBuffers& get() {
    static MappedBuffers* instance = new MappedBuffers;  // never destroyed: buffers may be freed at exit
    return *instance;
  }
  static size_t length(uint64_t size) { return (static_cast<size_t>(size) + kPage - 1) / kPage * kPage; }
  void* take(size_t len) {
    {
      std::lock_guard lock(mu_);
      if (auto it = free_.find(len); it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= len;
        return p;
      }
    }
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void give(void* p, size_t len) {
    {
      std::lock_guard lock(mu_);
      if (cached_ + len <= kCacheBytes) {
        free_.emplace(len, p);
        cached_ += len;
        return;
      }
    }
    ::munmap(p, len);
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
};

// kAlignment below is sdk::HostAllocatorSlots' (64 bytes, a cache line): small buffers are aligned as the SDK's are.
tg_status_t AllocatorSlots::alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
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
    if (size >= kMappedFrom && size <= SIZE_MAX - kPage) {
      memory = MappedBuffers::get().take(MappedBuffers::length(size));
    } else if (size <= SIZE_MAX - kAlignment) {
      const size_t bytes = (static_cast<size_t>(size) + kAlignment - 1) / kAlignment * kAlignment;
      memory = ::operator new(bytes == 0 ? kAlignment : bytes, std::align_val_t{kAlignment}, std::nothrow);
    }
    if (memory == nullptr) throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes of host memory"));
    *out_buffer = tg_buffer_desc{reinterpret_cast<uint64_t>(memory), size, memory};
  });
}

void AllocatorSlots::free(tg_device device, const tg_buffer_desc* buffer) noexcept {
  sdk::guard_void("cpu allocator_free", [&] {
    if (buffer == nullptr || buffer->handle == nullptr) return;
    if (buffer->size >= kMappedFrom)
      MappedBuffers::get().give(buffer->handle, MappedBuffers::length(buffer->size));
    else
      ::operator delete(buffer->handle, std::align_val_t{kAlignment});
  });
}

}  // namespace tg::cpu
