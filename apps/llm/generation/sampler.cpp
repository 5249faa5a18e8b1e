// Sampling over the candidates that survive each filter; probabilities in double.
#include "generation/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "constrain/token_mask.hpp"
#include "tg/error.hpp"

namespace tg::llm {

Logprobs logprobs_of(std::span<const float> logits, int32_t chosen, int64_t top_n) {
  double top = -std::numeric_limits<double>::infinity();
  for (float v : logits)
    if (std::isfinite(v)) top = std::max(top, static_cast<double>(v));
  double sum = 0;  // log-sum-exp around the largest: no overflow
  for (float v : logits)
    if (std::isfinite(v)) sum += std::exp(static_cast<double>(v) - top);
  const double lse = top + std::log(sum);
  auto logprob = [&](int32_t i) {
    const float v = logits[static_cast<size_t>(i)];
    return std::isfinite(v) ? static_cast<double>(v) - lse : -std::numeric_limits<double>::infinity();
  };
  std::vector<int32_t> idx;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) idx.push_back(static_cast<int32_t>(i));
  const size_t n = std::min(idx.size(), static_cast<size_t>(std::max<int64_t>(top_n, 0)));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(n), idx.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  Logprobs out{{chosen, logprob(chosen)}, {}};
  for (size_t i = 0; i < n; ++i) out.top.push_back({idx[i], logprob(idx[i])});
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  int32_t tok;
  if (constraint_) {
    masked_.assign(logits.begin(), logits.end());
    constraint_->apply(masked_);
    while (!constraint_->accept(tok = pick(masked_))) constraint_->refuse(tok, masked_);
  } else {
    tok = pick(logits);
  }
  if (p_.logprobs >= 0) last_ = logprobs_of(logits, tok, p_.logprobs);
  return tok;
}

int32_t Sampler::pick(std::span<const float> logits) {
  std::vector<int32_t> idx;
  idx.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) idx.push_back(static_cast<int32_t>(i));
  if (idx.empty()) throw Error("tg-llm: no logit is finite (the model produced no usable output)");
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (p_.greedy()) return *std::min_element(idx.begin(), idx.end(), by_logit);
  size_t k = p_.top_k > 0 ? std::min(idx.size(), static_cast<size_t>(p_.top_k)) : idx.size();
  std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(k), idx.end(), by_logit);
  idx.resize(k);
  // softmax at temperature 1 for the filters, as llama.cpp's top-p / min-p see it
  std::vector<double> p(idx.size());
  const double top = logits[idx[0]];
  double sum = 0;
  for (size_t i = 0; i < idx.size(); ++i) sum += p[i] = std::exp(static_cast<double>(logits[idx[i]]) - top);
  size_t keep = idx.size();
  if (p_.top_p < 1.0) {
    double acc = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      acc += p[i] / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p_.min_p > 0.0)
    for (size_t i = 1; i < keep; ++i)
      if (p[i] < p_.min_p * p[0]) {
        keep = i;
        break;
      }
  idx.resize(keep);
  std::vector<double> w(keep);
  for (size_t i = 0; i < keep; ++i) w[i] = std::exp((static_cast<double>(logits[idx[i]]) - top) / p_.temperature);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  return idx[pick(rng_)];
}

}  // namespace tg::llm
