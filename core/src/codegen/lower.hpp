// Lowering a scheduled kernel graph to KIR for one renderer.
#pragma once

#include <optional>

#include "codegen/kir.hpp"
#include "codegen/opt.hpp"
#include "schedule/schedule.hpp"

namespace tg::codegen {

// What the user turns on or off (the runtime reads IMAGE, TC, TG_CHECK_IR, DEBUG and TG_TIME_PASSES:
// runtime/options.hpp); codegen reads no environment.
struct LowerSwitches {
  bool images = false;       // read-only float32 buffers through image2d views, where the renderer has them
  bool tensor_cores = true;  // matmuls on the renderer's tensor cores, where it has them
  bool check_ir = false;     // the kernel graph checked against its spec before lowering
  int debug = 0;             // DEBUG: 5 prints the plan after each lowering step (pipeline.cpp)
  bool time_passes = false;  // TG_TIME_PASSES: each lowering step's time, per kernel and summed at exit
  bool operator==(const LowerSwitches&) const = default;
};

// How a kernel is optimized: the heuristic's choice (heuristic.cpp), or exactly the given actions (opt.hpp), as
// BEAM and the tests give them.
struct LowerOpts {
  std::optional<Opts> actions;  // nullopt: the heuristic chooses; [] the plain loop nest
  LowerSwitches switches;
  bool operator==(const LowerOpts&) const = default;
};
// The plain loop nest (NOOPT=1): no lanes, no register tiles, no work-group plans.
inline LowerOpts plain_loops(LowerSwitches s = {}) { return {Opts{}, s}; }

// Simplifies indices, maps the outermost output range to the device grid, lowers reductions to accumulator
// loops, computes what the renderer lacks (16-bit floats in float32, transcendentals by polynomials) and
// linearizes into KIR.
KirProgram lower_kernel(const sched::Kernel& k, const tg_renderer_caps& caps, const LowerOpts& opts = {});

}  // namespace tg::codegen
