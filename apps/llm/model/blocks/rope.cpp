#include "model/blocks/rope.hpp"

#include <algorithm>
#include <cmath>

namespace tg::llm {

namespace {

// YaRN's correction range: the dimensions whose wavelength fits beta_fast / beta_slow rotations into the original
// context (ggml_rope_yarn_corr_dims), as floats the way ggml computes them.
struct YarnRange {
  double low, high;
};
YarnRange yarn_range(int64_t dims, const RopeScaling& s, double base) {
  auto dim = [&](double rotations) {
    return static_cast<double>(dims) * std::log(static_cast<double>(s.original_context) / (rotations * 2 * M_PI)) /
           (2 * std::log(base));
  };
  return {std::max(0.0, std::floor(dim(s.beta_fast))),
          std::min(static_cast<double>(dims - 1), std::ceil(dim(s.beta_slow)))};
}

struct Angles {
  std::vector<float> cos, sin;  // (positions, dims / 2)
};

Angles angles(double base, int64_t dims, const RopeScaling& scaling, const std::vector<float>& freq_factors,
              int64_t positions) {
  const int64_t half = dims / 2;
  const bool yarn = scaling.type == RopeScaling::Type::yarn;
  const double freq_scale = scaling.type == RopeScaling::Type::none ? 1.0 : 1.0 / scaling.factor;
  // cos and sin (so each score by its square) scaled by attn_factor, and for YaRN by its magnitude term
  const double mscale = scaling.magnitude();
  const YarnRange range = yarn ? yarn_range(dims, scaling, base) : YarnRange{0, 0};
  std::vector<float> c(static_cast<size_t>(positions * half)), s(c.size());
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(dims));
    const double factor = freq_factors.empty() ? 1.0 : static_cast<double>(freq_factors[static_cast<size_t>(i)]);
    // YaRN: dimensions below the range extrapolate (keep their angle), above it interpolate (angle * freq_scale)
    double mix = 0;
    if (yarn)
      mix = 1.0 - std::clamp((static_cast<double>(i) - range.low) / std::max(0.001, range.high - range.low), 0.0, 1.0);
    for (int64_t p = 0; p < positions; ++p) {
      const double extrap = static_cast<double>(p) * inv_freq / factor;
      const double a = yarn ? extrap * freq_scale * (1 - mix) + extrap * mix : extrap * freq_scale;
      c[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(a) * mscale);
      s[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(a) * mscale);
    }
  }
  return {std::move(c), std::move(s)};
}

}  // namespace

RopeTable::RopeTable(double base, int64_t dims, const RopeScaling& scaling, const std::vector<float>& freq_factors,
                     int64_t positions, const std::string& device)
    : dims_(dims), cos_(Tensor::zeros({1}, dtypes::float32, device)), sin_(cos_) {
  const Angles a = angles(base, dims, scaling, freq_factors, positions);
  cos_ = Tensor::from_vector(a.cos, {positions, dims / 2}, device);
  sin_ = Tensor::from_vector(a.sin, {positions, dims / 2}, device);
}

Tensor RopeTable::apply(const Tensor& x, int64_t T, const BoundVariable& pos, bool neox) const {
  const int64_t hd = x.shape()[2], half = dims_ / 2, heads = x.shape()[1];
  if (dims_ < hd) {  // partial: rotate the first dims_ values of each head, pass the rest through
    return Tensor::cat({apply(x.slice(-1, 0, dims_), T, pos, neox), x.slice(-1, dims_, hd)}, -1);
  }
  Tensor c = cos_.shrink(0, Dim(pos), Dim(T)).reshape({Dim(T), 1, half});
  Tensor s = sin_.shrink(0, Dim(pos), Dim(T)).reshape({Dim(T), 1, half});
  if (neox) {
    Tensor x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, hd);
    return Tensor::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
  }
  Tensor xr = x.reshape({T, heads, half, 2});
  Tensor x0 = xr.slice(-1, 0, 1).squeeze(-1), x1 = xr.slice(-1, 1, 2).squeeze(-1);
  return Tensor::stack({x0 * c - x1 * s, x0 * s + x1 * c}, -1).reshape({T, heads, hd});
}

}  // namespace tg::llm
