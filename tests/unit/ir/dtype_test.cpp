// Mirrors core/src/ir/dtype.cpp (and tg/dtype.hpp): sizes, names, the promotion lattice, and the 16-bit float
// conversions against an independent rounding written here from the formats' definitions.
#include "tg/dtype.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

namespace tg {
namespace {

TEST(DType, ItemsizeAndKind) {
  const int sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};  // in ScalarType order, from the C types
  for (int i = 0; i < kScalarTypeCount; ++i) EXPECT_EQ(dtypes::all[i].itemsize(), sizes[i]) << dtypes::all[i].name();
  EXPECT_EQ(dtypes::float32.vec(4).itemsize(), 4) << "itemsize is per lane";
  EXPECT_TRUE(dtypes::bool_.is_bool());
  EXPECT_FALSE(dtypes::bool_.is_int());
  EXPECT_TRUE(dtypes::int8.is_signed_int() && !dtypes::int8.is_unsigned());
  EXPECT_TRUE(dtypes::uint64.is_unsigned() && dtypes::uint64.is_int() && !dtypes::uint64.is_signed_int());
  for (DType f : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64})
    EXPECT_TRUE(f.is_float() && !f.is_int()) << f.name();
  EXPECT_FALSE(dtypes::int64.is_float());
}

TEST(DType, NamesOfScalarsAndVectors) {
  const char* names[] = {"bool",   "int8",   "int16",   "int32",    "int64",   "uint8",  "uint16",
                         "uint32", "uint64", "float16", "bfloat16", "float32", "float64"};
  for (int i = 0; i < kScalarTypeCount; ++i) EXPECT_EQ(dtypes::all[i].name(), names[i]);
  EXPECT_EQ(dtypes::int8.vec(4).name(), "int8x4");
  EXPECT_EQ(dtypes::float32.vec(16).name(), "float32x16");
  EXPECT_EQ(dtypes::bool_.vec(2).name(), "boolx2");
}

TEST(DType, VecAndBase) {
  DType v = dtypes::float16.vec(8);
  EXPECT_EQ(v.count, 8);
  EXPECT_EQ(v.base(), dtypes::float16);
  EXPECT_NE(v, dtypes::float16);
  EXPECT_EQ(v.vec(1), dtypes::float16);
}

// Promotion: each row is (a, b, expected), checked both ways round.
TEST(DType, PromotionLattice) {
  using namespace dtypes;
  struct Row {
    DType a, b, want;
  };
  const Row rows[] = {
      {bool_, bool_, bool_},        {bool_, int8, int8},          {uint16, bool_, uint16},
      {bool_, float16, float16},    {int8, int32, int32},         {int64, int16, int64},
      {uint8, uint32, uint32},      {uint64, uint8, uint64},      {int8, uint8, int16},
      {int16, uint16, int32},       {int32, uint32, int64},       {int64, uint64, int64},
      {int16, uint8, int16},        {int64, uint32, int64},       {int8, uint32, int64},
      {int32, float16, float16},    {uint64, bfloat16, bfloat16}, {float16, float32, float32},
      {bfloat16, float64, float64}, {float16, bfloat16, float32}, {float32, float64, float64},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(promote(r.a, r.b), r.want) << r.a.name() << " with " << r.b.name() << " gave "
                                         << promote(r.a, r.b).name();
    EXPECT_EQ(promote(r.b, r.a), r.want) << r.b.name() << " with " << r.a.name() << " gave "
                                         << promote(r.b, r.a).name();
  }
  EXPECT_EQ(promote(int8.vec(4), int8.vec(4)), int8) << "promotion works on the scalar types";
}

// --- 16-bit floats: an independent reference ---------------------------------------------------------------------

// Rounds a finite double to the nearest value with `mant` fraction bits and exponent range [emin, emax]
// (subnormals below 2^emin), ties to even; overflow gives infinity. Returns the rounded value as a double.
double round_to_format(double x, int mant, int emin, int emax) {
  if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
  int e;
  std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  int exp = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, exp - mant);
  double r = std::nearbyint(x / quantum) * quantum;  // default rounding mode: ties to even
  double largest = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  if (std::fabs(r) > largest) return std::copysign(INFINITY, x);
  return r;
}

double round_half(double x) { return round_to_format(x, 10, -14, 15); }
double round_bfloat16(double x) { return round_to_format(x, 7, -126, 127); }

// Decodes by the format's definition: sign, 5-bit exponent (bias 15), 10-bit fraction.
double decode_half(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, frac = h & 1023;
  double v = exp == 0 ? std::ldexp(frac, -24) : exp == 31 ? (frac ? NAN : INFINITY) : std::ldexp(1024 + frac, exp - 25);
  return sign ? -v : v;
}

uint32_t test_seed() {
  uint32_t seed = std::random_device{}();
  std::printf("dtype_test: random seed %u\n", seed);
  return seed;
}

TEST(DType, HalfDecodesEveryBitPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double want = decode_half(static_cast<uint16_t>(h));
    float got = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << "0x" << h;
    ASSERT_EQ(std::signbit(got), (h >> 15) != 0) << std::hex << "0x" << h;
  }
}

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 31) == 31 && (h & 1023)) continue;  // NaNs: only NaN-ness is kept
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << std::hex << "0x" << h;
  }
}

TEST(DType, FloatToHalfRoundsToNearestEven) {
  struct Case {
    float in;
    double want;
  };
  const Case cases[] = {
      {1.0f, 1.0},
      {1.0f + 1.0f / 2048, 1.0},                      // a tie: to the even mantissa (1.0)
      {1.0f + 3.0f / 2048, 1.0 + 2.0 / 1024},         // a tie: to the even mantissa (up)
      {65504.0f, 65504.0},                            // the largest half
      {65519.0f, 65504.0},                            // just below the halfway point to 65536
      {65520.0f, INFINITY},                           // halfway rounds to even: infinity
      {std::ldexp(1.0f, -24), std::ldexp(1.0, -24)},  // the smallest subnormal
      {std::ldexp(1.0f, -25), 0.0},                   // half of it: a tie to even (zero)
      {std::ldexp(1.5f, -25), std::ldexp(1.0, -24)},
      {-0.0f, -0.0},
      {INFINITY, INFINITY},
      {-INFINITY, -INFINITY},
      {1e-10f, 0.0},
  };
  for (const Case& c : cases) {
    double got = decode_half(float_to_half(c.in));
    EXPECT_EQ(got, c.want) << "float_to_half(" << c.in << ")";
    EXPECT_EQ(std::signbit(got), std::signbit(c.want)) << c.in;
  }
  EXPECT_TRUE(std::isnan(decode_half(float_to_half(NAN))));
}

TEST(DType, FloatToHalfMatchesTheReferenceOnRandomFloats) {
  std::mt19937 rng(test_seed());
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    // a float in roughly [2^-30, 2^17]: the half range, its subnormals and overflow
    uint32_t b = (bits(rng) & 0x807fffffu) | ((97u + bits(rng) % 48u) << 23);
    float f = std::bit_cast<float>(b);
    double want = round_half(f);
    double got = decode_half(float_to_half(f));
    ASSERT_EQ(got, want) << "float_to_half(" << f << ") bits 0x" << std::hex << b;
  }
}

TEST(DType, Bfloat16) {
  std::mt19937 rng(test_seed());
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(f))))
          << "NaN stays NaN (quiet), bits " << std::hex << std::bit_cast<uint32_t>(f);
      continue;
    }
    double want = round_bfloat16(f);
    ASSERT_EQ(static_cast<double>(bfloat16_to_float(float_to_bfloat16(f))), want)
        << "bfloat16 of " << f << " bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
  }
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xc000), -2.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 256), 0x3f80) << "a tie goes to even";
  EXPECT_EQ(float_to_bfloat16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(3.4e38f)), INFINITY) << "past the largest bfloat16 rounds to inf";
}

}  // namespace
}  // namespace tg
