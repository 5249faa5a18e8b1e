// Random float test data: n values uniform in [lo, hi) from a generator seeded by the test (which prints the seed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tg::test {

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  return random_floats(n, rng, lo, hi);
}

}  // namespace tg::test
