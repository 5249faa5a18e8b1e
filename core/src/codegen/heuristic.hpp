// What the heuristic chooses from the renderer's description of its machine (caps.simd_*, l2_bytes): how many
// lanes an output vector has, which register tile a reduction takes, and whether its shared operand is staged in
// panels. hand_coded_opts (plan.hpp) turns these into optimization actions (opt.hpp) that apply_opts.cpp applies;
// BEAM (search.cpp) searches the same actions.
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
// per FMA first (the load ports, not the FMA ports, limit a thin tile), then more accumulators. A broadcast costs
// `broadcast_cost` loads: 2 where the row operand is converted as it is read (a bfloat16 A: a scalar load, a shift
// and a register-to-vector broadcast on the port the FMAs use; bf16 1024^3 on an AVX-512 host, BEAM: 4x4 13.4 ms,
// the 8x3 that plain loads rank first 14.2).
std::vector<std::pair<int, int>> register_tiles(const tg_renderer_caps& caps, DType d, int lanes, int64_t rows,
                                                int64_t vecs, int broadcast_cost = 1);

// Whether a register-tiled reduction on a host CPU copies the panel its row tiles share (a matmul's B columns
// of one vector tile, `panel_bytes` over the whole reduce) into a private array before the row tiles pass over
// it: it pays where the whole operand (`operand_bytes`) takes half of L2 or more (the row tiles would read the
// panel's strided rows from L2 or beyond; the copy is contiguous, which the prefetchers follow) and at least 16
// row tiles reuse each copy, and the panel itself fits in half of L2 (beside the rows of A streaming through).
// Measured by BEAM on an AVX-512 host with 2 MiB of L2 (1 thread): 512^3 (B 1 MiB) 2.04 ms as a 4x4 tile unstaged,
// 1.74 ms staged (8x3 padded); 384^3 (B 576 KiB) gains nothing from staging.
bool stages_pay(const tg_renderer_caps& caps, int64_t row_tiles, int64_t operand_bytes, int64_t panel_bytes);

// The iterations a loop of `n` (vectors, or rows) takes padded to whole tiles of `c`, or 0 where padding would waste
// more than 1/8 of them.
int64_t padded_loop(int64_t n, int c);

}  // namespace tg::codegen
