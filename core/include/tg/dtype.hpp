// Scalar and vector data types of tg; numbering matches tg_dtype in the plugin ABI.
#pragma once

#include <cstdint>
#include <string>

namespace tg {

enum class ScalarType : uint8_t {
  Bool = 0,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
inline constexpr int kScalarTypeCount = 13;

struct DType {
  ScalarType scalar = ScalarType::Float32;
  uint8_t count = 1;  // vector lanes

  constexpr DType() = default;
  constexpr DType(ScalarType s, uint8_t n = 1) : scalar(s), count(n) {}
  constexpr bool operator==(const DType&) const = default;

  constexpr DType vec(int n) const { return DType(scalar, static_cast<uint8_t>(n)); }
  constexpr DType base() const { return DType(scalar); }
  constexpr int itemsize() const {
    constexpr uint8_t sizes[16] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 0, 0, 0};
    return sizes[static_cast<int>(scalar) & 15];
  }
  constexpr bool is_bool() const { return scalar == ScalarType::Bool; }
  constexpr bool is_float() const { return scalar >= ScalarType::Float16; }
  constexpr bool is_unsigned() const { return scalar >= ScalarType::UInt8 && scalar <= ScalarType::UInt64; }
  constexpr bool is_signed_int() const { return scalar >= ScalarType::Int8 && scalar <= ScalarType::Int64; }
  constexpr bool is_int() const { return is_unsigned() || is_signed_int(); }
  std::string name() const;  // "float32", "int8x4"
};

namespace dtypes {
inline constexpr DType bool_{ScalarType::Bool};
inline constexpr DType int8{ScalarType::Int8};
inline constexpr DType int16{ScalarType::Int16};
inline constexpr DType int32{ScalarType::Int32};
inline constexpr DType int64{ScalarType::Int64};
inline constexpr DType uint8{ScalarType::UInt8};
inline constexpr DType uint16{ScalarType::UInt16};
inline constexpr DType uint32{ScalarType::UInt32};
inline constexpr DType uint64{ScalarType::UInt64};
inline constexpr DType float16{ScalarType::Float16};
inline constexpr DType bfloat16{ScalarType::BFloat16};
inline constexpr DType float32{ScalarType::Float32};
inline constexpr DType float64{ScalarType::Float64};
inline constexpr DType all[] = {bool_,  int8,   int16,   int32,    int64,   uint8,  uint16,
                                uint32, uint64, float16, bfloat16, float32, float64};

// The type both operands of a binary op are promoted to (numpy-like lattice, floats win).
DType promote(DType a, DType b);
}  // namespace dtypes

// Round-to-nearest-even conversions for the 16-bit float formats (host side, bit exact).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace tg
