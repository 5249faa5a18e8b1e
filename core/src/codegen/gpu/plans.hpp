// Planning kernels for work-group devices (GPUs: caps.has_local without host threads): which loops go on the grid,
// which reductions a work-group shares through local memory (GROUP), and how a matmul is tiled through local memory
// (LOCAL) or tensor cores (TC). Each plan rewrites the kernel graph into work-groups (WorkGroupPlan) for the
// linearizer. One file per plan: grid.cpp, grouped_reduce.cpp, tiled_matmul.cpp, tensor_core_matmul.cpp; the
// pieces they share in plan_parts.hpp.
#pragma once

#include <optional>
#include <vector>

#include "codegen/emitter.hpp"
#include "codegen/lower.hpp"

namespace tg::codegen {

bool is_gpu(const tg_renderer_caps& caps);

// One output per work-item: the innermost constant output loops go on the grid's dims.
// `next_id` is a range id no node of the kernel uses.
void bind_gpu_grid(Emitter& e, const std::vector<UOpPtr>& ranges, const tg_renderer_caps& caps, int64_t next_id);

// One more than the largest range id in the kernel.
int64_t next_range_id(const UOpPtr& sink);

// A GPU plan: the kernel rewritten as work-groups, the form a hand-written kernel with LOCAL ranges has, for the
// linearizer (linearize_work_groups): statements in order, the ranges that are work-group ids and work-item ids
// (dim 0 first each), and the flops it does (0: the linearizer counts them).
struct WorkGroupPlan {
  UOpPtr sink;
  std::vector<UOpPtr> groups, items;
  double flops = 0;
};

// Reductions shared by the `group` work-items of a work-group, one group per output (GROUP). Without a size (0)
// only where it pays, a long reduce axis and few outputs, with the largest group the device takes up to 256.
// nullopt when it does not apply.
std::optional<WorkGroupPlan> plan_grouped(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                          const tg_renderer_caps& caps, int64_t group = 0);

// The outputs per work-item of a matmul plan (tensor-core tiles per warp for TC) along m and n, and the work-group
// size (LOCAL: its edge); 0: the plan's own.
struct GpuTile {
  int rows = 0, cols = 0;
  int group = 0;
};

// A matmul on the renderer's tensor cores (TC; gpu/tensor_core_matmul.cpp). nullopt when it does not apply.
std::optional<WorkGroupPlan> plan_tc_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                            const tg_renderer_caps& caps, GpuTile tile);

// A matmul tiled through local memory (LOCAL; gpu/tiled_matmul.cpp). nullopt when it does not apply.
std::optional<WorkGroupPlan> plan_tiled_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                               const tg_renderer_caps& caps, GpuTile tile);

}  // namespace tg::codegen
