// Two steps of the host-CPU register-tile plan (lower.cpp) that let a matmul run as one kernel on any shape:
// PADTO of the tile's vector or row loop (whole tiles, the extra vectors or rows gated off) and the staging of the
// panel every row tile shares in a private array: the host's analogue of a GPU tile in local memory
// (gpu/tiled_matmul.cpp stage_tile). Which kernels take them, heuristic.cpp decides (padded_loop, stages_pay).
#pragma once

#include <optional>
#include <vector>

#include "ir/uop.hpp"

namespace tg::codegen {

using ir::UOpPtr;

// A tile's entries: rows[q * c + p] holds the lanes (one sink each) of row q, vector p of the tile.
using TileRows = std::vector<std::vector<UOpPtr>>;

// The reduce range of the loads a row tile shares with every other row tile: loads inside a reduction over one
// fixed-length range that read the vector loop `vec` and not the row loop `row`, one per lane. nullptr when the
// lanes have none or several, or the reduction has other loops.
UOpPtr shared_reduce_range(const std::vector<UOpPtr>& lanes, const UOpPtr& row, const UOpPtr& vec);
// Whether the lanes convert the operand a tile broadcasts (a load inside a reduction that reads `row` and not `vec`)
// as they read it: a CAST of it, such as a bfloat16 A of a float32 product.
bool converted_broadcast(const std::vector<UOpPtr>& lanes, const UOpPtr& row, const UOpPtr& vec);

// PADTO: the vector loop `vo` of a tile of `c` vectors runs to whole tiles; vector p of the tile is real where
// vo * c + p < `vecs`. padding_gates returns that condition per p (nullptr where it always holds);
// gate_padded_vectors adds it to every store and to every load that reads `vo`, so a padded vector neither
// writes nor reads out of bounds.
std::vector<UOpPtr> padding_gates(int c, const UOpPtr& vo, int64_t vecs);
void gate_padded_vectors(TileRows& rows, const UOpPtr& vo, const std::vector<UOpPtr>& gates);
// PADTO of the row loop: row q of a tile of c vectors (entries q * c .. q * c + c - 1) is real where ro * u + q <
// rows (padding_gates(u, ro, rows)); only its stores take the gate. Its loads read the last real row instead (the
// tile clamps the row index): a gate on A's loads would be a select per FMA step, a clamped row index is a
// pointer computed once per tile.
void gate_padded_rows(TileRows& rows, int c, const std::vector<UOpPtr>& gates);

// The panel of the shared loads (shared_reduce_range) for one iteration of the loops outside `row`, copied into a
// private array in the order the tile reads it: [reduce index][vector p][lane]. The tile's loads are rewritten to
// read the copy (call it before gate_padded_vectors); the copy's own loads take `gates` (empty when not padded).
struct PanelStage {
  UOpPtr buffer;  // DEFINE_REG of reduce length x c x lanes elements
  UOpPtr loop;    // the copy's loop over the reduce range
  std::vector<std::vector<UOpPtr>>
      copies;  // per vector p: its lanes' STOREs into `buffer` (after expand: its vector stores)
};
std::optional<PanelStage> stage_panel(TileRows& rows, int c, const UOpPtr& row, const UOpPtr& vo,
                                      const UOpPtr& reduce_range, const std::vector<UOpPtr>& gates, int64_t& next_id);

}  // namespace tg::codegen
