// Shadow execution: the kernel on a reference device with copies of the same inputs, outputs compared.
#include "runtime/shadow_check.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>

#include "codegen/lower.hpp"
#include "runtime/env.hpp"
#include "runtime/launch.hpp"
#include "tg/error.hpp"

namespace tg::rt {

std::string shadow_device() {
  static const std::string dev = getenv_str("CHECK");
  return dev;
}

namespace {

// Element i of a host copy as double (for messages and float comparison) and as raw bits (for exact comparison).
double value_at(const std::vector<uint8_t>& b, DType d, size_t i) {
  const uint8_t* p = b.data() + i * d.itemsize();
  auto get = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  switch (d.scalar) {
    case ScalarType::Bool: return get(uint8_t{});
    case ScalarType::Int8: return get(int8_t{});
    case ScalarType::Int16: return get(int16_t{});
    case ScalarType::Int32: return get(int32_t{});
    case ScalarType::Int64: return get(int64_t{});
    case ScalarType::UInt8: return get(uint8_t{});
    case ScalarType::UInt16: return get(uint16_t{});
    case ScalarType::UInt32: return get(uint32_t{});
    case ScalarType::UInt64: return get(uint64_t{});
    case ScalarType::Float16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case ScalarType::BFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bfloat16_to_float(h);
    }
    case ScalarType::Float32: return get(float{});
    case ScalarType::Float64: return get(double{});
  }
  return 0;
}

// Element i as the user reads it: integers exactly (a double would show 62000187 and 62000186 alike), floats with
// the digits that tell neighbouring values apart.
std::string value_str(const std::vector<uint8_t>& b, DType d, size_t i) {
  if (d.is_float()) {
    char s[40];
    std::snprintf(s, sizeof s, d.scalar == ScalarType::Float64 ? "%.17g" : "%.9g", value_at(b, d, i));
    return s;
  }
  const int bits = static_cast<int>(d.itemsize()) * 8;
  uint64_t u = 0;
  std::memcpy(&u, b.data() + i * d.itemsize(), d.itemsize());  // little endian: the low bytes
  if (d.is_bool() || d.is_unsigned()) return std::to_string(u);
  return std::to_string(bits == 64 ? static_cast<int64_t>(u) : static_cast<int64_t>(u << (64 - bits)) >> (64 - bits));
}

bool same(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, DType d, size_t i) {
  if (!d.is_float()) return std::memcmp(a.data() + i * d.itemsize(), b.data() + i * d.itemsize(), d.itemsize()) == 0;
  double x = value_at(a, d, i), y = value_at(b, d, i);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return std::abs(x - y) <= 1e-6 + 1e-4 * std::abs(y);
}

std::vector<uint8_t> host_copy(Buffer& b) {
  std::vector<uint8_t> h(b.nbytes());
  b.copy_out(h.data(), h.size());
  return h;
}

// Throws unless bytes copied into a fresh buffer of `device` come back unchanged, at sizes that are not multiples
// of anything (1, 7, 4099 bytes): checked once per device before its kernels are compared, so a broken
// allocator_copy_in/copy_out is named as such instead of making every kernel "differ".
// Returns whether it checked (the device's first time), false when it had already.
bool check_copy_round_trip(Device& device, const std::string& reference) {
  static std::mutex mu;
  static std::set<std::string> checked;
  std::lock_guard lock(mu);
  if (!checked.insert(device.name()).second) return false;
  for (int64_t n : {1, 7, 4099}) {
    Buffer b(device, dtypes::uint8, n);
    std::vector<uint8_t> pattern(static_cast<size_t>(n)), back(static_cast<size_t>(n), 0);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 131 + 17);
    b.copy_in(pattern.data(), pattern.size());
    b.copy_out(back.data(), back.size());
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (back[i] == pattern[i]) continue;
      std::ostringstream os;
      os << "tg: CHECK=" << reference << ": the copy round trip on " << device.name() << " is broken: a buffer of " << n
         << " byte(s) copied in and out came back with byte " << i << " = " << int(back[i]) << ", expected "
         << int(pattern[i]) << " (the plugin's allocator_copy_in / allocator_copy_out, not a kernel)";
      throw Error(os.str());
    }
  }
  return true;
}

}  // namespace

void shadow_check(const sched::ScheduleItem& item, const std::vector<std::shared_ptr<Buffer>>& own,
                  const codegen::KirProgram& kir, const std::string& source, const std::string& reference) {
  Device& ref = Device::get(reference);
  if (check_copy_round_trip(own[0]->device(), reference))  // once per device: say the check is on
    std::fprintf(stderr, "CHECK=%s: every kernel on %s runs again on %s and is compared (copies verified)\n",
                 reference.c_str(), own[0]->device().name().c_str(), reference.c_str());
  check_copy_round_trip(ref, reference);
  std::vector<std::shared_ptr<Buffer>> bufs;
  for (size_t i = 0; i < own.size(); ++i) {
    auto b = std::make_shared<Buffer>(ref, own[i]->dtype(), own[i]->numel());
    // outputs start from the device's own result too: a kernel that leaves elements unwritten must not differ
    auto h = host_copy(*own[i]);
    b->copy_in(h.data(), h.size());
    bufs.push_back(b);
  }
  codegen::KirProgram rk = codegen::lower_kernel(item.kernel, ref.caps());
  auto prog = ref.load(ref.compile(ref.render(rk.view()), rk.name), rk.view());
  ref.launch(*prog, pack_args(*prog, bufs, item.var_vals), rk.dims, true);
  for (int o = 0; o < item.kernel.n_outputs; ++o) {
    DType d = own[o]->dtype();
    auto got = host_copy(*own[o]), want = host_copy(*bufs[o]);
    for (size_t i = 0; i < static_cast<size_t>(own[o]->numel()); ++i) {
      if (same(got, want, d, i)) continue;
      std::ostringstream os;
      os << "tg: CHECK=" << reference << ": kernel " << kir.name << " on " << own[o]->device().name()
         << " differs from " << reference << " at output " << o << " element " << i << ": " << value_str(got, d, i)
         << " vs " << value_str(want, d, i) << " (" << d.name() << ")\n--- KIR ---\n"
         << kir.dump() << "--- source ---\n"
         << source;
      throw Error(os.str());
    }
  }
}

}  // namespace tg::rt
