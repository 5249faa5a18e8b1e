// The DSP plugin's Allocator: the SDK's host allocator (tg/sdk/host_allocator.hpp), with every allocation registered
// by address, so that a launch can find the extent of each buffer it sends to qemu-hexagon.
#include "dsp_plugin.hpp"

namespace tg::dsp {

Allocations& Allocations::get() {
  static Allocations* registry = new Allocations;  // never destroyed: buffers may be freed at exit
  return *registry;
}

void Allocations::add(uint64_t addr, uint64_t size) {
  std::lock_guard lock(mu_);
  by_base_[addr] = size;
}

void Allocations::remove(uint64_t addr) {
  std::lock_guard lock(mu_);
  by_base_.erase(addr);
}

bool Allocations::find(uint64_t addr, uint64_t* base, uint64_t* size) const {
  std::lock_guard lock(mu_);
  auto it = by_base_.upper_bound(addr);
  if (it == by_base_.begin()) return false;
  --it;
  if (addr - it->first > it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

void AllocatorHooks::on_alloc(Device& /*device*/, uint64_t addr, uint64_t size) { Allocations::get().add(addr, size); }
void AllocatorHooks::on_free(Device& /*device*/, uint64_t addr) { Allocations::get().remove(addr); }

}  // namespace tg::dsp
