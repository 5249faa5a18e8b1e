// Finds plugin shared objects, loads them with Boost.DLL and negotiates the ABI version.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tg/device.hpp"
#include "tg/plugin_abi.h"

namespace tg::rt {

// A plugin file that loaded: the library stays mapped as long as this object lives.
struct LoadedPlugin {
  std::string path;
  const tg_plugin_api* api = nullptr;
  std::shared_ptr<void> library;  // boost::dll::shared_library, type-erased to keep Boost out of headers
};

class PluginRegistry {
 public:
  // The process-wide registry; discovery runs on first use.
  static PluginRegistry& get();

  // Every candidate file in discovery order with its verdict.
  const std::vector<PluginInfo>& reports() const { return reports_; }
  // The loaded plugin providing this DEV name (first in discovery order), or nullptr.
  const LoadedPlugin* find(const std::string& device_name) const;
  std::vector<std::string> device_names() const;
  // One line per candidate: why each failed, for error messages about unknown devices.
  std::string summary() const;

  // Loads one file; on failure returns nullptr and sets error (exposed for tests of the loader).
  static std::unique_ptr<LoadedPlugin> load(const std::string& path, std::string& error);
  // Directories searched, in order: TG_PLUGIN_PATH entries, the install prefix, the build tree.
  static std::vector<std::string> search_dirs();

  // Discovers and loads every plugin in these directories (get() uses search_dirs()).
  explicit PluginRegistry(const std::vector<std::string>& dirs);

 private:
  std::vector<std::string> dirs_;
  std::vector<PluginInfo> reports_;
  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
};

// Converts a non-null status into a tg::Error with context, freeing the status.
void check_status(const tg_plugin_api* api, tg_status_t st, const std::string& context);

}  // namespace tg::rt
