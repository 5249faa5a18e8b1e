// Multi-device tensors: graphs over MULTI nodes rewritten into one graph per device, with the copies and
// collectives (allreduce, allgather) that the sharding calls for, before the scheduler sees them.
#pragma once

#include <vector>

#include "ir/uop.hpp"
#include "tensor/sharding.hpp"

namespace tg {

// A graph's value per device: `sharding` over its devices and one shard graph each; for a graph that computes
// on one device, one shard and an empty sharding.
struct DeviceGraphs {
  Sharding sharding;
  std::vector<ir::UOpPtr> shards;
  bool multi() const { return !sharding.devices.empty(); }
};

bool has_multi(const ir::UOpPtr& root);
// Each root's per-device graphs. Throws tg::Error naming the op, axis and sharding where a root asks for what
// sharded tensors do not support (padding or shrinking a split axis, symbolic or uneven split axes).
// `ring`: RING's setting (runtime/options.hpp).
std::vector<DeviceGraphs> lower_multi(const std::vector<ir::UOpPtr>& roots, int ring);

// The MULTI node of these shards (each on its device of `s`) for a tensor of `full` dims.
ir::UOpPtr multi_node(const Sharding& s, std::vector<ir::UOpPtr> shards, DType dtype,
                      const std::vector<ir::UOpPtr>& full);

}  // namespace tg
