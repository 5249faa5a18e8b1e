// The INTERP plugin's Allocator: the SDK's host allocator (tg/sdk/host_allocator.hpp: 64-byte aligned host
// memory, a buffer's device address is a host pointer), told of every allocation so that kernel launches can
// check each load and store against its buffer's bounds.
#include "interp_plugin.hpp"

namespace tg::interp {

using sdk::cat;
using sdk::Error;

uint64_t Device::allocation_size(uint64_t addr, const std::string& what) {
  std::lock_guard lock(allocations_mutex);
  const auto it = allocations.find(addr);
  if (it == allocations.end())
    throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, " (address 0x", std::hex, addr, std::dec,
                                             ") is not the start of a buffer allocated on this INTERP device"));
  return it->second;
}

void AllocatorHooks::on_alloc(Device& device, uint64_t addr, uint64_t size) {
  std::lock_guard lock(device.allocations_mutex);
  device.allocations[addr] = size;
}

void AllocatorHooks::on_free(Device& device, uint64_t addr) {
  std::lock_guard lock(device.allocations_mutex);
  device.allocations.erase(addr);
}

}  // namespace tg::interp
