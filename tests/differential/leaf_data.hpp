// Input data of the differential tester's programs, from a seed: the tester, its float64 reference and every
// printed reproduction call this one function, so a reproduction sees exactly the values the failing run saw.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tg::difftest {

// n values uniform in [lo, hi], rounded to float32; `integral` rounds them to integers (int tensors, indices).
inline std::vector<float> leaf_data(size_t n, uint64_t seed, double lo, double hi, bool integral = false) {
  std::vector<float> out(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (auto& v : out) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    double u = static_cast<double>(s >> 11) / static_cast<double>(1ull << 53);
    double x = lo + (hi - lo) * u;
    v = static_cast<float>(integral ? std::round(x) : x);
  }
  return out;
}

inline std::vector<int32_t> leaf_ints(size_t n, uint64_t seed, double lo, double hi) {
  std::vector<int32_t> out;
  for (float v : leaf_data(n, seed, lo, hi, true)) out.push_back(static_cast<int32_t>(v));
  return out;
}

}  // namespace tg::difftest
