// Lowered kernels kept in memory. Lowering is a pure function of the kernel graph (hash-consed: an equal graph is
// the same node), the kernel's buffer parameters (dtypes and sizes), the renderer's caps and the options (switches
// included); schedules that repeat a kernel (every prefill chunk, every step outside a Jit) lower it once.
#pragma once

#include <string>

#include "codegen/lower.hpp"

namespace tg::codegen {

// lower_kernel through the cache; `device` names the caps (a device's caps are fixed while it is loaded).
KirProgram lower_kernel_cached(const sched::Kernel& k, const tg_renderer_caps& caps, const std::string& device,
                               const LowerOpts& opts = {});
// Forgets every entry for `device` ("" = all): when its plugin is unloaded and may come back with other caps.
void clear_lower_cache(const std::string& device = "");

}  // namespace tg::codegen
