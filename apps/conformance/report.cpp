// tg-conformance's Report: GoogleTest-style console output and the JSON report (plugin, device, tiers, tests).
#include "report.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tg::conformance {

namespace {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Passed: return "passed";
    case Outcome::Failed: return "failed";
    case Outcome::Skipped: return "skipped";
  }
  return "?";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Every line of a message indented, so it reads as belonging to the test above it.
std::string indent(const std::string& message) {
  std::istringstream in(message);
  std::string line, out;
  while (std::getline(in, line)) out += "  " + line + "\n";
  return out;
}

// What the session knows about the device, if it opened (the report must not open it just to describe it).
std::string device_json() {
  try {
    const Session& s = session();
    const auto str = [](const char* p) { return json_string(p ? p : ""); };
    return cat("{\"name\": ", str(s.info.name), ", \"description\": ", str(s.info.description),
               ", \"arch\": ", str(s.info.arch), ", \"memory_bytes\": ", s.info.memory_bytes,
               ", \"device_count\": ", s.device_count, "}");
  } catch (const std::runtime_error&) {  // Failure, or Skip when there is no device
    return "null";
  }
}

}  // namespace

void Report::print_header(size_t count) const {
  const Plugin& p = plugin();
  std::cout << "[==========] Running " << count << " tests against " << plugin_path_;
  if (p.api != nullptr)
    std::cout << " (plugin " << (p.api->plugin_name ? p.api->plugin_name : "?") << ", ABI " << p.api->abi_major << "."
              << p.api->abi_minor << ", device " << device_ << ")";
  std::cout << std::endl;
}

void Report::add(Result result) {
  const long ms = static_cast<long>(result.ms);
  switch (result.outcome) {
    case Outcome::Passed: std::cout << "[       OK ] " << result.name << " (" << ms << " ms)\n"; break;
    case Outcome::Skipped:
      std::cout << indent("skipped: " + result.message) << "[  SKIPPED ] " << result.name << " (" << ms << " ms)\n";
      break;
    case Outcome::Failed:
      std::cout << indent(result.message) << "[  FAILED  ] " << result.name << " (" << ms << " ms)\n";
      break;
  }
  std::cout.flush();
  results_.push_back(std::move(result));
}

size_t Report::count(Outcome outcome) const {
  size_t n = 0;
  for (const Result& r : results_) n += r.outcome == outcome;
  return n;
}

void Report::print_summary() const {
  double total = 0;
  for (const Result& r : results_) total += r.ms;
  std::cout << "[==========] " << results_.size() << " tests ran. (" << static_cast<long>(total) << " ms total)\n";
  std::cout << "[  PASSED  ] " << count(Outcome::Passed) << " tests.\n";
  if (count(Outcome::Skipped) != 0) {
    std::cout << "[  SKIPPED ] " << count(Outcome::Skipped) << " tests, listed below:\n";
    for (const Result& r : results_) {
      if (r.outcome != Outcome::Skipped) continue;
      const std::string first_line = r.message.substr(0, r.message.find('\n'));
      std::cout << "[  SKIPPED ] " << r.name << ": " << first_line << "\n";
    }
  }
  if (count(Outcome::Failed) != 0) {
    std::cout << "[  FAILED  ] " << count(Outcome::Failed) << " tests, listed below:\n";
    for (const Result& r : results_)
      if (r.outcome == Outcome::Failed) std::cout << "[  FAILED  ] " << r.name << "\n";
  }
  std::cout << count(Outcome::Passed) << " passed, " << count(Outcome::Failed) << " failed, " << count(Outcome::Skipped)
            << " skipped" << std::endl;
}

bool Report::write_json() const {
  if (json_path_.empty()) return true;
  std::ostringstream os;
  const Plugin& p = plugin();
  os << "{\n  \"tool\": \"tg-conformance\",\n  \"plugin_path\": " << json_string(plugin_path_) << ",\n";
  os << "  \"plugin_name\": " << (p.api && p.api->plugin_name ? json_string(p.api->plugin_name) : "null") << ",\n";
  os << "  \"abi\": " << (p.api ? json_string(cat(p.api->abi_major, ".", p.api->abi_minor)) : "null") << ",\n";
  os << "  \"tool_abi\": " << json_string(cat(TG_ABI_VERSION_MAJOR, ".", TG_ABI_VERSION_MINOR)) << ",\n";
  os << "  \"device_index\": " << device_ << ",\n  \"device\": " << device_json() << ",\n";
  os << "  \"summary\": {\"passed\": " << count(Outcome::Passed) << ", \"failed\": " << count(Outcome::Failed)
     << ", \"skipped\": " << count(Outcome::Skipped) << "},\n  \"tiers\": {";
  for (Tier tier : {Tier::Core, Tier::Queues, Tier::MultiDevice}) {
    size_t n[3] = {0, 0, 0};
    for (const Result& r : results_)
      if (r.tier == tier) ++n[static_cast<int>(r.outcome)];
    os << (tier == Tier::Core ? "\n" : ",\n") << "    " << json_string(tier_name(tier)) << ": {\"passed\": " << n[0]
       << ", \"failed\": " << n[1] << ", \"skipped\": " << n[2] << "}";
  }
  os << "\n  },\n  \"tests\": [";
  for (size_t i = 0; i < results_.size(); ++i) {
    const Result& r = results_[i];
    os << (i ? ",\n" : "\n") << "    {\"name\": " << json_string(r.name)
       << ", \"tier\": " << json_string(tier_name(r.tier)) << ", \"status\": " << json_string(outcome_name(r.outcome))
       << ", \"message\": " << json_string(r.message) << ", \"ms\": " << static_cast<long>(r.ms) << "}";
  }
  os << "\n  ]\n}\n";
  std::ofstream out(json_path_);
  out << os.str();
  if (!out) {
    std::cerr << "tg-conformance: cannot write the JSON report " << json_path_ << "\n";
    return false;
  }
  return true;
}

}  // namespace tg::conformance
