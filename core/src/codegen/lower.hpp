// Lowering a scheduled kernel graph to KIR for one renderer.
#pragma once

#include "codegen/kir.hpp"
#include "schedule/schedule.hpp"

namespace tg::codegen {

// What the user turns on or off (the runtime reads IMAGE, TC, TG_CHECK_IR, DEBUG and TG_TIME_PASSES:
// runtime/options.hpp); codegen reads no environment.
struct LowerSwitches {
  bool images = false;        // read-only float32 buffers through image2d views, where the renderer has them
  bool tensor_cores = true;   // matmuls on the renderer's tensor cores, where it has them
  bool check_ir = false;      // the kernel graph checked against its spec before lowering
  int debug = 0;              // DEBUG: 5 prints the plan after each lowering step (pipeline.cpp)
  bool time_passes = false;   // TG_TIME_PASSES: each lowering step's time, per kernel and summed at exit
  bool operator==(const LowerSwitches&) const = default;
};

// What the heuristics choose that a search (BEAM=n) may override; 0 leaves a choice to the heuristic.
struct LowerOpts {
  int upcast = 0;     // lanes of the output vector: 1 = none, else 2..16 (used when it divides and vectorizes)
  int tile_rows = 0;  // register tile of tile_rows x tile_vecs vectors (1 x 1: none), when it divides; in a GPU
  int tile_vecs = 0;  // matmul plan: the most outputs per work-item (rows x columns) or m x n tiles per warp
  bool plain = false;  // no work-group plans either (tiled matmuls, tensor cores, shared reduces)
  LowerSwitches switches;
  bool operator==(const LowerOpts&) const = default;
};
// The plain loop nest (NOOPT=1): no lanes, no register tiles, no work-group plans.
inline constexpr LowerOpts plain_loops(LowerSwitches s = {}) { return {1, 1, 1, true, s}; }

// Simplifies indices, maps the outermost output range to the device grid, lowers reductions to accumulator
// loops, computes what the renderer lacks (16-bit floats in float32, transcendentals by polynomials) and
// linearizes into KIR.
KirProgram lower_kernel(const sched::Kernel& k, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                        const tg_renderer_caps& caps, const LowerOpts& opts = {});

}  // namespace tg::codegen
