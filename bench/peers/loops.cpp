#include "loops.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace tg::bench {

void on_threads(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto& t : ts) t.join();
}

void triad_loop(const float* a, const float* b, const float* c, float* d, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) d[i] = a[i] * b[i] + c[i];
}

// Sums keep 16 partial sums: without -ffast-math the compiler may not reorder one running sum into vector lanes.
double sum_loop(const float* a, int64_t lo, int64_t hi) {
  float acc[16] = {0};
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j];
  double s = 0;
  for (; i < hi; ++i) s += a[i];
  for (float x : acc) s += x;
  return s;
}

void half_matvec_loop(const uint16_t* w, const float* x, float* y, int64_t n, int64_t lo, int64_t hi) {
  const _Float16* h = reinterpret_cast<const _Float16*>(w);
  for (int64_t i = lo; i < hi; ++i) {
    float acc[16] = {0};
    for (int64_t k = 0; k + 16 <= n; k += 16)
      for (int j = 0; j < 16; ++j) acc[j] += static_cast<float>(h[i * n + k + j]) * x[k + j];
    float s = 0;
    for (float v : acc) s += v;
    y[i] = s;
  }
}

void int8_matvec_loop(const int8_t* a, const int8_t* b, int32_t* y, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    int32_t acc = 0;
    for (int64_t k = 0; k < n; ++k) acc += static_cast<int32_t>(a[i * n + k]) * b[k];
    y[i] = acc;
  }
}

void softmax_loop(const float* x, float* y, int64_t cols, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float m = in[0], s = 0;
    for (int64_t c = 1; c < cols; ++c) m = std::max(m, in[c]);
    for (int64_t c = 0; c < cols; ++c) s += out[c] = std::exp(in[c] - m);
    for (int64_t c = 0; c < cols; ++c) out[c] /= s;
  }
}

void layernorm_loop(const float* x, float* y, int64_t cols, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += in[c];
    mean /= static_cast<float>(cols);
    for (int64_t c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(cols) + 1e-5f);
    for (int64_t c = 0; c < cols; ++c) out[c] = (in[c] - mean) * inv;
  }
}

}  // namespace tg::bench
