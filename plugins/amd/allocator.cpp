// The AMD plugin's Allocator: hipMalloc'ed device memory (a buffer's address is its device pointer) and synchronous
// copies in and out, and peer copies between GPUs; the slots around them are the SDK's DeviceAllocatorSlots (bounds,
// size checks).
#include "amd_plugin.hpp"

namespace tg::amd {

uint64_t AllocatorHooks::allocate(uint64_t size) {
  void* ptr = nullptr;
  check_hip(hip().hipMalloc(&ptr, size), "hipMalloc");
  return reinterpret_cast<uint64_t>(ptr);
}

void AllocatorHooks::release(uint64_t addr) { hip().hipFree(reinterpret_cast<void*>(addr)); }

void AllocatorHooks::copy_in(uint64_t addr, const void* src, uint64_t size) {
  check_hip(hip().hipMemcpyHtoD(reinterpret_cast<void*>(addr), src, size), "hipMemcpyHtoD");
}

void AllocatorHooks::copy_out(void* dst, uint64_t addr, uint64_t size) {
  check_hip(hip().hipMemcpyDtoH(dst, reinterpret_cast<void*>(addr), size), "hipMemcpyDtoH");
}

// Between two GPUs by ordinal (over xGMI or PCIe peer access where the runtime has it); synchronous.
void AllocatorHooks::copy_peer(Device& dst, uint64_t dst_addr, Device& src, uint64_t src_addr, uint64_t size) {
  dst.bind();
  check_hip(hip().hipMemcpyPeer(reinterpret_cast<void*>(dst_addr), dst.ordinal, reinterpret_cast<const void*>(src_addr),
                                src.ordinal, size),
            "hipMemcpyPeer");
}

}  // namespace tg::amd
