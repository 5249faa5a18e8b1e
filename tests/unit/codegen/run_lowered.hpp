// Runs a lowered kernel on its schedule item's buffers (render, compile, load, launch on the buffers' device) for
// codegen tests that lower with their own caps or actions and check what the kernel computed.
#pragma once

#include "codegen/kir.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "runtime/executor.hpp"
#include "schedule/schedule.hpp"

namespace tg::codegen {

inline void run_lowered(const KirProgram& k, const sched::ScheduleItem& it) {
  rt::Device& dev = it.bufs.at(0)->device();
  auto program = dev.load(dev.compile(dev.render(k.view()), k.name), k.view());
  dev.launch(*program, rt::pack_args(*program, it.bufs, it.var_vals), k.dims, true);
}

}  // namespace tg::codegen
