// Registered collectives and their run: on the device where a device communicator registered one, else through
// host memory (in place where the buffer is host memory: no staging copy on CPU devices).
#include "runtime/collectives.hpp"

#include <map>
#include <mutex>
#include <vector>

#include "tg/error.hpp"

namespace tg::rt {

namespace {

struct Registered {
  const void* owner;
  CollectiveFn fn;
  DeviceCollectiveFn on_device;
};

std::mutex g_mu;
auto& g_by_name = *new std::map<std::string, Registered>();
auto& g_names = *new std::map<std::pair<const void*, std::string>, std::string>();
uint64_t g_next = 0;  // names are never reused: a new communicator at a freed one's address gets new names

}  // namespace

std::string register_collective(const void* owner, const std::string& what, CollectiveFn fn,
                                DeviceCollectiveFn on_device) {
  std::lock_guard lock(g_mu);
  auto [it, added] = g_names.try_emplace({owner, what});
  if (added) {
    it->second = what + "#" + std::to_string(g_next++);
    g_by_name.emplace(it->second, Registered{owner, std::move(fn), std::move(on_device)});
  }
  return it->second;
}

void forget_collectives(const void* owner) {
  std::lock_guard lock(g_mu);
  for (auto it = g_names.begin(); it != g_names.end();) {
    if (it->first.first != owner) {
      ++it;
      continue;
    }
    g_by_name.erase(it->second);
    it = g_names.erase(it);
  }
}

void run_collective(const std::string& name, Buffer& dst, Buffer& src) {
  Registered r;
  {
    std::lock_guard lock(g_mu);
    auto it = g_by_name.find(name);
    if (it == g_by_name.end())
      throw Error("tg: collective " + name + ": its communicator no longer exists (a Jit or graph outlived it)");
    r = it->second;
  }
  const CollectiveFn& fn = r.fn;
  if (dst.nbytes() != src.nbytes())
    throw Error("tg: collective " + name + " of " + std::to_string(src.nbytes()) + " bytes into a buffer of " +
                std::to_string(dst.nbytes()));
  if (r.on_device) {
    dst.device().synchronize();
    src.device().synchronize();
    r.on_device(dst, src);
    return;
  }
  const auto count = static_cast<size_t>(dst.numel());
  if (dst.device().is_host() && !dst.is_adopted_host_memory()) {
    void* data = reinterpret_cast<void*>(dst.desc().addr);
    dst.device().synchronize();
    if (&dst != &src) src.copy_out(data, src.nbytes());
    fn(data, count, dst.dtype());
    return;
  }
  std::vector<uint8_t> host(src.nbytes());
  src.copy_out(host.data(), host.size());
  fn(host.data(), count, dst.dtype());
  dst.copy_in(host.data(), host.size());
}

}  // namespace tg::rt
