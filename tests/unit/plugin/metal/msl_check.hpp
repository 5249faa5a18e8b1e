// The MSL syntax check the METAL tests run: clang++ -fsyntax-only against shim/metal_stdlib (Metal's types,
// qualifiers, attributes and library functions as far as the plugin renders them), one kernel or a batch of kernels
// per invocation, and the command's exit status and diagnostics.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace tg::test {

struct CheckResult {
  bool ok = false;
  std::string diagnostics;
};

// A directory of its own under the test's temp dir, for the .metal files handed to clang.
inline const std::string& msl_work_dir() {
  static const std::string dir = [] {
    std::string pattern = ::testing::TempDir() + "tg_msl_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) return ::testing::TempDir();
    return pattern + "/";
  }();
  return dir;
}

inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command's exit status and everything it printed (stdout and stderr).
inline CheckResult run_command(const std::string& command) {
  CheckResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {false, "cannot run: " + command};
  std::array<char, 4096> chunk;
  size_t n = 0;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) result.diagnostics.append(chunk.data(), n);
  result.ok = pclose(pipe) == 0;
  return result;
}

// Type-checks one MSL source (a whole file, `#include <metal_stdlib>` and all) with clang++ and the shim.
inline CheckResult msl_syntax_check(const std::string& source, const std::string& stem) {
  const std::string path = msl_work_dir() + stem + ".metal";
  std::ofstream(path) << source;
  return run_command(quoted(TG_MSL_CHECK_CXX) +
                     " -std=c++17 -fsyntax-only -flax-vector-conversions=none -Werror=unknown-attributes -I" +
                     quoted(TG_MSL_SHIM_DIR) + " -x c++ " + quoted(path));
}

// Several kernels in one clang run: each in a namespace of its own (kernel names repeat across programs; the
// shim's include guard makes every `#include <metal_stdlib>` after the first a no-op).
inline CheckResult msl_syntax_check_batch(const std::vector<std::string>& sources, const std::string& stem) {
  std::string file = "#include <metal_stdlib>\n";
  for (size_t i = 0; i < sources.size(); ++i)
    file += "namespace tg_kernel_" + std::to_string(i) + " {\n" + sources[i] + "}\n";
  return msl_syntax_check(file, stem);
}

}  // namespace tg::test
