#include "codegen/opt.hpp"

#include <cstring>

namespace tg::codegen {

const char* opt_name(OptOp op) {
  static constexpr const char* kNames[kOptOps] = {"UPCAST", "PADTO", "STAGE",  "TC",
                                                  "LOCAL",  "GROUP", "UNROLL", "THREAD"};
  return kNames[static_cast<int>(op)];
}

std::string str(const Opt& o) {
  return std::string(opt_name(o.op)) + "(" + std::to_string(o.axis) + "," + std::to_string(o.amount) + ")";
}

std::string str(const Opts& os) {
  std::string s = "[";
  for (const Opt& o : os) s += (s.size() > 1 ? " " : "") + str(o);
  return s + "]";
}

std::vector<int32_t> encode(const Opts& os) {
  std::vector<int32_t> v;
  for (const Opt& o : os) v.insert(v.end(), {static_cast<int32_t>(o.op), o.axis, o.amount});
  return v;
}

std::optional<Opts> decode(const std::vector<uint8_t>& bytes) {
  if (bytes.size() % (3 * sizeof(int32_t))) return std::nullopt;
  std::vector<int32_t> v(bytes.size() / sizeof(int32_t));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
  Opts os;
  for (size_t i = 0; i < v.size(); i += 3) {
    if (v[i] < 0 || v[i] >= kOptOps || v[i + 1] < 0 || v[i + 2] < 0) return std::nullopt;
    os.push_back({static_cast<OptOp>(v[i]), v[i + 1], v[i + 2]});
  }
  return os;
}

}  // namespace tg::codegen
