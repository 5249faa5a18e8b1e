// How a tensor lies across devices: a mesh of devices and, per mesh dim, the tensor axis split along it. This is
// the arg of a MULTI node (as text, so graphs that hold it stay plain values) and what tensor/multi.cpp reasons with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tg {

struct Sharding {
  std::vector<std::string>
      devices;                // canonical names in mesh order: device i sits at coordinate (i / stride_m) % mesh[m]
  std::vector<int64_t> mesh;  // the mesh's sizes; their product is the device count
  std::vector<int64_t> axes;  // per mesh dim: the tensor axis split into mesh[m] parts along it, -1: replicated

  static Sharding replicated(std::vector<std::string> devices);
  std::string str() const;  // "CPU,CPU:1,CPU:2,CPU:3|2:0,2:1" (the MULTI arg)
  static Sharding parse(const std::string& arg);
  std::string describe() const;  // "(CPU, CPU:1) split along axis 0", for messages

  size_t size() const { return devices.size(); }
  int64_t coord(size_t device, size_t mesh_dim) const;
  // How many parts `axis` is cut into (the product of the mesh dims split along it; 1: whole on every device), and
  // which of them `device` holds (mesh dims combined in mesh order, row-major).
  int64_t parts(int64_t axis) const;
  int64_t part(size_t device, int64_t axis) const;
  // [start, end) of `axis` (of size n) on `device`
  std::pair<int64_t, int64_t> bounds(size_t device, int64_t axis, int64_t n) const;
  bool is_split() const;  // some axis is split (else every device holds the whole tensor)
  // One of the distinct shards: coordinate 0 along every replicated mesh dim.
  bool distinct(size_t device) const;
  // The devices that differ from `device` only along `mesh_dims` (a collective's group), in mesh order.
  std::vector<size_t> group(size_t device, const std::vector<size_t>& mesh_dims) const;
  bool operator==(const Sharding&) const = default;
};

std::string join_devices(const std::vector<std::string>& devices);  // "CPU,CPU:1"
std::vector<std::string> split_devices(const std::string& list);    // and back
inline bool is_device_list(const std::string& device) { return device.find(',') != std::string::npos; }

}  // namespace tg
