// Devices and plugins as the user sees them: discovery reports, names, the default device.
#pragma once

#include <string>
#include <vector>

namespace tg {

// One plugin file found during discovery and what became of it.
struct PluginInfo {
  std::string path;
  std::string manifest;              // the manifest beside it that was read, "" if none
  std::string plugin_name;           // from the manifest, or the plugin table once loaded
  std::string device_name;           // the DEV name it provides ("CPU")
  std::string abi_version;           // "1.1" once loaded; the manifest's range ("1.0-1.1") before
  int64_t priority = 0;              // from the manifest: the highest wins among files for one DEV name
  bool loaded = false;               // loaded and has devices
  bool shadowed = false;             // would provide device_name, but shadowed_by provides it
  std::string shadowed_by;           // the winning file, and why it won
  std::string error;                 // why it is not used: ABI out of range, missing library, refused, ...
  std::vector<std::string> devices;  // instance descriptions, "CPU: x86_64 2 cores"
};

std::vector<PluginInfo> plugin_reports();
// Every candidate plugin file with its verdict (`tg devices`); with search_order, the directories searched first
// (`tg devices --explain`, `DEV=?`).
std::string explain_devices(bool search_order = true);
// One row per plugin file and per standard device (NV, AMD, METAL, CPU, QCOM, DSP) no file provides: device,
// plugin, ABI, state (ready, no device, shadowed, failed, not found), file, and the devices or the reason (`tg
// devices`).
std::string device_table();
// Device names that can be opened, e.g. {"CPU"}.
std::vector<std::string> available_devices();
// DEV (without renderer/arch suffix) or the first available in preference order, CPU last.
std::string default_device();
// Canonical instance name: "cpu" -> "CPU", "NV:1" stays; throws tg::Error naming the plugins if unknown.
std::string canonical_device(const std::string& name);

// Quiesce and unload, for a plugin author iterating in a long-running process: waits for every queue of the
// device's open instances, releases their cached programs, closes them, calls the plugin's plugin_shutdown and
// unloads its library. The next use of any device rediscovers plugin files, so a rebuilt .so is picked up.
// Throws tg::Error and unloads nothing while tensors (buffers) or Jit captures (programs) on the device live.
// Must not run concurrently with other tg calls on that device.
void unload_plugin(const std::string& device_name);

}  // namespace tg
