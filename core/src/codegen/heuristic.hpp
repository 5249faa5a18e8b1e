// What the heuristic chooses from the renderer's description of its machine (caps.simd_*, l2_bytes): how many
// lanes an output vector has, which register tile a reduction takes, and how a large matmul is cut into packed
// panels. lower.cpp applies the choices; BEAM (runtime/executor.cpp) may override the first two.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <tg/plugin_abi.h>

#include "tg/dtype.hpp"

namespace tg::codegen {

// The register file and cache a kernel runs on: the renderer's caps, or the core's defaults where it says nothing
// (32 registers of 64 bytes, no cache limit: what the tiles assumed before renderers described their machine).
struct Machine {
  int vector_bytes;
  int registers;
  uint64_t l2_bytes;  // 0: unknown
};
Machine machine_of(const tg_renderer_caps& caps);

// Lanes of an output vector of `d`: one register's worth, 2..16 (a GPU work-item keeps float4-sized vectors).
int widest_lanes(const tg_renderer_caps& caps, DType d);

// Register tiles (u rows x c vectors of `lanes` x `d` accumulators), best first: u dividing `rows`, c dividing
// `vecs`, and the accumulators leaving registers for the c vectors a step loads and one broadcast. Fewest loads
// per FMA first (the load ports, not the FMA ports, limit a thin tile), then more accumulators.
std::vector<std::pair<int, int>> register_tiles(const tg_renderer_caps& caps, DType d, int lanes, int64_t rows,
                                                int64_t vecs);

// A float32 matmul A[m, k] x B[k, n] on a host CPU, computed as B packed into [n'/panel, k, panel] column panels
// (n' = n padded to whole panels, A's rows padded to whole tiles of `rows`) so that one panel streams from L2
// while each register tile of `rows` x panel passes over it. nullopt where B is small enough to stay in L2 as is.
struct PanelPlan {
  int64_t panel;  // columns of a panel: the register tile's vectors x lanes
  int64_t rows;   // rows of the register tile
};
std::optional<PanelPlan> matmul_panels(const tg_renderer_caps& caps, int64_t m, int64_t k, int64_t n);

}  // namespace tg::codegen
