// Memory planning: a temporary's lifetime is the span of items from its first to its last use; temporaries whose
// spans do not overlap share a buffer. Inputs are the caller's, outputs outlive the schedule: neither is shared.
#include "runtime/memory_plan.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace tg::rt {

using sched::BufferSlot;

std::vector<std::shared_ptr<Buffer>> plan_memory(const sched::Schedule& s,
                                                 const std::vector<std::shared_ptr<ir::Payload>>& inputs) {
  if (inputs.size() != s.n_inputs())
    throw std::logic_error("tg: internal: a schedule of " + std::to_string(s.n_inputs()) + " inputs bound to " +
                           std::to_string(inputs.size()) + " buffers");
  std::vector<std::shared_ptr<Buffer>> bufs(s.slots.size());
  for (size_t i = 0; i < inputs.size(); ++i) bufs[i] = std::static_pointer_cast<Buffer>(inputs[i]);
  std::vector<size_t> last_use(s.slots.size(), 0);
  for (size_t i = 0; i < s.items.size(); ++i)
    for (int slot : s.items[i].slots) last_use.at(static_cast<size_t>(slot)) = i;
  // free temporaries by what they can stand in for; a buffer is freed once the item of its last use is placed
  using Shape = std::tuple<std::string, uint8_t, uint8_t, int64_t>;
  auto shape_of = [](const BufferSlot& b) {
    return Shape{b.device, static_cast<uint8_t>(b.dtype.scalar), b.dtype.count, b.numel};
  };
  std::multimap<Shape, std::shared_ptr<Buffer>> free;
  for (size_t i = 0; i < s.items.size(); ++i) {
    for (int slot : s.items[i].slots) {
      const auto k = static_cast<size_t>(slot);
      if (bufs[k]) continue;
      const BufferSlot& b = s.slots[k];
      if (b.kind == BufferSlot::Kind::TEMP) {
        if (auto it = free.find(shape_of(b)); it != free.end()) {
          bufs[k] = std::move(it->second);
          free.erase(it);
          continue;
        }
      }
      bufs[k] = std::make_shared<Buffer>(Device::get(b.device), b.dtype, b.numel);
    }
    for (int slot : s.items[i].slots) {
      const auto k = static_cast<size_t>(slot);
      if (s.slots[k].kind == BufferSlot::Kind::TEMP && last_use[k] == i) free.emplace(shape_of(s.slots[k]), bufs[k]);
    }
  }
  for (size_t k = 0; k < bufs.size(); ++k)  // slots no item names (none in a schedule the scheduler made): still bound
    if (!bufs[k])
      bufs[k] = std::make_shared<Buffer>(Device::get(s.slots[k].device), s.slots[k].dtype, s.slots[k].numel);
  return bufs;
}

std::vector<std::shared_ptr<Buffer>> item_buffers(const sched::ScheduleItem& item,
                                                  const std::vector<std::shared_ptr<Buffer>>& slots) {
  std::vector<std::shared_ptr<Buffer>> bufs;
  bufs.reserve(item.slots.size());
  for (int s : item.slots) bufs.push_back(slots.at(static_cast<size_t>(s)));
  return bufs;
}

}  // namespace tg::rt
