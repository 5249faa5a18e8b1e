// The Tensor front end on several devices: shard() builds a MULTI node (each device's part cut from the tensor and
// copied there), and realizing a graph over MULTI nodes lowers it per device (tensor/multi.cpp) and runs every
// device's graph in one schedule.
#include <numeric>
#include <set>

#include "ir/sym_shape.hpp"
#include "runtime/options.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_internal.hpp"
#include "tg/tensor.hpp"

namespace tg {

using namespace ir;

namespace {

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument("tg: " + msg); }

// The sharding a tensor has (lowering its graph, which is cheap: nodes are shared), or nullopt on one device.
std::optional<Sharding> sharding_of(const Tensor& t) {
  if (!is_device_list(t.device())) return std::nullopt;
  if (t.node()->op == Op::MULTI) return Sharding::parse(t.node()->arg_str());
  DeviceGraphs g = lower_multi({t.node()}, rt::read_options().ring)[0];
  if (!g.multi()) return Sharding::replicated(t.devices());
  return g.sharding;
}

}  // namespace

std::vector<std::string> Tensor::devices() const { return split_devices(device()); }

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int64_t> axis) const {
  return shard(devices, Shape{static_cast<int64_t>(devices.size())}, {axis});
}

Tensor Tensor::shard(const std::vector<std::string>& devices, const Shape& mesh,
                     const std::vector<std::optional<int64_t>>& axes) const {
  if (devices.empty()) bad("shard() over no devices");
  if (mesh.size() != axes.size())
    bad("shard(): a mesh of " + std::to_string(mesh.size()) + " dims needs as many axes, got " +
        std::to_string(axes.size()));
  const int64_t count = std::accumulate(mesh.begin(), mesh.end(), int64_t{1}, std::multiplies<>());
  if (std::any_of(mesh.begin(), mesh.end(), [](int64_t m) { return m < 1; }) ||
      count != static_cast<int64_t>(devices.size()))
    bad("shard(): mesh " + shape_str(mesh) + " does not hold " + std::to_string(devices.size()) + " devices");
  Sharding s;
  std::set<std::string> seen;
  for (const auto& d : devices) {
    if (is_device_list(d)) bad("shard(): '" + d + "' is a list; pass one device per entry");
    s.devices.push_back(resolve_device(d));
    if (!seen.insert(s.devices.back()).second) bad("shard(): device " + s.devices.back() + " is listed twice");
  }
  s.mesh = mesh;
  for (const auto& a : axes) {
    if (!a) {
      s.axes.push_back(-1);
      continue;
    }
    const int64_t axis = *a < 0 ? *a + ndim() : *a;
    if (axis < 0 || axis >= ndim())
      bad("shard(): axis " + std::to_string(*a) + " is out of range for shape " + shape_str(shape()));
    s.axes.push_back(axis);
  }
  if (is_device_list(device())) {  // already on several: gathered on the first, then cut anew
    const Tensor whole = to(split_devices(device())[0]);
    return whole.shard(devices, mesh, axes);
  }
  const Dims full = dims_of(*node());
  std::vector<UOpPtr> shards;
  for (size_t d = 0; d < s.size(); ++d) {
    Tensor piece = *this;
    for (int64_t a = 0; a < ndim(); ++a) {
      const int64_t p = s.parts(a);
      if (p == 1) continue;
      if (!is_static(full[static_cast<size_t>(a)]))
        bad("shard(): axis " + std::to_string(a) + " of " + dims_str(full) + " is symbolic");
      const int64_t n = shape()[static_cast<size_t>(a)];
      if (n % p != 0)
        bad("shard(): axis " + std::to_string(a) + " of shape " + shape_str(shape()) + " (size " + std::to_string(n) +
            ") does not split into " + std::to_string(p) + " equal parts over " + s.describe());
      const auto [start, end] = s.bounds(d, a, n);
      piece = piece.shrink(a, Dim(start), Dim(end - start));
    }
    shards.push_back(piece.to(s.devices[d]).node());  // a graph of constants is computed there, not copied
  }
  return Tensor(multi_node(s, std::move(shards), dtype(), full), join_devices(s.devices));
}

Tensor Tensor::shard_like(const Tensor& other) const {
  const auto s = sharding_of(other);
  if (!s) return to(other.device());
  std::vector<std::optional<int64_t>> axes;
  for (int64_t a : s->axes) axes.push_back(a < 0 ? std::nullopt : std::optional<int64_t>(a));
  return shard(s->devices, s->mesh, axes);
}

std::vector<UOpPtr> realize_on_devices(const std::vector<Tensor>& ts) {
  std::vector<UOpPtr> roots;
  for (const Tensor& t : ts)  // a tensor of constants on a device list is a whole copy on each
    roots.push_back(is_device_list(t.device()) && !has_multi(t.node()) ? t.shard(t.devices()).node() : t.node());
  const std::vector<DeviceGraphs> graphs = lower_multi(roots, rt::read_options().ring);
  // every device's graph is one root of one schedule, computed on its device (a COPY to where it already is)
  std::vector<UOpPtr> flat;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (!graphs[i].multi()) {
      flat.push_back(mk(Op::COPY, ts[i].dtype(), {graphs[i].shards[0]}, ts[i].device(), dims_of(*roots[i])));
      continue;
    }
    for (size_t d = 0; d < graphs[i].shards.size(); ++d) {
      const UOpPtr& g = graphs[i].shards[d];
      flat.push_back(mk(Op::COPY, g->dtype, {g}, graphs[i].sharding.devices[d], dims_of(*g)));
    }
  }
  const auto bufs = realize_roots(flat, flat[0]->arg_str());
  std::vector<UOpPtr> out;
  size_t k = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (!graphs[i].multi()) {
      out.push_back(rt::buffer_node(bufs[k++], roots[i]->shape, roots[i]->sym_shape));
      continue;
    }
    std::vector<UOpPtr> shards;
    for (const auto& g : graphs[i].shards) shards.push_back(rt::buffer_node(bufs[k++], g->shape, g->sym_shape));
    out.push_back(multi_node(graphs[i].sharding, std::move(shards), roots[i]->dtype, dims_of(*roots[i])));
  }
  return out;
}

}  // namespace tg
