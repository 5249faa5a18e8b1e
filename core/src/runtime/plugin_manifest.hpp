// The manifest beside a plugin file (libtg_plugin_x.so -> libtg_plugin_x.manifest): what discovery needs to know
// about a plugin without loading it. tg_add_plugin writes it; its format is a TOML subset:
//
//   plugin = "cpu"                    # the plugin's name
//   devices = ["CPU"]                 # DEV names it provides
//   abi = "1.0-1.1"                   # oldest core minor it serves - the minor it implements
//   requires = ["libOpenCL.so.1"]     # system libraries it needs at run time (checked with the loader)
//   priority = 0                      # among plugins for the same DEV name, the highest wins
//
// Unknown keys are ignored, so a newer SDK may add some.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::rt {

struct PluginManifest {
  std::string path;
  std::string plugin;
  std::vector<std::string> devices;
  uint32_t abi_major = 0, abi_min_minor = 0, abi_max_minor = 0;
  std::vector<std::string> requires_libs;
  int64_t priority = 0;

  std::string abi_range() const;  // "1.0-1.1"
};

// The manifest file that belongs to a plugin file.
std::string manifest_path_for(const std::string& plugin_path);

// Reads and checks a manifest; nullopt when the file does not exist. Throws tg::Error naming the file and line
// for anything malformed (a missing required key, a bad value).
std::optional<PluginManifest> read_manifest(const std::string& path);

}  // namespace tg::rt
