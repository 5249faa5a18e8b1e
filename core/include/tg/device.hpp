// Devices and plugins as the user sees them: discovery reports, names, the default device.
#pragma once

#include <string>
#include <vector>

namespace tg {

// One plugin file found during discovery and what became of it.
struct PluginInfo {
  std::string path;
  std::string plugin_name;           // from the plugin table, if it loaded
  std::string device_name;           // the DEV name it provides ("CPU")
  std::string abi_version;           // "1.0", if it loaded
  bool loaded = false;
  bool shadowed = false;             // loaded, but an earlier file provides the same device name
  std::string error;                 // why it did not load
  std::vector<std::string> devices;  // instance descriptions, "CPU: x86_64 2 cores"
};

std::vector<PluginInfo> plugin_reports();
// Every directory searched and every candidate plugin file with its verdict (`tg devices --explain`, `DEV=?`).
std::string explain_devices();
// Device names that can be opened, e.g. {"CPU"}.
std::vector<std::string> available_devices();
// DEV (without renderer/arch suffix) or the first available in preference order, CPU last.
std::string default_device();
// Canonical instance name: "cpu" -> "CPU", "NV:1" stays; throws tg::Error naming the plugins if unknown.
std::string canonical_device(const std::string& name);

}  // namespace tg
