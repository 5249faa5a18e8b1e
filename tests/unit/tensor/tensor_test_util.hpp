// Shared helpers for the tensor unit suites: host <-> tensor conversion for every dtype, independent reference
// rounding/wrapping, and a check() that reports the first mismatching indices with got/expected.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tg/dtype.hpp"
#include "tg/tensor.hpp"

namespace tgtest {

using tg::DType;
using tg::ScalarType;
using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;
using LD = long double;  // holds every int64/uint64 value and every float exactly
using Vals = std::vector<LD>;

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Calls f(T{}) with T the host element type of d (uint8_t for bool, uint16_t bits for float16/bfloat16).
template <class F>
decltype(auto) with_host_type(DType d, F&& f) {
  switch (d.scalar) {
    case ScalarType::Bool: return f(uint8_t{});
    case ScalarType::Int8: return f(int8_t{});
    case ScalarType::Int16: return f(int16_t{});
    case ScalarType::Int32: return f(int32_t{});
    case ScalarType::Int64: return f(int64_t{});
    case ScalarType::UInt8: return f(uint8_t{});
    case ScalarType::UInt16: return f(uint16_t{});
    case ScalarType::UInt32: return f(uint32_t{});
    case ScalarType::UInt64: return f(uint64_t{});
    case ScalarType::Float16: return f(uint16_t{});
    case ScalarType::BFloat16: return f(uint16_t{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
  }
  return f(uint8_t{});
}

// One host value into the element type of d (values must be representable, or are rounded like a C cast).
template <class T>
T encode(DType d, LD x) {
  if (d.scalar == ScalarType::Bool) return static_cast<T>(x != 0);
  if (d.scalar == ScalarType::Float16) return static_cast<T>(tg::float_to_half(static_cast<float>(x)));
  if (d.scalar == ScalarType::BFloat16) return static_cast<T>(tg::float_to_bfloat16(static_cast<float>(x)));
  return static_cast<T>(x);
}
template <class T>
LD decode(DType d, T v) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (d.scalar == ScalarType::Float16) return tg::half_to_float(v);
    if (d.scalar == ScalarType::BFloat16) return tg::bfloat16_to_float(v);
  }
  return static_cast<LD>(v);
}

inline Tensor make(const Vals& v, const Shape& s, DType d) {
  return with_host_type(d, [&](auto z) {
    using T = decltype(z);
    std::vector<T> host(v.size());
    for (size_t i = 0; i < v.size(); ++i) host[i] = encode<T>(d, v[i]);
    return Tensor::from_vector<T>(host, s, d);
  });
}

inline Vals read(Tensor t) {
  DType d = t.dtype();
  return with_host_type(d, [&](auto z) {
    using T = decltype(z);
    std::vector<T> host = t.to_vector<T>();
    Vals out(host.size());
    for (size_t i = 0; i < host.size(); ++i) out[i] = decode<T>(d, host[i]);
    return out;
  });
}

// ---- reference rounding: what a value becomes when stored as d ------------------------------------------------
inline uint64_t to_bits64(LD x) {
  return x < 0 ? static_cast<uint64_t>(static_cast<int64_t>(x)) : static_cast<uint64_t>(x);
}

// Two's complement wrap of a 64-bit pattern into d's width and signedness.
inline LD wrap_bits(DType d, uint64_t u) {
  int bits = d.itemsize() * 8;
  if (bits < 64) u &= (uint64_t{1} << bits) - 1;
  if (d.is_signed_int() && bits < 64 && (u >> (bits - 1)) & 1) u |= ~((uint64_t{1} << bits) - 1);
  if (d.is_signed_int()) return static_cast<LD>(static_cast<int64_t>(u));
  return static_cast<LD>(u);
}

inline LD round_to(DType d, LD x) {
  switch (d.scalar) {
    case ScalarType::Bool: return x != 0 ? 1 : 0;
    case ScalarType::Float16: return tg::half_to_float(tg::float_to_half(static_cast<float>(x)));
    case ScalarType::BFloat16: return tg::bfloat16_to_float(tg::float_to_bfloat16(static_cast<float>(x)));
    case ScalarType::Float32: return static_cast<float>(x);
    case ScalarType::Float64: return static_cast<double>(x);
    default: return wrap_bits(d, to_bits64(x));
  }
}

// ---- comparison ----------------------------------------------------------------------------------------------
struct Tol {
  int ulps = 0;     // distance in units of the last place of the result dtype
  double rtol = 0;  // or |got - expected| <= atol + rtol * |expected|
  double atol = 0;
};

// Monotonic integer key of a float value in d's format, so that key differences count ulps.
inline int64_t ulp_key(DType d, LD x) {
  if (d.scalar == ScalarType::Float64) {
    int64_t k = std::bit_cast<int64_t>(static_cast<double>(x));
    return k < 0 ? std::numeric_limits<int64_t>::min() - k : k;
  }
  float f = static_cast<float>(x);
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (d.scalar == ScalarType::Float16) u = static_cast<uint32_t>(tg::float_to_half(f)) << 16;
  if (d.scalar == ScalarType::BFloat16) u = static_cast<uint32_t>(tg::float_to_bfloat16(f)) << 16;
  int64_t s = static_cast<int32_t>(u);
  int64_t k = s < 0 ? static_cast<int64_t>(std::numeric_limits<int32_t>::min()) - s : s;
  return d.itemsize() == 2 ? k / 65536 : k;
}

inline bool close(DType d, LD got, LD exp, const Tol& tol) {
  if (!d.is_float()) return got == exp;
  if (std::isnan(exp)) return std::isnan(got);
  if (std::isnan(got)) return false;
  if (std::isinf(exp) || std::isinf(got)) return got == exp;
  if (got == exp) return true;
  LD k1 = static_cast<LD>(ulp_key(d, got)), k2 = static_cast<LD>(ulp_key(d, exp));
  if (std::fabs(k1 - k2) <= tol.ulps) return true;
  return std::fabs(got - exp) <= tol.atol + tol.rtol * std::fabs(exp);
}

inline std::string fmt(LD x) {
  std::ostringstream os;
  os << std::setprecision(20) << x;
  if (std::isfinite(x) && x != std::trunc(x)) os << " [" << std::hexfloat << static_cast<double>(x) << "]";
  return os.str();
}

// Compares element by element; on failure prints up to 8 mismatching indices with got and expected.
inline ::testing::AssertionResult check(const Vals& got, const Vals& exp, DType d, Tol tol = {}) {
  if (got.size() != exp.size())
    return ::testing::AssertionFailure() << "size mismatch: got " << got.size() << " elements, expected " << exp.size();
  std::ostringstream os;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (close(d, got[i], exp[i], tol)) continue;
    if (bad++ < 8) os << "\n  [" << i << "] got " << fmt(got[i]) << " expected " << fmt(exp[i]);
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ (dtype " << d.name()
                                       << ", ulps " << tol.ulps << ", rtol " << tol.rtol << ", atol " << tol.atol
                                       << "):" << os.str();
}
// Realizes t, checks its dtype and shape, then its values.
inline ::testing::AssertionResult check(Tensor t, const Shape& shape, DType d, const Vals& exp, Tol tol = {}) {
  if (!(t.dtype() == d))
    return ::testing::AssertionFailure() << "dtype " << t.dtype().name() << ", expected " << d.name();
  if (t.shape() != shape)
    return ::testing::AssertionFailure() << "shape " << tg::shape_str(t.shape()) << ", expected "
                                         << tg::shape_str(shape);
  return check(read(t), exp, d, tol);
}

// ---- random inputs, already representable in d ---------------------------------------------------------------
inline Vals random_vals(DType d, int64_t n, std::mt19937& rng, double lo, double hi) {
  Vals v(static_cast<size_t>(n));
  if (d.is_bool()) {
    std::uniform_int_distribution<int> u(0, 1);
    for (auto& x : v) x = u(rng);
  } else if (d.is_float()) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (auto& x : v) x = round_to(d, u(rng));
  } else {
    LD mn = d.is_unsigned() ? 0 : -std::ldexp(1.0L, d.itemsize() * 8 - 1);
    LD mx = (d.is_unsigned() ? std::ldexp(1.0L, d.itemsize() * 8) : std::ldexp(1.0L, d.itemsize() * 8 - 1)) - 1;
    int64_t a = static_cast<int64_t>(std::max<LD>(mn, std::ceil(static_cast<LD>(lo))));
    int64_t b = static_cast<int64_t>(std::min<LD>(mx > 9.2e18L ? 9.2e18L : mx, std::floor(static_cast<LD>(hi))));
    std::uniform_int_distribution<int64_t> u(a, b);
    for (auto& x : v) x = static_cast<LD>(u(rng));
  }
  return v;
}

// Full-range random integers of d (every bit pattern equally likely), as values.
inline Vals random_bits(DType d, int64_t n, std::mt19937_64& rng) {
  Vals v(static_cast<size_t>(n));
  for (auto& x : v) x = wrap_bits(d, rng());
  return v;
}

inline std::string seed_trace(uint32_t seed) { return "seed=" + std::to_string(seed); }

// Row-major strides and multi-index helpers for broadcasting references.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}
// Index into a tensor of shape `src` broadcast to `out`, for flat output index `flat`.
inline int64_t bcast_index(const Shape& out, const Shape& src, int64_t flat) {
  auto so = strides_of(out), ss = strides_of(src);
  size_t off = out.size() - src.size();
  int64_t idx = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t c = (flat / so[i]) % out[i];
    if (i >= off && src[i - off] != 1) idx += c * ss[i - off];
  }
  return idx;
}

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v(std::begin(dt::all), std::end(dt::all));
  return v;
}

}  // namespace tgtest
