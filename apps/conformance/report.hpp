// tg-conformance's Report: the GoogleTest-style lines per test, the final summary, and the JSON report.
#pragma once

#include "harness.hpp"

#include <string>
#include <vector>

namespace tg::conformance {

enum class Outcome { Passed, Failed, Skipped };

struct Result {
  std::string name;
  Tier tier;
  Outcome outcome;
  std::string message;  // the failure or the skip reason; empty on success
  double ms;
};

class Report {
 public:
  Report(std::string plugin_path, uint32_t device, std::string json_path)
      : plugin_path_(std::move(plugin_path)), device_(device), json_path_(std::move(json_path)) {}
  void print_header(size_t count) const;
  void add(Result result);  // prints the test's [ OK ] / [ FAILED ] / [ SKIPPED ] line
  void print_summary() const;
  // Writes the JSON report if --json was given; false (with a message on stderr) if the file cannot be written.
  bool write_json() const;
  size_t failed() const { return count(Outcome::Failed); }

 private:
  size_t count(Outcome outcome) const;
  std::string plugin_path_;
  uint32_t device_;
  std::string json_path_;
  std::vector<Result> results_;
};

}  // namespace tg::conformance
