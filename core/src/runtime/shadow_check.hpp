// CHECK=<device>: every kernel also runs on a reference device; the first divergent kernel stops the program.
#pragma once

#include <string>

#include "codegen/kir.hpp"
#include "runtime/buffer.hpp"
#include "schedule/schedule.hpp"

namespace tg::rt {

// The reference device named by CHECK, or "" when shadow execution is off (or CHECK names this device).
std::string shadow_device();

// Re-runs an item that just ran on its own device with its parameters bound to `bufs`: the inputs copied to
// `reference`, the kernel lowered for that device's renderer. Throws tg::Error with the kernel's KIR, its rendered
// source and both outputs at the first element that differs (integers bit for bit; floats within 1e-4 relative, NaN
// matching NaN).
void shadow_check(const sched::ScheduleItem& item, const std::vector<std::shared_ptr<Buffer>>& bufs,
                  const codegen::KirProgram& kir, const std::string& source, const std::string& reference);

}  // namespace tg::rt
