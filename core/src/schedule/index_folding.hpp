// Index folding: a movement op (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP, SHRINK_VAR, PAD_VAR) costs no
// kernel; the scheduler reads its source at index expressions computed from the op's output index.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"

namespace tg::sched {

// Where a movement op's source is read for one output index.
struct Folded {
  std::vector<ir::UOpPtr> idx;  // the source's index, one expression per source dim
  ir::UOpPtr cond;              // PAD, PAD_VAR: where the output is the source (elsewhere 0); null: everywhere
  bool expanded = false;        // EXPAND broadcast a size-1 dim: the source is read once per broadcast element
};

// A tensor dim as the kernel sees it: the scheduler turns its BINDs into DEFINE_VARs and records their values.
using KernelDim = std::function<ir::UOpPtr(const ir::UOpPtr&)>;

// The source index of movement node `node` read at output index `idx` (`out`: the node's dims through kdim).
// The source's dims and SHRINK_VAR/PAD_VAR's offsets go through kdim, in the order the scheduler always bound
// them (a variable bound to two values is reported in that order). nullopt: `node` is not a movement op.
std::optional<Folded> fold_index(const ir::UOp& node, const std::vector<ir::UOpPtr>& idx, const ir::Dims& out,
                                 const KernelDim& kdim);

// Row-major linear index of idx in dims (a load's or store's element, RESHAPE's flat position).
ir::UOpPtr linear_index(const std::vector<ir::UOpPtr>& idx, const ir::Dims& dims);

}  // namespace tg::sched
