// RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * w.
#pragma once

#include "tg/tensor.hpp"

namespace tg::llm {

inline Tensor rms_norm(const Tensor& x, const Tensor& w, double eps) {
  return x * ((x * x).mean({-1}, true) + eps).rsqrt() * w;
}

}  // namespace tg::llm
