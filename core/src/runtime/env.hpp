// Environment knobs (DEBUG, DEV, CPU_COUNT, ...): read once, documented in the README.
#pragma once

#include <cstdlib>
#include <string>

namespace tg::rt {

inline int getenv_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (end && *end == 0) ? static_cast<int>(x) : fallback;
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
