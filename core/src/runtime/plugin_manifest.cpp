// Parsing plugin manifests: `key = value` lines whose values are strings, lists of strings or integers.
#include "runtime/plugin_manifest.hpp"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tg/error.hpp"

namespace tg::rt {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A reader of one line's value, throwing with the file and line on malformed text.
struct ValueParser {
  const std::string& where;
  const std::string& text;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const { throw Error("tg: plugin manifest " + where + ": " + what); }
  void skip_space() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  }
  std::string string() {
    skip_space();
    if (pos >= text.size() || text[pos] != '"') fail("expected a \"quoted string\" in: " + text);
    std::string out;
    for (++pos; pos < text.size() && text[pos] != '"'; ++pos) {
      if (text[pos] == '\\') fail("escapes are not supported in: " + text);
      out += text[pos];
    }
    if (pos >= text.size()) fail("unterminated string in: " + text);
    ++pos;
    return out;
  }
  std::vector<std::string> list() {
    skip_space();
    if (pos >= text.size() || text[pos] != '[') fail("expected a [\"list\", \"of strings\"] in: " + text);
    ++pos;
    std::vector<std::string> out;
    skip_space();
    if (pos < text.size() && text[pos] == ']') return ++pos, out;
    for (;;) {
      out.push_back(string());
      skip_space();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') return ++pos, out;
      fail("expected ',' or ']' in: " + text);
    }
  }
  int64_t integer() {
    skip_space();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), v);
    if (ec != std::errc()) fail("expected an integer in: " + text);
    pos = static_cast<size_t>(end - text.data());
    return v;
  }
  void end() {
    skip_space();
    if (pos < text.size() && text[pos] != '#') fail("unexpected text after the value: " + text.substr(pos));
  }
};

// "1.0-1.1" (or "1.1": a single version) -> major, oldest and newest minor.
void parse_abi(const ValueParser& p, const std::string& s, PluginManifest& m) {
  unsigned maj1 = 0, min1 = 0, maj2 = 0, min2 = 0;
  int used = 0, used_range = 0;  // characters read by each form: either must read all of s
  const bool single = std::sscanf(s.c_str(), "%u.%u%n", &maj1, &min1, &used) == 2 && used == static_cast<int>(s.size());
  const bool range = std::sscanf(s.c_str(), "%u.%u-%u.%u%n", &maj1, &min1, &maj2, &min2, &used_range) == 4 &&
                     used_range == static_cast<int>(s.size());
  if (single)
    maj2 = maj1, min2 = min1;
  else if (!range)
    p.fail(
        "abi must read \"MAJOR.MINOR-MAJOR.MINOR\" (the oldest core served - the version "
        "implemented), not \"" +
        s + "\"");
  if (maj1 != maj2 || min1 > min2 || maj1 == 0)
    p.fail("abi \"" + s + "\" is not a range inside one nonzero major version");
  m.abi_major = maj1, m.abi_min_minor = min1, m.abi_max_minor = min2;
}

}  // namespace

std::string PluginManifest::abi_range() const {
  return std::to_string(abi_major) + "." + std::to_string(abi_min_minor) + "-" + std::to_string(abi_major) + "." +
         std::to_string(abi_max_minor);
}

std::string manifest_path_for(const std::string& plugin_path) {
  return std::filesystem::path(plugin_path).replace_extension(".manifest").string();
}

std::optional<PluginManifest> read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    throw Error("tg: plugin manifest " + path + ": cannot be read");
  }
  PluginManifest m;
  m.path = path;
  bool has_plugin = false, has_devices = false, has_abi = false;
  std::string raw;
  for (int lineno = 1; std::getline(in, raw); ++lineno) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(lineno);
    const size_t eq = line.find('=');
    const std::string key = trim(line.substr(0, eq == std::string::npos ? 0 : eq));
    if (eq == std::string::npos || key.empty()) throw Error("tg: plugin manifest " + where + ": expected key = value");
    const std::string value = line.substr(eq + 1);
    ValueParser p{where, value};
    if (key == "plugin")
      m.plugin = p.string(), has_plugin = true;
    else if (key == "devices")
      m.devices = p.list(), has_devices = true;
    else if (key == "abi")
      parse_abi(p, p.string(), m), has_abi = true;
    else if (key == "requires")
      m.requires_libs = p.list();
    else if (key == "priority")
      m.priority = p.integer();
    else
      continue;  // a key from a newer SDK
    p.end();
  }
  const char* missing = !has_plugin ? "plugin" : !has_devices ? "devices" : !has_abi ? "abi" : nullptr;
  if (missing) throw Error("tg: plugin manifest " + path + ": the required key '" + missing + "' is missing");
  if (m.devices.empty()) throw Error("tg: plugin manifest " + path + ": devices lists no DEV name");
  return m;
}

}  // namespace tg::rt
