// Lowering a scheduled kernel graph to KIR for one renderer.
#pragma once

#include "codegen/kir.hpp"
#include "schedule/schedule.hpp"

namespace tg::codegen {

// Simplifies indices, maps the outermost output range to the device grid, lowers reductions to accumulator
// loops, computes what the renderer lacks (16-bit floats in float32, transcendentals by polynomials) and
// linearizes into KIR.
KirProgram lower_kernel(const sched::Kernel& k, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                        const tg_renderer_caps& caps);

}  // namespace tg::codegen
