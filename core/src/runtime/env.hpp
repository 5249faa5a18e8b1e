// Environment knobs (DEBUG, DEV, CPU_COUNT, ...): read once, documented in the README.
#pragma once

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace tg::rt {

// An integer switch; a value that is not a whole int (BEAM=abc, BEAM=4294967297) is ignored with one warning per
// switch and value, not read as some other number.
inline int getenv_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno == 0 && end && *end == 0 && x >= INT_MIN && x <= INT_MAX) return static_cast<int>(x);
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard lock(mu);
  if (warned.insert(std::string(name) + "=" + v).second)
    std::fprintf(stderr, "tg: %s=%s is not an integer tg can use; %s stays %d\n", name, v, name, fallback);
  return fallback;
}

inline std::string getenv_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

// DEBUG: 1 device opens and kernel counts, 2 each launch with time, 3 kernel ASTs, 4 rendered source, 5 KIR.
inline int debug_level() {
  static const int level = getenv_int("DEBUG", 0);
  return level;
}

}  // namespace tg::rt
