// The heuristic's choices from the machine a renderer describes (see heuristic.hpp).
#include "codegen/heuristic.hpp"

#include <algorithm>

#include "codegen/lower_gpu.hpp"

namespace tg::codegen {

Machine machine_of(const tg_renderer_caps& caps) {
  Machine m{64, 32, 0};
  if (!TG_ABI_HAS(&caps, tg_renderer_caps, l2_bytes)) return m;
  if (caps.simd_bytes) m.vector_bytes = static_cast<int>(caps.simd_bytes);
  if (caps.simd_registers) m.registers = static_cast<int>(caps.simd_registers);
  m.l2_bytes = caps.l2_bytes;
  return m;
}

int widest_lanes(const tg_renderer_caps& caps, DType d) {
  if (is_gpu(caps)) return 4;
  return std::clamp(machine_of(caps).vector_bytes / static_cast<int>(d.itemsize()), 2, 16);
}

std::vector<std::pair<int, int>> register_tiles(const tg_renderer_caps& caps, DType d, int lanes, int64_t rows,
                                                int64_t vecs) {
  if (is_gpu(caps)) return {{4, 1}, {2, 1}};  // a work-item's registers are few; the grid supplies the parallelism
  const Machine m = machine_of(caps);
  // a vector wider than a register takes several
  const int per_vec = std::max(1, (lanes * static_cast<int>(d.itemsize()) + m.vector_bytes - 1) / m.vector_bytes);
  std::vector<std::pair<int, int>> tiles;
  for (int u = 1; u <= 16; ++u)
    for (int c = 1; c <= 4; ++c) {
      if ((u == 1 && c == 1) || (rows && rows % u) || (vecs && vecs % c)) continue;
      if ((u * c + c) * per_vec + 1 <= m.registers) tiles.emplace_back(u, c);
    }
  // a step loads c vectors and broadcasts u values for u x c FMAs: fewest loads per FMA first, then more
  // accumulators (more FMAs in flight to cover their latency)
  std::stable_sort(tiles.begin(), tiles.end(), [](auto a, auto b) {
    const int64_t loads_a = a.first + a.second, fmas_a = a.first * a.second;
    const int64_t loads_b = b.first + b.second, fmas_b = b.first * b.second;
    return loads_a * fmas_b != loads_b * fmas_a ? loads_a * fmas_b < loads_b * fmas_a : fmas_a > fmas_b;
  });
  return tiles;
}

std::optional<PanelPlan> matmul_panels(const tg_renderer_caps& caps, int64_t m, int64_t k, int64_t n) {
  if (!caps.has_threads || is_gpu(caps)) return std::nullopt;
  const Machine mach = machine_of(caps);
  // B that fits in L2 (1 MiB where the renderer does not say) is read from cache as it is
  const uint64_t in_cache = mach.l2_bytes ? mach.l2_bytes : uint64_t{1} << 20;
  if (static_cast<uint64_t>(k) * static_cast<uint64_t>(n) * 4 <= in_cache) return std::nullopt;
  const int lanes = widest_lanes(caps, dtypes::float32);
  // the best tile whose padding wastes at most 1/8 of the rows and of the columns
  auto waste = [](int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit - x; };
  for (auto [u, c] : register_tiles(caps, dtypes::float32, lanes, 0, 0)) {
    const int64_t panel = int64_t{c} * lanes;
    // packing copies B once: it pays when at least 16 row tiles pass over each panel
    if (m < 16 * u || panel > n || waste(m, u) * 8 > m || waste(n, panel) * 8 > n) continue;
    return PanelPlan{panel, u};
  }
  return std::nullopt;
}

}  // namespace tg::codegen
