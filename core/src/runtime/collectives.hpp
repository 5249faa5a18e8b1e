// The collectives a schedule runs (ScheduleItem::Kind::COLLECTIVE): each item names functions that the layer
// owning the communicator registered (comm/tensor_collectives.cpp): one on the item's values in host memory, and,
// for a device communicator, one on the device buffers themselves. The runtime knows no communicator: it waits
// for the devices, hands the values over and puts the result back.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "runtime/buffer.hpp"

namespace tg::rt {

// Combines `count` values of `dtype` at `data` in place with the other ranks' (blocking, bounded by the backend).
using CollectiveFn = std::function<void(void* data, size_t count, DType dtype)>;

// dst = src combined over the ranks on their device itself (a device library such as NCCL), blocking.
using DeviceCollectiveFn = std::function<void(Buffer& dst, Buffer& src)>;

// The name a graph's COLLECTIVE node carries for (owner, what): registered on first use, the same name after.
// With `on_device`, the values never leave the device.
std::string register_collective(const void* owner, const std::string& what, CollectiveFn fn,
                                DeviceCollectiveFn on_device = {});
// Drops `owner`'s collectives (its communicator is gone): a schedule or Jit that still names one fails clearly.
void forget_collectives(const void* owner);

// dst = src combined over the ranks (src and dst may be one buffer). What was submitted on either device is
// finished first.
void run_collective(const std::string& name, Buffer& dst, Buffer& src);

}  // namespace tg::rt
