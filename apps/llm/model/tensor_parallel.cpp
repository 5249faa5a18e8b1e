#include "model/tensor_parallel.hpp"

#include "tg/error.hpp"

namespace tg::llm {

int64_t count(const IndexRanges& r) {
  int64_t n = 0;
  for (auto [b, e] : r) n += e - b;
  return n;
}

IndexRanges merged(IndexRanges r) {
  IndexRanges out;
  for (auto [b, e] : r) {
    if (b == e) continue;
    if (!out.empty() && out.back().second == b)
      out.back().second = e;
    else
      out.emplace_back(b, e);
  }
  return out;
}

IndexRanges scaled(const IndexRanges& r, int64_t by, int64_t offset) {
  IndexRanges out;
  for (auto [b, e] : r) out.emplace_back(b * by + offset, e * by + offset);
  return merged(std::move(out));
}

std::pair<int64_t, int64_t> TensorParallel::share(int64_t n, int64_t unit, const std::string& what) const {
  const int64_t units = unit > 0 && n % unit == 0 ? n / unit : 0;
  if (units < world)
    throw Error("tg-llm: " + what + " do not split over " + std::to_string(world) + " ranks (" + std::to_string(units) +
                " units of " + std::to_string(unit) + "; use fewer devices)");
  return {units * rank / world * unit, units * (rank + 1) / world * unit};
}

}  // namespace tg::llm
