// llama.cpp's quantize_row_q8_0, written out in float32 as it is there, for the tests' references: per 32 values
// d = max|x| / 127, q = roundf(x * (1 / d)). The int8 products (the integer formats) multiply these.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tg::llm {

inline std::vector<int8_t> q8_values(const std::vector<float>& x, std::vector<float>& scales) {
  std::vector<int8_t> q(x.size());
  scales.assign(x.size() / 32, 0.0f);
  for (size_t b = 0; b < scales.size(); ++b) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    scales[b] = d;
    for (size_t i = 0; i < 32; ++i) q[b * 32 + i] = static_cast<int8_t>(std::roundf(x[b * 32 + i] * id));
  }
  return q;
}

// x as the int8 products see it: q * d per value, in float64
inline std::vector<double> q8_rounded(const std::vector<float>& x) {
  std::vector<float> d;
  const std::vector<int8_t> q = q8_values(x, d);
  std::vector<double> v(x.size());
  for (size_t i = 0; i < x.size(); ++i) v[i] = static_cast<double>(q[i]) * d[i / 32];
  return v;
}

}  // namespace tg::llm
