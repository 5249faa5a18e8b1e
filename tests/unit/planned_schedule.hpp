// A schedule with its buffers bound (as Tensor::realize binds them), and running one lowered kernel on them, for
// codegen and runtime tests that lower with their own caps or actions and check what the kernel computed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/kir.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/memory_plan.hpp"
#include "schedule/schedule.hpp"

namespace tg::codegen {

struct PlannedSchedule {
  sched::Schedule s;
  std::vector<std::shared_ptr<rt::Buffer>> slots;

  PlannedSchedule(const std::vector<ir::UOpPtr>& roots, const std::string& device)
      : s(sched::create_schedule(roots, device)), slots(rt::plan_memory(s, sched::input_buffers(roots))) {}
  const std::vector<sched::ScheduleItem>& items() const { return s.items; }
  std::vector<std::shared_ptr<rt::Buffer>> bufs(size_t item) const { return rt::item_buffers(s.items.at(item), slots); }
  rt::Buffer& root(size_t i = 0) const { return *slots.at(static_cast<size_t>(s.roots.at(i))); }
};

inline void run_lowered(const KirProgram& k, const sched::ScheduleItem& it,
                        const std::vector<std::shared_ptr<rt::Buffer>>& bufs) {
  rt::Device& dev = bufs.at(0)->device();
  auto program = dev.load(dev.compile(dev.render(k.view()), k.name), k.view());
  dev.launch(*program, rt::pack_args(*program, bufs, it.var_vals), k.dims, true);
}

}  // namespace tg::codegen
