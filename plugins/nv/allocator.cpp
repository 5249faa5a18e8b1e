// The NV plugin's Allocator: cuMemAlloc'ed device memory (a buffer's address is its CUdeviceptr) and synchronous
// copies in and out, and peer copies between GPUs; the slots around them are the SDK's DeviceAllocatorSlots (bounds,
// size checks).
#include "nv_plugin.hpp"

namespace tg::nv {

uint64_t AllocatorHooks::allocate(uint64_t size) {
  CUdeviceptr ptr = 0;
  check_cu(cuda().cuMemAlloc(&ptr, size), "cuMemAlloc");
  return ptr;
}

void AllocatorHooks::release(uint64_t addr) { cuda().cuMemFree(addr); }

void AllocatorHooks::copy_in(uint64_t addr, const void* src, uint64_t size) {
  check_cu(cuda().cuMemcpyHtoD(addr, src, size), "cuMemcpyHtoD");
}

void AllocatorHooks::copy_out(void* dst, uint64_t addr, uint64_t size) {
  check_cu(cuda().cuMemcpyDtoH(dst, addr, size), "cuMemcpyDtoH");
}

// Between two GPUs' primary contexts: over NVLink or PCIe peer access where the driver has it, staged by the
// driver otherwise; synchronous, as the slot promises.
void AllocatorHooks::copy_peer(Device& dst, uint64_t dst_addr, Device& src, uint64_t src_addr, uint64_t size) {
  dst.bind();
  check_cu(cuda().cuMemcpyPeer(dst_addr, dst.context, src_addr, src.context, size), "cuMemcpyPeer");
}

}  // namespace tg::nv
