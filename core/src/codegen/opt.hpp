// Optimizations as actions, as tinygrad's Opt(op, axis, amount): what the heuristic (heuristic.cpp) or BEAM
// (search.cpp) chooses for a kernel, and apply_opts.cpp applies to its output loops in order. An axis is a
// kernel's output loop after index simplification, outermost first (DEBUG=5 prints them as "loops:"), then its
// reduce loops (UNROLL); an empty list is the plain loop nest (NOOPT=1). New ops are appended: the BEAM cache
// stores them by number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tg/error.hpp"

namespace tg::codegen {

enum class OptOp : uint8_t {
  // `amount` outputs of the axis per iteration. The first on the innermost loop makes the output vector; then the
  // loop just outside it (rows) and the vector loop again (vectors) form the register tile. After a GPU plan: the
  // outputs per work-item (TC: tensor-core tiles per warp) along the matmul's m or n axis.
  UPCAST,
  PADTO,  // the axis' loop (counted in vectors) runs to a multiple of `amount`; the extra iterations are gated
  STAGE,  // the operand every row tile of the axis reads alike is copied into a private panel where that loop opens
  // GPU plans; `amount` is the work-group's size, 0 the plan's own. The axis is not read (a plan takes the whole
  // kernel: the matmul's m and n, or every reduction).
  TC,     // the matmul on the renderer's tensor cores (2 x 2 warps a group; takes no amount)
  LOCAL,  // the matmul tiled through local memory by an amount x amount work-group (8, 16 (its own) or 32)
  GROUP,  // each output's reductions shared by a group of `amount` work-items (2 up to the device's limit; its own:
          // the largest power of two up to 256 that the device and its local memory take)
  // `amount` lanes of a reduce loop per iteration, one accumulator each in a vector, folded across the lanes after
  // the loop. Reduce loops are numbered after the output loops: axis = output loops + i for the i-th (the
  // innermost loop of each reduction, in the order the kernel reads them).
  UNROLL,
  // Host CPUs: the axis' loop, all `amount` of its iterations as the plan has them once the tile is built, is the
  // launch grid the device spreads over its threads in contiguous chunks (tinygrad's THREAD also cuts the loop in
  // `amount` parts; a plugin here chunks the grid at run time, so the whole loop is the grid). Without it a host
  // kernel runs on the submitting thread.
  THREAD,
};
inline constexpr int kOptOps = 8;

struct Opt {
  OptOp op;
  int axis = 0;
  int amount = 0;
  bool operator==(const Opt&) const = default;
};
using Opts = std::vector<Opt>;

const char* opt_name(OptOp op);
std::string str(const Opt& o);    // UPCAST(1,8)
std::string str(const Opts& os);  // [UPCAST(1,8) UPCAST(0,4)]

// As int32 triples (the BEAM cache's entries); decode is nullopt for anything that is not such a list.
std::vector<int32_t> encode(const Opts& os);
std::optional<Opts> decode(const std::vector<uint8_t>& bytes);

// An action list that does not apply to a kernel (a search skips it; a user's list is an error).
class OptError : public Error {
 public:
  using Error::Error;
};

}  // namespace tg::codegen
