// Plugin discovery and loading: TG_PLUGIN_PATH, then the install prefix, then the build tree.
#include "runtime/plugin_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <boost/dll/shared_library.hpp>
#include <dlfcn.h>
#include <filesystem>
#include <sstream>

#include "runtime/env.hpp"
#include "tg/error.hpp"

namespace tg::rt {

namespace fs = std::filesystem;

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
  std::string core_version = std::to_string(TG_ABI_VERSION_MAJOR) + "." + std::to_string(TG_ABI_VERSION_MINOR);
  if (!api) {
    error = "plugin refused ABI " + core_version + ": " + (st && st->message ? st->message : "no reason given");
    if (st) std::free(st->message), std::free(st);  // refusals are malloc'ed (plugin_abi.h): no table to free them with
    return nullptr;
  }
  if (api->struct_size < offsetof(tg_plugin_api, hwqueue_read_timestamp) + sizeof(void*) || api->abi_major == 0) {
    error = "plugin table is truncated or zeroed (struct_size " + std::to_string(api->struct_size) + ")";
    return nullptr;
  }
  if (api->abi_major != TG_ABI_VERSION_MAJOR) {
    error = "ABI major version mismatch: plugin implements " + std::to_string(api->abi_major) + "." +
            std::to_string(api->abi_minor) + ", core speaks " + core_version;
    return nullptr;
  }
  auto p = std::make_unique<LoadedPlugin>();
  p->path = path;
  p->api = api;
  p->library = lib;
  return p;
}

PluginRegistry& PluginRegistry::get() {
  // never destroyed: devices, programs and buffers that outlive main() may still call into plugins
  static auto* reg = new PluginRegistry(search_dirs());
  return *reg;
}

PluginRegistry::PluginRegistry(const std::vector<std::string>& dirs) : dirs_(dirs) {
  std::vector<std::string> seen;
  for (const auto& dir : dirs) {
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
      std::string err;
      auto p = load(info.path, err);
      if (!p) {
        info.error = err;
        reports_.push_back(info);
        continue;
      }
      const tg_plugin_api* api = p->api;
      info.plugin_name = api->plugin_name ? api->plugin_name : "";
      info.device_name = api->device_name ? api->device_name : "";
      info.abi_version = std::to_string(api->abi_major) + "." + std::to_string(api->abi_minor);
      uint32_t n = 0;
      if (tg_status_t st = api->device_count(&n)) {
        info.error = std::string("device_count failed: ") + (st->message ? st->message : "");
        api->status_free(st);
        reports_.push_back(info);
        continue;
      }
      if (n == 0) info.error = "no devices present";
      info.loaded = n > 0;
      info.shadowed = find(info.device_name) != nullptr;
      if (info.loaded && !info.shadowed) plugins_.push_back(std::move(p));
      reports_.push_back(info);
    }
  }
}

const LoadedPlugin* PluginRegistry::find(const std::string& device_name) const {
  for (const auto& p : plugins_)
    if (p->api->device_name && device_name == p->api->device_name) return p.get();
  return nullptr;
}

std::vector<std::string> PluginRegistry::device_names() const {
  std::vector<std::string> out;
  for (const auto& p : plugins_) out.push_back(p->api->device_name);
  return out;
}

std::string PluginRegistry::summary() const {
  std::ostringstream os;
  if (reports_.empty()) {
    os << "no plugin files found (searched:";
    for (const auto& d : dirs_) os << " " << d;
    os << ")";
    return os.str();
  }
  for (const auto& r : reports_) {
    os << "\n  " << r.path << ": ";
    if (r.loaded) os << (r.shadowed ? "shadowed " : "provides ") << r.device_name;
    else os << r.error;
  }
  return os.str();
}

}  // namespace tg::rt
