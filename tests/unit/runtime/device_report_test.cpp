// Mirrors core/src/runtime/device_report.cpp: `tg devices` as a table (aligned columns, the six standard devices
// first in the default device's order, a "not found" row for each one no file provides, then the others by name)
// and file by file (--explain). Checked on whatever plugins this build tree holds; the CPU plugin is always there.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tg/device.hpp"
#include "tg/plugin_abi.h"

namespace tg {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct Row {
  std::string device, plugin, abi, state, file, detail;
};

// Splits the table by the header's column starts; a continuation line (a multi-line detail) joins its row.
std::vector<Row> parse_table(const std::string& table, std::string& problem) {
  std::vector<std::string> lines = lines_of(table);
  if (lines.empty()) return problem = "empty table", std::vector<Row>{};
  const std::string& head = lines[0];
  const char* names[] = {"DEVICE", "PLUGIN", "ABI", "STATE", "FILE", "DETAIL"};
  size_t col[6];
  for (int c = 0; c < 6; ++c) {
    col[c] = head.find(names[c]);
    if (col[c] == std::string::npos || (c && col[c] <= col[c - 1]))
      return problem = "bad header: " + head, std::vector<Row>{};
  }
  if (col[0] != 0 || trim(head.substr(col[5])) != "DETAIL") return problem = "bad header: " + head, std::vector<Row>{};
  std::vector<Row> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.size() > col[5] && l.find_first_not_of(' ') == col[5]) {  // a detail's next line, under DETAIL
      if (rows.empty()) return problem = "continuation before any row: " + l, rows;
      rows.back().detail += "\n" + l.substr(col[5]);
      continue;
    }
    if (l.size() < col[5]) return problem = "short row: " + l, rows;
    for (int c = 1; c < 6; ++c)
      if (l[col[c] - 1] != ' ' || l[col[c] - 2] != ' ')
        return problem = "column " + std::string(names[c]) + " not aligned in: " + l, rows;
    auto field = [&](int c) { return trim(l.substr(col[c], c == 5 ? std::string::npos : col[c + 1] - col[c])); };
    rows.push_back({field(0), field(1), field(2), field(3), field(4), l.substr(col[5])});
  }
  return rows;
}

const std::vector<std::string> kSix = {"NV", "AMD", "METAL", "CPU", "QCOM", "DSP"};

TEST(DeviceReport, TableColumnsAndCpuRow) {
  std::string problem;
  const std::vector<Row> rows = parse_table(device_table(), problem);
  ASSERT_EQ(problem, "") << device_table();
  const std::string abi = std::to_string(TG_ABI_VERSION_MAJOR) + "." + std::to_string(TG_ABI_VERSION_MINOR);
  auto cpu = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.file == "libtg_plugin_cpu.so"; });
  ASSERT_NE(cpu, rows.end()) << device_table();
  EXPECT_EQ(cpu->device, "CPU");
  EXPECT_EQ(cpu->plugin, "cpu");
  EXPECT_EQ(cpu->abi, abi);
  EXPECT_EQ(cpu->state, "ready");
  EXPECT_EQ(cpu->detail.rfind("CPU: ", 0), 0u) << "the detail of a ready device is its description: " << cpu->detail;
  const std::set<std::string> states = {"ready", "no device", "shadowed", "failed", "not found"};
  for (const Row& r : rows) {
    EXPECT_TRUE(states.count(r.state)) << "unknown state '" << r.state << "' of " << r.device;
    EXPECT_EQ(r.file.find('/'), std::string::npos) << "the table shows file names, not paths: " << r.file;
    if (r.file != "-") continue;
    EXPECT_EQ(r.state, "not found") << r.device;
    EXPECT_EQ(r.detail, "no libtg_plugin file provides it (not built?)") << r.device;
    EXPECT_EQ(r.plugin, "-");
    EXPECT_NE(std::find(kSix.begin(), kSix.end(), r.device), kSix.end()) << "only standard devices get a not-found row";
  }
}

TEST(DeviceReport, SixStandardDevicesFirstThenByName) {
  std::string problem;
  const std::vector<Row> rows = parse_table(device_table(), problem);
  ASSERT_EQ(problem, "");
  // the device column with repeats (several files for one DEV name) collapsed
  std::vector<std::string> order;
  for (const Row& r : rows)
    if (order.empty() || order.back() != r.device) order.push_back(r.device);
  ASSERT_GE(order.size(), kSix.size()) << device_table();
  EXPECT_EQ(std::vector<std::string>(order.begin(), order.begin() + 6), kSix) << device_table();
  EXPECT_TRUE(std::is_sorted(order.begin() + 6, order.end())) << "devices past the six go by name\n" << device_table();
  for (size_t i = 6; i < order.size(); ++i)
    EXPECT_EQ(std::find(kSix.begin(), kSix.end(), order[i]), kSix.end()) << order[i] << " listed twice";
}

TEST(DeviceReport, ExplainListsTheSearchOrderAndEachFile) {
  const std::string with = explain_devices(true), without = explain_devices(false);
  const std::vector<std::string> lines = lines_of(with);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("search order: ", 0), 0u) << lines[0];
  EXPECT_EQ(without.rfind("search order:", 0), std::string::npos)
      << "explain_devices(false) leaves the search order out";
  EXPECT_EQ(with.substr(with.find('\n') + 1), without) << "the rest is the same";
  const std::string abi = std::to_string(TG_ABI_VERSION_MAJOR) + "." + std::to_string(TG_ABI_VERSION_MINOR);
  bool cpu = false;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("/libtg_plugin_cpu.so") == std::string::npos || l[0] == ' ') continue;
    cpu = true;
    EXPECT_EQ(lines[i + 1], "  loaded: plugin cpu, ABI " + abi + ", device CPU");
    ASSERT_LT(i + 2, lines.size());
    EXPECT_EQ(lines[i + 2].rfind("    CPU: ", 0), 0u) << "the opened device under it: " << lines[i + 2];
  }
  EXPECT_TRUE(cpu) << with;
  // every file line is followed by its verdict
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i][0] == ' ') continue;
    ASSERT_LT(i + 1, lines.size()) << lines[i];
    const std::string& v = lines[i + 1];
    EXPECT_TRUE(v.rfind("  loaded: ", 0) == 0 || v.rfind("  not used: ", 0) == 0 || v.rfind("  lost to ", 0) == 0)
        << "no verdict under " << lines[i] << ": " << v;
  }
}

}  // namespace
}  // namespace tg
