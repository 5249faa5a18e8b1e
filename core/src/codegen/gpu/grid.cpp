// GPU plan: one output per work-item, the output loops bound to the grid (bind_gpu_grid).
#include "codegen/gpu/plan_parts.hpp"

#include <algorithm>

namespace tg::codegen {

using namespace ir;

namespace {

// The largest power of two <= limit that divides n (1 when n is odd): work-groups then tile a loop exactly, so no
// work-item needs a bounds check (a guard before a barrier would deadlock the group).
uint32_t local_size_for(int64_t n, uint64_t limit) {
  uint32_t l = 1;
  while (static_cast<uint64_t>(l) * 2 <= limit && n % (static_cast<int64_t>(l) * 2) == 0) l *= 2;
  return l;
}

}  // namespace

bool is_gpu(const tg_renderer_caps& caps) {
  return caps.has_local && !caps.has_threads && caps.max_local_threads > 1 && caps.max_global_dims >= 1;
}

// One output per work-item: the innermost constant output loops go on the grid's dims (dim 0 innermost, for
// coalesced access), each split into work-groups of a power of two that divides it, up to 256 work-items per
// group. When there are more loops than dims, the outer ones are collapsed into the last dim (one id, divided back
// into each loop's index); a loop whose groups would exceed a dim's limit stays a loop.
void bind_gpu_grid(Emitter& e, const std::vector<UOpPtr>& ranges, const tg_renderer_caps& caps, int64_t next_id) {
  constexpr uint64_t kGroupThreads = 256;
  const uint32_t dims = std::min(caps.max_global_dims, 3u);
  std::vector<UOpPtr> loops;  // the constant loops, innermost first
  for (size_t i = ranges.size(); i-- > 0;)
    if (is_const_end(ranges[i])) loops.push_back(ranges[i]);
  uint64_t threads = 1;
  uint32_t dim = 0;
  auto local = [&](int64_t n) {
    return local_size_for(
        n, std::min<uint64_t>({kGroupThreads / threads, caps.max_local[dim], caps.max_local_threads / threads}));
  };
  for (size_t i = 0; i < loops.size() && dim < dims; ++i) {
    if (dim + 1 == dims && i + 1 < loops.size()) {  // the last dim and loops to spare: one id for all of them
      int64_t n = 1;
      for (size_t j = i; j < loops.size(); ++j) n *= extent(loops[j]);
      const uint32_t l = local(n);
      if (n / l <= caps.max_global[dim]) {
        const DType t = n <= INT32_MAX ? dtypes::int32 : dtypes::int64;  // 32-bit division where it fits
        const UOpPtr flat = UOp::make(Op::RANGE, t, {const_int(t, n)}, RangeInfo{next_id, AxisType::GLOBAL});
        e.special(flat, TG_SPECIAL_GLOBAL, dim++, l);
        int64_t stride = 1;  // loops[i] varies fastest
        for (size_t j = i; j < loops.size(); ++j) {
          const UOpPtr index = simplify(cast(flat / stride % extent(loops[j]), loops[j]->dtype));
          e.set(loops[j], e.emit(index));
          stride *= extent(loops[j]);
        }
        return;
      }
    }
    const int64_t n = extent(loops[i]);
    const uint32_t l = local(n);
    if (n / l > caps.max_global[dim]) continue;
    e.special(loops[i], TG_SPECIAL_GLOBAL, dim++, l);
    threads *= l;
  }
}

}  // namespace tg::codegen
