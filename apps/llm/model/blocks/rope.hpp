// Rotary position embeddings: the angles of every cache row, computed in double on the host once per base and
// scaling (frequency factors, linear, YaRN as ggml's rope computes them), and their application to q and k.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg::llm {

class RopeTable {
 public:
  // Angles p * base^(-2i/dims) / freq_factors[i] for p < positions and i < dims / 2 (freq_factors empty: all 1),
  // then scaled as `scaling` says.
  RopeTable(double base, int64_t dims, const RopeScaling& scaling, const std::vector<float>& freq_factors,
            int64_t positions, const std::string& device);

  // x: (T, heads, hd) rotated by the angles of positions [pos, pos + T) on its first `dims` values of each head,
  // as NEOX (halves) or ggml's normal mode (adjacent pairs); the rest of each head passes through.
  Tensor apply(const Tensor& x, int64_t T, const BoundVariable& pos, bool neox) const;

 private:
  int64_t dims_;
  Tensor cos_, sin_;  // (positions, dims / 2)
};

}  // namespace tg::llm
