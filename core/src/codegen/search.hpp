// The space BEAM searches (runtime/beam.cpp times it): action lists (opt.hpp) for one kernel, lowered.
#pragma once

#include <memory>
#include <vector>

#include "codegen/lower.hpp"

namespace tg::codegen {

// The heuristic's list first, then none, then the heuristic's without its THREAD, then each output vector width
// with each register tile that fits the machine and the kernel's loops (heuristic.cpp register_tiles), staged and
// padded where the heuristic stages, each with the heuristic's THREAD for its loops; after a GPU matmul plan, its
// tiles along m and n. Lists that do not apply are left out, and so are lists that lower to the KIR of an earlier
// one; each program's `opts` is its list.
std::vector<KirProgram> search_space(const sched::Kernel& k, const tg_renderer_caps& caps,
                                     const LowerSwitches& switches);

}  // namespace tg::codegen
