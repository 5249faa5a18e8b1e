// A backward scan per n-gram length: contexts are at most a few thousand tokens, so a scan costs microseconds
// against a decode step's milliseconds, and needs no index kept in step with the context.
#include "generation/prompt_lookup.hpp"

#include <algorithm>

namespace tg::llm {

std::vector<int32_t> lookup_draft(std::span<const int32_t> context, int64_t ngram, int64_t max_draft) {
  const int64_t n = static_cast<int64_t>(context.size());
  for (int64_t m = std::min(ngram, n - 1); m >= 1 && max_draft > 0; --m) {
    const auto tail = context.subspan(static_cast<size_t>(n - m));
    // occurrences ending before the context's last token, the latest first
    for (int64_t start = n - m - 1; start >= 0; --start) {
      if (!std::equal(tail.begin(), tail.end(), context.begin() + start)) continue;
      // copied as LZ77 copies an overlapping match: past the context's end the copy reads its own start, so a
      // repeating stretch ("la le la le") is guessed max_draft tokens ahead, not only up to the context's end
      std::vector<int32_t> draft;
      for (int64_t i = start + m; static_cast<int64_t>(draft.size()) < max_draft; ++i)
        draft.push_back(i < n ? context[static_cast<size_t>(i)] : draft[static_cast<size_t>(i - n)]);
      return draft;
    }
  }
  return {};
}

int64_t best_draft(double rate, int64_t max_len, double guess_cost, double check_cost) {
  int64_t best = 0;
  double best_yield = 1, expected = 1, p = 1;  // a plain step: one token per step
  for (int64_t k = 1; k <= max_len; ++k) {
    expected += (p *= rate);
    const double yield = expected / (static_cast<double>(k) * guess_cost + check_cost);
    if (yield > best_yield) best = k, best_yield = yield;
  }
  return best;
}

}  // namespace tg::llm
