#include "model/tensor_parallel.hpp"

#include "tg/error.hpp"

namespace tg::llm {

std::pair<int64_t, int64_t> TensorParallel::share(int64_t n, int64_t unit, const std::string& what) const {
  const int64_t units = unit > 0 && n % unit == 0 ? n / unit : 0;
  if (units < world)
    throw Error("tg-llm: " + what + " do not split over " + std::to_string(world) + " ranks (" + std::to_string(units) +
                " units of " + std::to_string(unit) + "; use fewer devices)");
  return {units * rank / world * unit, units * (rank + 1) / world * unit};
}

}  // namespace tg::llm
