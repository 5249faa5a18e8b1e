// Plugin discovery: TG_PLUGIN_PATH, then the install prefix, then the build tree. Each file's manifest is read
// first, so files that could not serve this core (ABI out of range, a missing system library, a lower priority
// than another file for the same DEV name) are reported without being loaded.
#include "runtime/plugin_registry.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include <tg/sdk/abi_names.hpp>

#include "runtime/env.hpp"
#include "runtime/plugin_manifest.hpp"
#include "tg/error.hpp"

namespace tg::rt {

namespace fs = std::filesystem;

namespace {

std::string version(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

// Whether a plugin minor is older than the support window. (A variable, not the macro: with the window starting at 0
// a literal comparison would be flagged as always false.)
bool before_window(uint32_t minor) {
  static const uint32_t oldest = TG_ABI_OLDEST_MINOR;
  return minor < oldest;
}

// What this core loads: its major, minors from TG_ABI_OLDEST_MINOR on.
std::string core_window() {
  return version(TG_ABI_VERSION_MAJOR, TG_ABI_OLDEST_MINOR) + "-" + std::to_string(TG_ABI_VERSION_MAJOR) + ".x";
}

// Why a manifest rules its plugin out for this core before loading it, or "" when it does not.
std::string manifest_verdict(const PluginManifest& m) {
  if (m.abi_major != TG_ABI_VERSION_MAJOR || before_window(m.abi_max_minor) || m.abi_min_minor > TG_ABI_VERSION_MINOR)
    return "ABI out of range: the plugin serves cores " + m.abi_range() + ", this core speaks " +
           version(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR) + " and loads plugins " + core_window();
  for (const auto& lib : m.requires_libs) {
    void* h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      return "missing library " + lib + ": " + (why ? why : "not found");
    }
    dlclose(h);
  }
  return "";
}

// Why a plugin counts no devices, as its device_open(0) says (": cannot load libcuda.so.1 ..."), or "".
std::string no_device_reason(const tg_plugin_api* api) {
  tg_device device = nullptr;
  tg_status_t st = api->device_open(0, &device);
  if (!st) {  // counted none but opened one: not worth a verdict of its own
    if (device) api->device_close(device);
    return "";
  }
  std::string why = st->message ? st->message : "";
  api->status_free(st);
  return why.empty() ? "" : ": " + why;
}

}  // namespace

// A file of the search path, in the order discovery considers it.
struct PluginRegistry::Candidate {
  size_t report;  // index into reports_
  std::optional<PluginManifest> manifest;
};

void check_status(const tg_plugin_api* api, tg_status_t st, const std::string& context) {
  if (!st) return;
  std::string msg = st->message ? st->message : "(no message)";
  api->status_free(st);
  throw Error("tg: " + context + ": " + msg);
}

std::vector<std::string> PluginRegistry::search_dirs() {
  std::vector<std::string> dirs;
  std::stringstream ss(getenv_str("TG_PLUGIN_PATH"));
  for (std::string d; std::getline(ss, d, ':');)
    if (!d.empty()) dirs.push_back(d);
  dirs.push_back(TG_INSTALL_PLUGIN_DIR);
  dirs.push_back(TG_BUILD_PLUGIN_DIR);
  return dirs;
}

std::unique_ptr<LoadedPlugin> PluginRegistry::load(const std::string& path, std::string& error) {
  namespace dll = boost::dll;
  auto lib = std::make_shared<dll::shared_library>();
  boost::dll::fs::error_code ec;
  lib->load(path, dll::load_mode::rtld_local | dll::load_mode::rtld_now, ec);
  if (ec) {
    error = "cannot load: " + ec.message();
    if (const char* d = dlerror()) error += std::string(" (") + d + ")";
    return nullptr;
  }
  if (!lib->has(TG_ABI_ENTRY_POINT)) {
    error = std::string("not a tg plugin: no exported symbol ") + TG_ABI_ENTRY_POINT;
    return nullptr;
  }
  auto get_api = lib->get<const tg_plugin_api*(uint32_t, uint32_t, tg_status_t*)>(TG_ABI_ENTRY_POINT);
  tg_status_t st = nullptr;
  const tg_plugin_api* api = get_api(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &st);
  const std::string core = version(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR);
  if (!api) {
    error = "plugin refused ABI " + core + ": " + (st && st->message ? st->message : "no reason given");
    if (st) std::free(st->message), std::free(st);  // refusals are malloc'ed (plugin_abi.h): no table to free them with
    return nullptr;
  }
  if (api->struct_size == 0 || api->abi_major == 0) {
    error = "plugin table is zeroed (struct_size " + std::to_string(api->struct_size) + ", ABI " +
            version(api->abi_major, api->abi_minor) + "): version 0 is never valid";
    return nullptr;
  }
  if (api->abi_major != TG_ABI_VERSION_MAJOR || before_window(api->abi_minor)) {
    error = "ABI out of range: plugin implements " + version(api->abi_major, api->abi_minor) + ", this core speaks " +
            core + " and loads plugins " + core_window();
    return nullptr;
  }
  if (!api->plugin_name || !*api->plugin_name || !api->device_name || !*api->device_name) {
    error = "plugin table has no plugin_name or device_name";
    return nullptr;
  }
  if (api->struct_size < TG_PLUGIN_API_SIZE_1_0) {
    error = "plugin table is truncated: struct_size " + std::to_string(api->struct_size) + " < ABI 1.0's " +
            std::to_string(TG_PLUGIN_API_SIZE_1_0);
    return nullptr;
  }
  auto p = std::make_unique<LoadedPlugin>();
  std::memcpy(&p->table, api, std::min(api->struct_size, sizeof(tg_plugin_api)));
  p->table.struct_size = sizeof(tg_plugin_api);
  std::string missing;
  for (const sdk::AbiSlot& slot : sdk::kRequiredSlots) {
    void* fn = nullptr;
    std::memcpy(&fn, reinterpret_cast<const char*>(&p->table) + slot.offset, sizeof fn);
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(slot.name);
  }
  if (!missing.empty()) {
    error = "plugin table leaves slots ABI 1.0 requires NULL: " + missing;
    return nullptr;
  }
  p->path = path;
  p->api = &p->table;
  p->library = lib;
  return p;
}

PluginRegistry& PluginRegistry::get() {
  static std::mutex mu;
  // never destroyed: devices, programs and buffers that outlive main() may still call into plugins
  static auto* reg = new PluginRegistry(search_dirs());
  std::lock_guard lock(mu);
  if (reg->stale_) reg->discover();
  return *reg;
}

PluginRegistry::PluginRegistry(const std::vector<std::string>& dirs) : dirs_(dirs) { discover(); }

void PluginRegistry::discover() {
  stale_ = false;
  reports_.clear();
  std::vector<Candidate> candidates;
  std::vector<std::string> seen;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      auto name = e.path().filename().string();
      if (name.starts_with("libtg_plugin_") && e.path().extension() == ".so") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());  // deterministic order inside a directory
    for (const auto& f : files) {
      std::string canon = fs::weakly_canonical(f, ec).string();
      if (std::find(seen.begin(), seen.end(), canon) != seen.end()) continue;
      seen.push_back(canon);
      PluginInfo info;
      info.path = f.string();
      Candidate c{reports_.size(), std::nullopt};
      try {
        c.manifest = read_manifest(manifest_path_for(info.path));
      } catch (const Error& e) {
        info.error = e.what();
      }
      if (c.manifest) {
        info.manifest = c.manifest->path;
        info.plugin_name = c.manifest->plugin;
        info.device_name = c.manifest->devices.front();
        info.abi_version = c.manifest->abi_range();
        info.priority = c.manifest->priority;
        info.error = manifest_verdict(*c.manifest);
      }
      reports_.push_back(info);
      if (info.error.empty()) candidates.push_back(std::move(c));
    }
  }
  // Highest priority first; equal priorities keep the search order.
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    return reports_[a.report].priority > reports_[b.report].priority;
  });
  for (auto& old : plugins_) previous_.push_back(std::move(old));
  plugins_.clear();
  pending_ = std::move(candidates);
}

PluginRegistry::~PluginRegistry() = default;

// Loads and probes the pending candidates that may provide `device` (all when null), in discovery order. A
// candidate whose manifest names other devices cannot change who provides `device`, so it waits: asking for the
// CPU does not load the QCOM plugin (and with it the OpenCL ICD and PoCL's own LLVM, ~56 MB).
void PluginRegistry::settle(const std::string* device) const {
  std::lock_guard lock(settle_mu_);
  auto winner_of = [&](const std::string& dev) -> const PluginInfo* {
    for (const auto& r : reports_)
      if (r.loaded && !r.shadowed && r.device_name == dev) return &r;
    return nullptr;
  };
  auto lose_to = [](PluginInfo& info, const PluginInfo& w) {
    info.shadowed = true;
    info.shadowed_by = w.path + (w.priority > info.priority ? " (priority " + std::to_string(w.priority) + " > " +
                                                                  std::to_string(info.priority) + ")"
                                                            : " (same priority, earlier in the search order)");
  };
  std::vector<Candidate> later;
  for (auto& c : pending_) {
    if (device && c.manifest &&
        std::find(c.manifest->devices.begin(), c.manifest->devices.end(), *device) == c.manifest->devices.end()) {
      later.push_back(std::move(c));
      continue;
    }
    probe(c, winner_of, lose_to);
  }
  pending_ = std::move(later);
  if (pending_.empty()) {        // a plugin from an earlier discovery that no longer wins stays mapped: devices opened
    for (auto& old : previous_)  // from it may be in use
      if (old) plugins_retired().push_back(std::move(old));
    previous_.clear();
  }
}

template <class WinnerOf, class LoseTo>
void PluginRegistry::probe(Candidate& c, const WinnerOf& winner_of, const LoseTo& lose_to) const {
  PluginInfo& info = reports_[c.report];
  if (c.manifest) {  // decided without loading when another file already provides the DEV name
    if (const PluginInfo* w = winner_of(info.device_name)) {
      lose_to(info, *w);
      return;
    }
  }
  std::unique_ptr<LoadedPlugin> p;
  for (auto& old : previous_)  // still loaded from an earlier discovery: keep it rather than load it twice
    if (old && old->path == info.path) p = std::move(old);
  if (!p) p = load(info.path, info.error);
  if (!p) return;
  // A plugin that does not win is kept mapped, not unloaded: one from an earlier discovery may have open
  // devices, and unmapping a fresh one saves nothing worth the risk.
  const auto retire = [&] { plugins_retired().push_back(std::move(p)); };
  const tg_plugin_api* api = p->api;
  const std::string table_device = api->device_name;
  if (c.manifest &&
      std::find(c.manifest->devices.begin(), c.manifest->devices.end(), table_device) == c.manifest->devices.end()) {
    info.error =
        "the table provides device '" + table_device + "', which its manifest " + c.manifest->path + " does not list";
    retire();
    return;
  }
  info.plugin_name = api->plugin_name;
  info.device_name = table_device;
  info.abi_version = version(api->abi_major, api->abi_minor);
  uint32_t n = 0;
  if (tg_status_t st = api->device_count(&n)) {
    info.error = std::string("device_count failed: ") + (st->message ? st->message : "");
    api->status_free(st);
    retire();
    return;
  }
  if (n == 0) {
    info.error = "no devices present" + no_device_reason(api);
    retire();
    return;
  }
  if (const PluginInfo* w = winner_of(info.device_name)) {
    lose_to(info, *w);
    retire();
    return;
  }
  info.loaded = true;
  plugins_.push_back(std::move(p));
}

std::vector<std::unique_ptr<LoadedPlugin>>& PluginRegistry::plugins_retired() {
  static auto* retired = new std::vector<std::unique_ptr<LoadedPlugin>>();
  return *retired;
}

void PluginRegistry::unload(const std::string& device_name) {
  for (auto it = plugins_.begin(); it != plugins_.end(); ++it) {
    if (device_name != (*it)->api->device_name) continue;
    if ((*it)->api->plugin_shutdown) (*it)->api->plugin_shutdown();
    plugins_.erase(it);  // the last reference to the library: dlclose
    stale_ = true;
    return;
  }
  throw Error("tg: cannot unload '" + device_name + "': no loaded plugin provides it");
}

const std::vector<PluginInfo>& PluginRegistry::reports() const {
  settle(nullptr);
  return reports_;
}

const LoadedPlugin* PluginRegistry::find(const std::string& device_name) const {
  settle(&device_name);
  for (const auto& p : plugins_)
    if (p->api->device_name && device_name == p->api->device_name) return p.get();
  return nullptr;
}

bool PluginRegistry::probed(const std::string& path) const {
  std::lock_guard lock(settle_mu_);
  for (const auto& c : pending_)
    if (reports_[c.report].path == path) return false;
  return true;
}

std::vector<std::string> PluginRegistry::device_names() const {
  settle(nullptr);
  std::vector<std::string> out;
  for (const auto& p : plugins_) out.push_back(p->api->device_name);
  return out;
}

std::string PluginRegistry::summary() const {
  settle(nullptr);
  std::ostringstream os;
  if (reports_.empty()) os << " no plugin files found";
  for (const auto& r : reports_) {
    os << "\n  " << r.path << ": ";
    if (r.loaded)
      os << "provides " << r.device_name;
    else if (r.shadowed)
      os << r.device_name << " lost to " << r.shadowed_by;
    else
      os << r.error;
  }
  os << "\n  searched (TG_PLUGIN_PATH, the install, the build tree):";
  for (const auto& d : dirs_) os << " " << d;
  return os.str();
}

const LoadedPlugin* PluginRegistry::load_for_rendering(const std::string& device_name, std::string& error) const {
  if (const LoadedPlugin* p = find(device_name)) return p;
  settle(nullptr);
  std::lock_guard lock(settle_mu_);
  static auto* loaded = new std::vector<std::unique_ptr<LoadedPlugin>>();  // never unloaded, like the registry
  for (const auto& p : *loaded)
    if (device_name == p->api->device_name) return p.get();
  error = "no plugin file provides " + device_name;
  for (const auto& r : reports_) {
    if (r.device_name != device_name) continue;
    std::string why;
    std::unique_ptr<LoadedPlugin> p = load(r.path, why);
    if (!p || device_name != p->api->device_name) {
      error = r.path + ": " + (p ? "its table provides " + std::string(p->api->device_name) : why);
      continue;
    }
    loaded->push_back(std::move(p));
    return loaded->back().get();
  }
  return nullptr;
}

}  // namespace tg::rt
