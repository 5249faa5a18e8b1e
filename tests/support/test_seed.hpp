// The seed of a randomized test: TG_TEST_SEED when set (to rerun a failure with its data), else a fresh one;
// printed either way, so that every failure in a log can be replayed.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string_view>

namespace tgtest {

inline uint32_t test_seed(std::string_view what) {
  const char* fixed = std::getenv("TG_TEST_SEED");
  const uint32_t seed = fixed ? static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
  std::cout << what << ": seed=" << seed << " (TG_TEST_SEED=" << seed << " reruns it)\n";
  return seed;
}

}  // namespace tgtest
