#include "codegen/lower_cache.hpp"

#include <list>
#include <mutex>
#include <unordered_map>

namespace tg::codegen {

namespace {

struct Key {
  std::string device;              // "<device>|<kernel name>"
  std::vector<const void*> nodes;  // sink, ranges, vars (kept alive by the entry, so never reused)
  std::vector<int64_t> ints;       // kernel flags, buffer dtypes and sizes, options, environment switches
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<std::string>{}(k.device);
    auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (const void* p : k.nodes) mix(std::hash<const void*>{}(p));
    for (int64_t v : k.ints) mix(std::hash<int64_t>{}(v));
    return h;
  }
};

struct Entry {
  std::vector<ir::UOpPtr> keep;
  KirProgram kir;
  std::list<Key>::iterator age;
};

constexpr size_t kMaxEntries = 8192;  // least recently used entries go first
std::mutex g_mu;
std::unordered_map<Key, Entry, KeyHash> g_cache;
std::list<Key> g_ages;  // most recent first

Key make_key(const sched::Kernel& k, const std::string& device, const LowerOpts& o, std::vector<ir::UOpPtr>& keep) {
  Key key{device + "|" + k.name, {}, {}};
  auto node = [&](const ir::UOpPtr& u) {
    key.nodes.push_back(u.get());
    keep.push_back(u);
  };
  node(k.sink);
  for (const auto& r : k.out_ranges) node(r);
  key.nodes.push_back(nullptr);
  for (const auto& r : k.local_ranges) node(r);
  key.nodes.push_back(nullptr);
  for (const auto& v : k.vars) node(v);
  key.ints = {k.n_outputs, k.custom, k.parallel, static_cast<int64_t>(k.written_inputs.size())};
  for (int w : k.written_inputs) key.ints.push_back(w);
  for (const auto& b : k.params) {
    key.ints.push_back(static_cast<int64_t>(b.dtype.scalar) * 256 + b.dtype.count);
    key.ints.push_back(b.numel);
  }
  key.ints.insert(key.ints.end(), {o.switches.images, o.switches.tensor_cores, o.switches.check_ir, o.switches.debug,
                                   o.switches.time_passes, o.actions.has_value()});
  if (o.actions)
    for (int32_t v : encode(*o.actions)) key.ints.push_back(v);
  return key;
}

}  // namespace

KirProgram lower_kernel_cached(const sched::Kernel& k, const tg_renderer_caps& caps, const std::string& device,
                               const LowerOpts& opts) {
  std::vector<ir::UOpPtr> keep;
  Key key = make_key(k, device, opts, keep);
  {
    std::lock_guard lock(g_mu);
    if (auto it = g_cache.find(key); it != g_cache.end()) {
      g_ages.splice(g_ages.begin(), g_ages, it->second.age);
      return it->second.kir;
    }
  }
  KirProgram kir = lower_kernel(k, caps, opts);
  kir.hash();  // once, for every copy the cache hands out
  std::lock_guard lock(g_mu);
  if (g_cache.count(key)) return kir;
  while (g_cache.size() >= kMaxEntries) {
    g_cache.erase(g_ages.back());
    g_ages.pop_back();
  }
  g_ages.push_front(key);
  g_cache.emplace(std::move(key), Entry{std::move(keep), kir, g_ages.begin()});
  return kir;
}

void clear_lower_cache(const std::string& device) {
  std::lock_guard lock(g_mu);
  for (auto it = g_cache.begin(); it != g_cache.end();) {
    if (device.empty() || it->first.device.rfind(device + "|", 0) == 0) {
      g_ages.erase(it->second.age);
      it = g_cache.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tg::codegen
