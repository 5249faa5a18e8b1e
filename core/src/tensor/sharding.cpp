// Sharding: the mesh arithmetic (coordinates, parts, groups) and the MULTI arg's text form.
#include "tensor/sharding.hpp"

#include <algorithm>
#include <sstream>

#include "tg/error.hpp"

namespace tg {

Sharding Sharding::replicated(std::vector<std::string> devices) {
  Sharding s;
  s.mesh = {static_cast<int64_t>(devices.size())};
  s.axes = {-1};
  s.devices = std::move(devices);
  return s;
}

std::string Sharding::str() const {
  std::string out = join_devices(devices) + "|";
  for (size_t m = 0; m < mesh.size(); ++m)
    out += (m ? "," : "") + std::to_string(mesh[m]) + ":" + std::to_string(axes[m]);
  return out;
}

Sharding Sharding::parse(const std::string& arg) {
  const size_t bar = arg.find('|');
  if (bar == std::string::npos) throw Error("tg: malformed sharding '" + arg + "'");
  Sharding s;
  s.devices = split_devices(arg.substr(0, bar));
  std::istringstream in(arg.substr(bar + 1));
  for (std::string dim; std::getline(in, dim, ',');) {
    const size_t colon = dim.find(':');
    if (colon == std::string::npos) throw Error("tg: malformed sharding '" + arg + "'");
    s.mesh.push_back(std::stoll(dim.substr(0, colon)));
    s.axes.push_back(std::stoll(dim.substr(colon + 1)));
  }
  return s;
}

std::string Sharding::describe() const {
  std::string out = "(";
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i];
  out += ")";
  std::string split;
  for (size_t m = 0; m < mesh.size(); ++m)
    if (axes[m] >= 0) split += (split.empty() ? "" : ", ") + std::to_string(axes[m]);
  if (mesh.size() > 1) {
    out += " as a ";
    for (size_t m = 0; m < mesh.size(); ++m) out += (m ? "x" : "") + std::to_string(mesh[m]);
    out += " mesh";
  }
  return out + (split.empty() ? ", replicated" : " split along axis " + split);
}

int64_t Sharding::coord(size_t device, size_t mesh_dim) const {
  int64_t stride = 1;
  for (size_t m = mesh_dim + 1; m < mesh.size(); ++m) stride *= mesh[m];
  return (static_cast<int64_t>(device) / stride) % mesh[mesh_dim];
}

int64_t Sharding::parts(int64_t axis) const {
  int64_t p = 1;
  for (size_t m = 0; m < mesh.size(); ++m)
    if (axes[m] == axis) p *= mesh[m];
  return p;
}

int64_t Sharding::part(size_t device, int64_t axis) const {
  int64_t k = 0;
  for (size_t m = 0; m < mesh.size(); ++m)
    if (axes[m] == axis) k = k * mesh[m] + coord(device, m);
  return k;
}

std::pair<int64_t, int64_t> Sharding::bounds(size_t device, int64_t axis, int64_t n) const {
  const int64_t p = parts(axis), k = part(device, axis);
  return {k * (n / p), (k + 1) * (n / p)};
}

bool Sharding::is_split() const {
  return std::any_of(axes.begin(), axes.end(), [](int64_t a) { return a >= 0; });
}

bool Sharding::distinct(size_t device) const {
  for (size_t m = 0; m < mesh.size(); ++m)
    if (axes[m] < 0 && coord(device, m) != 0) return false;
  return true;
}

std::vector<size_t> Sharding::group(size_t device, const std::vector<size_t>& mesh_dims) const {
  std::vector<size_t> out;
  for (size_t e = 0; e < devices.size(); ++e) {
    bool same = true;
    for (size_t m = 0; m < mesh.size() && same; ++m)
      same = std::find(mesh_dims.begin(), mesh_dims.end(), m) != mesh_dims.end() || coord(e, m) == coord(device, m);
    if (same) out.push_back(e);
  }
  return out;
}

std::string join_devices(const std::vector<std::string>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? "," : "") + devices[i];
  return out;
}

std::vector<std::string> split_devices(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string d; std::getline(in, d, ',');) out.push_back(d);
  return out;
}

}  // namespace tg
