// The plain-loop peers of bench_cpu's memory-bound and row-wise kernels: what a C++ programmer writes by hand,
// compiled at its best here (loops.cpp is built with -O3 -march=native, see bench/CMakeLists.txt). Each works on
// rows or elements [lo, hi) and is run on every thread by on_threads.
#pragma once

#include <cstdint>
#include <functional>

namespace tg::bench {

// f(lo, hi) on `threads` threads over [0, n), in equal contiguous parts.
void on_threads(int threads, int64_t n, const std::function<void(int64_t lo, int64_t hi)>& f);

void triad_loop(const float* a, const float* b, const float* c, float* d, int64_t lo, int64_t hi);  // d = a * b + c
double sum_loop(const float* a, int64_t lo, int64_t hi);
// y[i] = sum_k w[i, k] x[k], w float16 (as bits), rows of n
void half_matvec_loop(const uint16_t* w, const float* x, float* y, int64_t n, int64_t lo, int64_t hi);
void int8_matvec_loop(const int8_t* a, const int8_t* b, int32_t* y, int64_t n, int64_t lo, int64_t hi);
void softmax_loop(const float* x, float* y, int64_t cols, int64_t lo, int64_t hi);
void layernorm_loop(const float* x, float* y, int64_t cols, int64_t lo, int64_t hi);  // (x - mean) / sqrt(var + 1e-5)

}  // namespace tg::bench
