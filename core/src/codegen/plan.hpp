// What the lowering steps hand each other (pipeline.cpp runs them in order; lower.cpp has them): a kernel's graph,
// the loops still to open, the lanes of its output vector and the entries of its register tile, and the KIR the
// linearizer writes. Each step reads and updates one Plan.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/lower.hpp"
#include "codegen/stage_panel.hpp"

namespace tg::codegen {

struct Plan {
  const sched::Kernel& kernel;
  const std::vector<std::shared_ptr<rt::Buffer>>& bufs;
  const tg_renderer_caps& caps;
  const LowerOpts& opts;
  KirProgram kir;                              // parameters from the start; instructions from the linearizer
  std::map<std::string, int64_t> var_params;   // variable name -> parameter index
  ir::UOpPtr sink;                             // the kernel graph (SINK of STOREs)
  std::vector<ir::UOpPtr> ranges;              // output loops still to open, outermost first
  std::vector<ir::UOpPtr> lanes;               // the output vector's lanes, one sink each (one: no vector)
  size_t tile_axis = 0;                        // 1 when the vector's own loop is still in `ranges`
  TileRows rows;                               // the register tile's entries (one: no tile)
  std::optional<PanelStage> staged;            // a panel copied where `staged_row` opens
  ir::UOpPtr staged_row;
  bool done = false;                           // a step lowered the whole kernel (as written, or a GPU plan)

  std::string str() const;  // for DEBUG=5: loops, lanes, tile, panel, and the first tile entry's graph
};

// The parameters (buffers, then variables) and the kernel's graph.
Plan start_plan(const sched::Kernel& kernel, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                const tg_renderer_caps& caps, const LowerOpts& opts);

void check_spec(Plan& p);           // the kernel spec (ir/spec.hpp), where the switches ask
void simplify_indices(Plan& p);     // symbolic rules; the output loops that are left
void lower_as_written(Plan& p);     // a hand-written kernel: its loops and statements as they are (done)
void gpu_plans(Plan& p);            // tensor-core or local-memory matmuls, group reduces (done where one applies)
void upcast_lanes(Plan& p);         // the innermost output loop into lanes of one vector, where the store is contiguous
void register_tile(Plan& p);        // u x c tiles (heuristic.cpp or BEAM), padded vector loop, staged panel
void linearize(Plan& p);            // the only writer of instructions: grid, loops, panel copy, reductions, stores
void read_through_images(Plan& p);  // IMAGE: read-only float32 buffers as image2d views

}  // namespace tg::codegen
