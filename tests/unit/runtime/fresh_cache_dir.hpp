// A fresh TG_CACHE_DIR for one test process: the disk cache reads the variable once, so a test file sets it in a
// namespace-scope initializer, before anything runs: `const std::string kDir = fresh_cache_dir("beam");`.
#pragma once

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace tg::test {

inline std::string fresh_cache_dir(const std::string& name) {
  std::string d =
      (std::filesystem::temp_directory_path() / ("tg-" + name + "-test-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(d);
  setenv("TG_CACHE_DIR", d.c_str(), 1);
  // removed when the process exits (this static is built before the cache, so it is destroyed after it)
  static struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const std::string& dir : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    }
  } cleanup;
  cleanup.dirs.push_back(d);
  return d;
}

}  // namespace tg::test
