// How much of a cross product a suite runs. By default all of it. With TG_TEST_SWEEP=cross-section (set on the
// QCOM runs of the Tensor suites, whose OpenCL here is PoCL, spending ~0.5 s compiling each kernel) a sweep over two
// dimensions keeps every value of each dimension, but pairs the others only with the first value of the other
// dimension (for example, every dtype on the first shape, and every shape on float32). The CPU runs keep the
// whole product.
#pragma once

#include <cstdlib>
#include <string_view>

namespace tgtest {

inline bool full_sweep() {
  const char* s = std::getenv("TG_TEST_SWEEP");
  return s == nullptr || std::string_view(s) != "cross-section";
}

// Whether a pair of a two-dimensional sweep runs: a_first / b_first say whether each coordinate is the first value
// of its dimension.
inline bool swept(bool a_first, bool b_first) { return full_sweep() || a_first || b_first; }

}  // namespace tgtest
