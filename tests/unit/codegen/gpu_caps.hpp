// A GPU as the core sees one, for lowering tests without a GPU: the CPU device's caps with work-groups instead of
// host threads: 3 dims, 256 work-items per group, 32 KiB of local memory.
#pragma once

#include "runtime/device.hpp"

namespace tg::codegen::test {

inline tg_renderer_caps gpu_caps() {
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.has_local = 1, caps.has_threads = 0, caps.max_global_dims = 3;
  caps.max_global[0] = caps.max_global[1] = caps.max_global[2] = 65535;
  caps.max_local[0] = caps.max_local[1] = 256, caps.max_local[2] = 64;
  caps.max_local_threads = 256, caps.local_mem_bytes = 32768;
  return caps;
}

}  // namespace tg::codegen::test
