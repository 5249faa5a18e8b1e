// The CPU plugin's Allocator: 64-byte aligned host memory, so a buffer's device address is a host pointer; large
// buffers are mappings of their own. The bounds-checked copies in and out are the SDK's (tg/sdk/host_allocator.hpp).
#include "cpu_plugin.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

// Large buffers are mapped pages of their own, returned to the system when freed, except for freed ones kept for
// reuse by size. Through malloc they stayed in its heap once freed (glibc raises its mmap threshold after each such
// free): Gemma 3 270M's 256-token prefill left ~45 MB there, peak RSS 375 MB; unmapping every one instead made the
// next layer fault its pages in again (prefill 320 -> 236 tok/s). Layers repeat their sizes, so the cache keeps the
// most recently freed buffers, up to twice as many bytes as were ever live at once (at least kCacheBytes). A fixed
// 48 MB held too little of an MoE prefill's transients: GLM-4.7-Flash's shape (8 layers), 512 tokens, faulted in
// 2.4 GB of zeroed pages a prefill (580K faults); now ~0, for peak RSS 2961 -> 3175 MB (Qwen2.5-0.5B: 655 MB, as
// before). Once as many bytes as the peak, the cache still missed ~210K pages a prefill.
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
      // the smallest cached buffer that holds len with at most an eighth to spare: an MoE layer's gathered rows
      // differ from layer to layer by a few runs of tokens
      if (auto it = by_size_.lower_bound(len); it != by_size_.end() && it->first <= len + len / 8) {
        const Cached c = *it->second;
        recent_.erase(it->second), by_size_.erase(it);
        cached_ -= c.len;
        return handed(c.p, c.len);
      }
    }
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::lock_guard lock(mu_);
    return handed(p, len);
  }

  void give(void* p) {
    std::vector<Cached> evicted;
    {
      std::lock_guard lock(mu_);
      auto it = lengths_.find(p);
      if (it == lengths_.end()) return;  // not one of ours
      const size_t len = it->second;
      lengths_.erase(it);
      live_ -= len;
      recent_.push_back({p, len});
      by_size_.emplace(len, std::prev(recent_.end()));
      cached_ += len;
      // the least recently freed go back to the system (unmapped outside the lock)
      while (cached_ > std::max(2 * peak_, kCacheBytes)) {
        const Cached& old = recent_.front();
        for (auto [i, end] = by_size_.equal_range(old.len); i != end; ++i)
          if (i->second == recent_.begin()) {
            by_size_.erase(i);
            break;
          }
        cached_ -= old.len;
        evicted.push_back(old);
        recent_.pop_front();
      }
    }
    for (const Cached& c : evicted) ::munmap(c.p, c.len);
  }

 private:
  struct Cached {
    void* p;
    size_t len;
  };
  void* handed(void* p, size_t len) {  // (under mu_)
    lengths_[p] = len;
    live_ += len;
    peak_ = std::max(peak_, live_);
    return p;
  }

  std::mutex mu_;
  std::list<Cached> recent_;                                    // freed buffers, least recently freed first
  std::multimap<size_t, std::list<Cached>::iterator> by_size_;  // the same, by length
  std::map<void*, size_t> lengths_;  // each buffer handed out: its mapping's length (a reused one may be longer)
  size_t cached_ = 0, live_ = 0, peak_ = 0;
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
      MappedBuffers::get().give(buffer->handle);
    else
      ::operator delete(buffer->handle, std::align_val_t{kAlignment});
  });
}

}  // namespace tg::cpu
