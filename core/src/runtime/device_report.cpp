// What `tg devices` shows: every plugin file discovery found with its verdict, as a table (one row a file, plus
// a row for each of the six standard devices no file provides; the six first, in the default device's order) or
// file by file with the search order (--explain).
#include <algorithm>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <utility>

#include "runtime/device.hpp"
#include "runtime/plugin_registry.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

// The devices the design card names, in the default device's preference order.
constexpr const char* kStandardDevices[] = {"NV", "AMD", "METAL", "CPU", "QCOM", "DSP"};

// A report's state in one word: ready, no device (the plugin is fine, the hardware or its driver is not),
// shadowed (another file provides the same DEV name) or failed (the file itself is unusable).
std::string state_of(const PluginInfo& r) {
  if (r.shadowed) return "shadowed";
  if (r.loaded && r.error.empty()) return "ready";
  if (r.error.starts_with("no devices present") || r.error.starts_with("missing library")) return "no device";
  return "failed";
}

std::string detail_of(const PluginInfo& r) {
  if (r.shadowed) return "lost to " + r.shadowed_by;
  if (!r.loaded || !r.error.empty()) return r.error;
  std::string out;
  for (const auto& d : r.devices) out += (out.empty() ? "" : "; ") + d;
  return out;
}

// The file name without its directory: the table's rows stay short; --explain has the full paths.
std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

std::vector<PluginInfo> plugin_reports() {
  auto reports = rt::PluginRegistry::get().reports();
  for (auto& r : reports) {
    if (!r.loaded || r.shadowed) continue;
    try {
      rt::Device& d = rt::Device::get(r.device_name);
      r.devices.push_back(d.name() + ": " + d.description());
    } catch (const Error& e) {
      r.error = e.what();
    }
  }
  return reports;
}

std::vector<std::string> available_devices() { return rt::PluginRegistry::get().device_names(); }

std::string explain_devices(bool search_order) {
  std::ostringstream os;
  if (search_order) {
    os << "search order:";
    for (const auto& d : rt::PluginRegistry::search_dirs()) os << " " << d;
    os << "\n";
  }
  auto reports = plugin_reports();
  for (const auto& r : reports) {
    os << r.path << (r.manifest.empty() ? " (no manifest)" : "") << "\n  ";
    if (r.shadowed) {
      os << "lost to " << r.shadowed_by << ": both provide " << r.device_name;
    } else if (r.loaded && r.error.empty()) {
      os << "loaded: plugin " << r.plugin_name << ", ABI " << r.abi_version << ", device " << r.device_name;
      if (r.priority) os << ", priority " << r.priority;
      for (const auto& d : r.devices) os << "\n    " << d;
    } else {
      os << "not used: " << r.error;
    }
    os << "\n";
  }
  if (reports.empty())
    os << "no plugin files found; set TG_PLUGIN_PATH to a directory holding libtg_plugin_<name>.so\n";
  return os.str();
}

std::string device_table() {
  struct Row {
    std::string device, plugin, abi, state, file, detail;
  };
  std::vector<Row> rows;
  for (const auto& r : plugin_reports())
    rows.push_back({r.device_name.empty() ? "?" : r.device_name, r.plugin_name.empty() ? "?" : r.plugin_name,
                    r.abi_version.empty() ? "?" : r.abi_version, state_of(r), file_name(r.path), detail_of(r)});
  for (const char* dev : kStandardDevices) {
    const bool found = std::any_of(rows.begin(), rows.end(), [&](const Row& row) { return row.device == dev; });
    if (!found) rows.push_back({dev, "-", "-", "not found", "-", "no libtg_plugin file provides it (not built?)"});
  }
  // The six standard devices first, in the default device's preference order; then the others by name.
  const auto rank = [](const Row& row) {
    const auto* it = std::find_if(std::begin(kStandardDevices), std::end(kStandardDevices),
                                  [&](const char* dev) { return row.device == dev; });
    return std::make_pair(static_cast<size_t>(it - std::begin(kStandardDevices)), row.device);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return rank(a) < rank(b); });
  const Row header{"DEVICE", "PLUGIN", "ABI", "STATE", "FILE", "DETAIL"};
  size_t w[5] = {};
  auto widen = [&](const Row& row) {
    const std::string* cols[5] = {&row.device, &row.plugin, &row.abi, &row.state, &row.file};
    for (size_t c = 0; c < 5; ++c) w[c] = std::max(w[c], cols[c]->size());
  };
  widen(header);
  for (const Row& row : rows) widen(row);
  std::ostringstream os;
  auto print = [&](const Row& row) {
    const std::string* cols[5] = {&row.device, &row.plugin, &row.abi, &row.state, &row.file};
    for (size_t c = 0; c < 5; ++c) os << std::left << std::setw(static_cast<int>(w[c] + 2)) << *cols[c];
    // a multi-line reason (a list of libraries tried) continues under the DETAIL column
    std::string detail = row.detail;
    size_t indent = 0;
    for (size_t c = 0; c < 5; ++c) indent += w[c] + 2;
    for (size_t at = detail.find('\n'); at != std::string::npos; at = detail.find('\n', at + indent + 1))
      detail.insert(at + 1, std::string(indent, ' '));
    os << detail << "\n";
  };
  print(header);
  for (const Row& row : rows) print(row);
  return os.str();
}

}  // namespace tg
