// DType names, promotion and the host-side 16-bit float conversions.
#include "tg/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace tg {

std::string DType::name() const {
  static const char* names[] = {"bool",   "int8",   "int16",   "int32",    "int64",   "uint8",  "uint16",
                                "uint32", "uint64", "float16", "bfloat16", "float32", "float64"};
  std::string n = names[static_cast<int>(scalar)];
  return count == 1 ? n : n + "x" + std::to_string(count);
}

namespace dtypes {

// Rank in the promotion lattice: bool < ints by size < floats; mixed signedness goes to the next signed size.
DType promote(DType a, DType b) {
  a = a.base(), b = b.base();
  if (a == b) return a;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_float() || b.is_float()) {
    if (!a.is_float()) return b;
    if (!b.is_float()) return a;
    if (a.itemsize() != b.itemsize()) return a.itemsize() > b.itemsize() ? a : b;
    return float32;  // float16 with bfloat16
  }
  if (a.is_unsigned() == b.is_unsigned()) return a.itemsize() >= b.itemsize() ? a : b;
  DType s = a.is_unsigned() ? b : a, u = a.is_unsigned() ? a : b;
  if (s.itemsize() > u.itemsize()) return s;
  switch (u.itemsize()) {
    case 1: return int16;
    case 2: return int32;
    default: return int64;
  }
}

}  // namespace dtypes

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {                                               // subnormal half (or zero)
    // Add 0.5 (as float) so the FPU's own round-to-nearest-even aligns the mantissa for us.
    float r = std::bit_cast<float>(absx) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(r) - 0x3f000000u));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? (0x7f800000u | (mant << 13)) : (((exp + 112) << 23) | (mant << 13));
  return std::bit_cast<float>(sign | bits);
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace tg
