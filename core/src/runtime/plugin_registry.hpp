// Finds plugin shared objects, reads their manifests, loads them with Boost.DLL and negotiates the ABI version.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tg/device.hpp"
#include "tg/plugin_abi.h"

namespace tg::rt {

// A plugin file that loaded: the library stays mapped as long as this object lives.
struct LoadedPlugin {
  std::string path;
  // The core's copy of the plugin's table, zero-filled past the plugin's struct_size: a plugin of an older minor
  // reads as one whose newer (optional) slots are NULL.
  tg_plugin_api table{};
  const tg_plugin_api* api = nullptr;  // &table
  std::shared_ptr<void> library;       // boost::dll::shared_library, type-erased to keep Boost out of headers
};

class PluginRegistry {
 public:
  // The process-wide registry; discovery runs on first use and again after unload().
  static PluginRegistry& get();

  // Every candidate file in discovery order with its verdict (loads and probes every candidate).
  const std::vector<PluginInfo>& reports() const;
  // The loaded plugin providing this DEV name, or nullptr. Loads only the candidates that may provide it.
  const LoadedPlugin* find(const std::string& device_name) const;
  std::vector<std::string> device_names() const;
  // Whether discovery has loaded (or decided without loading) this candidate file yet (for tests).
  bool probed(const std::string& path) const;
  // One line per candidate: why each failed, for error messages about unknown devices.
  std::string summary() const;
  // The first file (in discovery order) that provides this DEV name, loaded even when it has no devices or its
  // manifest's system libraries are missing: what rendering with a device-less renderer needs (`tg render --dev
  // METAL` on Linux). nullptr with `error` set when no file provides it. Loaded once, never unloaded.
  const LoadedPlugin* load_for_rendering(const std::string& device_name, std::string& error) const;

  // Unloads the plugin providing device_name (the caller released every handle first) and marks the registry
  // for rediscovery on its next get().
  void unload(const std::string& device_name);

  // Loads one file and checks its table; on failure returns nullptr and sets error (exposed for tests).
  static std::unique_ptr<LoadedPlugin> load(const std::string& path, std::string& error);
  // Directories searched, in order: TG_PLUGIN_PATH entries, the install prefix, the build tree.
  static std::vector<std::string> search_dirs();

  // Discovers plugins in these directories (get() uses search_dirs()).
  explicit PluginRegistry(const std::vector<std::string>& dirs);
  ~PluginRegistry();

 private:
  struct Candidate;
  void discover();  // lists the candidates (manifests only); settle() loads them on demand
  void settle(const std::string* device) const;
  template <class WinnerOf, class LoseTo>
  void probe(Candidate& c, const WinnerOf& winner_of, const LoseTo& lose_to) const;
  static std::vector<std::unique_ptr<LoadedPlugin>>& plugins_retired();
  std::vector<std::string> dirs_;
  // Filled lazily by settle(), which const lookups call: hence mutable, under settle_mu_.
  mutable std::vector<PluginInfo> reports_;
  mutable std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  mutable std::vector<Candidate> pending_;                       // not yet loaded, in discovery order
  mutable std::vector<std::unique_ptr<LoadedPlugin>> previous_;  // loaded by an earlier discovery
  mutable std::recursive_mutex settle_mu_;
  bool stale_ = false;
};

// Converts a non-null status into a tg::Error with context, freeing the status.
void check_status(const tg_plugin_api* api, tg_status_t st, const std::string& context);

}  // namespace tg::rt
