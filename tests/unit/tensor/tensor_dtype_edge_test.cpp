// dtype edge cases: integer wrap-around, division by zero, INT_MIN / -1, IEEE specials, 16-bit float rounding
// (round-to-nearest-even on hand-picked bit patterns), and float -> int truncation. Values are hand-computed.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "tensor_test_util.hpp"

namespace {

using namespace tgtest;

const LD kInf = std::numeric_limits<LD>::infinity();
const LD kNaN = std::numeric_limits<LD>::quiet_NaN();

using Bin = std::function<Tensor(const Tensor&, const Tensor&)>;

struct BinCase {
  const char* what;
  DType d;
  Vals a, b;
  Bin fn;
  DType out;
  Vals exp;
};

void run(const std::vector<BinCase>& cases) {
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.what) + " " + c.d.name());
    Shape s{static_cast<int64_t>(c.a.size())};
    EXPECT_TRUE(check(c.fn(make(c.a, s, c.d), make(c.b, s, c.d)), s, c.out, c.exp));
  }
}

const Bin add = [](const Tensor& a, const Tensor& b) { return a + b; };
const Bin sub = [](const Tensor& a, const Tensor& b) { return a - b; };
const Bin mul = [](const Tensor& a, const Tensor& b) { return a * b; };
const Bin fdiv = [](const Tensor& a, const Tensor& b) { return a / b; };
const Bin idiv = [](const Tensor& a, const Tensor& b) { return a.idiv(b); };
const Bin mod = [](const Tensor& a, const Tensor& b) { return a.mod(b); };

TEST(IntegerEdges, WrapAround) {
  const LD i64min = -9223372036854775808.0L, i64max = 9223372036854775807.0L, u64max = 18446744073709551615.0L;
  run({
      {"127 + 1", dt::int8, {127, -128}, {1, -1}, add, dt::int8, {-128, 127}},
      {"0 - 1", dt::uint8, {0, 255}, {1, 255}, sub, dt::uint8, {255, 0}},
      {"255 + 1", dt::uint8, {255, 200}, {1, 100}, add, dt::uint8, {0, 44}},
      {"int8 mul", dt::int8, {16, -128}, {8, -1}, mul, dt::int8, {-128, -128}},
      {"int16 wrap", dt::int16, {32767, -32768}, {1, -1}, add, dt::int16, {-32768, 32767}},
      {"uint16 wrap", dt::uint16, {0, 65535}, {1, 2}, sub, dt::uint16, {65535, 65533}},
      {"int32 add", dt::int32, {2147483647, -2147483648.0L}, {1, -1}, add, dt::int32, {-2147483648.0L, 2147483647}},
      {"int32 mul",
       dt::int32,
       {65536, 46341, 100000},
       {65536, 46341, 100000},
       mul,
       dt::int32,
       {0, -2147479015, 1410065408}},
      {"uint32 mul", dt::uint32, {65536, 4294967295.0L}, {65536, 2}, mul, dt::uint32, {0, 4294967294.0L}},
      {"int64 add", dt::int64, {i64max, i64min}, {1, -1}, add, dt::int64, {i64min, i64max}},
      {"int64 mul",
       dt::int64,
       {4294967296.0L, 3037000500.0L},
       {4294967296.0L, 3037000500.0L},
       mul,
       dt::int64,
       {0, -9223372036709301616.0L}},
      {"uint64 sub", dt::uint64, {0, 5}, {1, 7}, sub, dt::uint64, {u64max, u64max - 1}},
  });
  // negation and abs of the most negative value wrap to itself
  EXPECT_TRUE(check(-make({-128, 127, 0}, {3}, dt::int8), {3}, dt::int8, {-128, -127, 0}));
  EXPECT_TRUE(check(make({-128, -5}, {2}, dt::int8).abs(), {2}, dt::int8, {-128, 5}));
  EXPECT_TRUE(check(-make({1, 0}, {2}, dt::uint8), {2}, dt::uint8, {255, 0}));
  EXPECT_TRUE(check(make({127}, {1}, dt::int8) + 1.0, {1}, dt::int8, {-128}));
  EXPECT_TRUE(check(make({0}, {1}, dt::uint32) - 1.0, {1}, dt::uint32, {4294967295.0L}));
}

TEST(IntegerEdges, DivisionByZeroAndIntMinByMinusOne) {
  run({
      {"x idiv 0", dt::int32, {7, -7, 0}, {0, 0, 0}, idiv, dt::int32, {0, 0, 0}},
      {"x mod 0", dt::int32, {7, -7, 0}, {0, 0, 0}, mod, dt::int32, {0, 0, 0}},
      {"x idiv 0", dt::uint8, {7, 255}, {0, 0}, idiv, dt::uint8, {0, 0}},
      {"x mod 0", dt::uint64, {7, 18446744073709551615.0L}, {0, 0}, mod, dt::uint64, {0, 0}},
      {"x idiv 0", dt::int64, {-9223372036854775808.0L}, {0}, idiv, dt::int64, {0}},
      {"truncation", dt::int32, {-7, 7, -7, 7, 6, -6}, {2, -2, -2, 2, 3, 3}, idiv, dt::int32, {-3, -3, 3, 3, 2, -2}},
      {"C remainder", dt::int32, {-7, 7, -7, 7, 6}, {2, -2, -2, 2, 3}, mod, dt::int32, {-1, 1, -1, 1, 0}},
      {"INT_MIN idiv -1", dt::int8, {-128, 5}, {-1, -1}, idiv, dt::int8, {-128, -5}},
      {"INT_MIN idiv -1", dt::int16, {-32768}, {-1}, idiv, dt::int16, {-32768}},
      {"INT_MIN idiv -1", dt::int32, {-2147483648.0L}, {-1}, idiv, dt::int32, {-2147483648.0L}},
      {"INT_MIN idiv -1", dt::int64, {-9223372036854775808.0L}, {-1}, idiv, dt::int64, {-9223372036854775808.0L}},
      {"INT_MIN mod -1", dt::int32, {-2147483648.0L, 7}, {-1, -1}, mod, dt::int32, {0, 0}},
      {"INT_MIN mod -1", dt::int64, {-9223372036854775808.0L}, {-1}, mod, dt::int64, {0}},
      {"unsigned big",
       dt::uint32,
       {4294967295.0L, 4294967295.0L},
       {4294967295.0L, 2},
       idiv,
       dt::uint32,
       {1, 2147483647}},
      {"unsigned mod", dt::uint64, {18446744073709551615.0L}, {10}, mod, dt::uint64, {5}},
  });
  // every integer dtype: x idiv 0 = 0 and x mod 0 = 0
  for (DType d : all_dtypes())
    if (d.is_int()) {
      SCOPED_TRACE(d.name());
      Tensor a = make({1, 100, 0}, {3}, d), z = Tensor::zeros({3}, d);
      EXPECT_TRUE(check(a.idiv(z), {3}, d, {0, 0, 0}));
      EXPECT_TRUE(check(a.mod(z), {3}, d, {0, 0, 0}));
    }
}

TEST(FloatEdges, DivisionByZero) {
  for (DType d : {dt::float16, dt::bfloat16, dt::float32, dt::float64}) {
    run({{"x / 0",
          d,
          {1, -1, 0, 1, kInf, kNaN},
          {0, 0, 0, -0.0L, 0, 0},
          fdiv,
          d,
          {kInf, -kInf, kNaN, -kInf, kInf, kNaN}}});
    EXPECT_TRUE(check(make({2, -3}, {2}, d).reciprocal() * 0.0, {2}, d, {0, -0.0L}));
    EXPECT_TRUE(check(make({0, -0.0L}, {2}, d).reciprocal(), {2}, d, {kInf, -kInf})) << d.name();
  }
  // integer true division is float32
  run({{"int / 0", dt::int32, {1, -1, 0}, {0, 0, 0}, fdiv, dt::float32, {kInf, -kInf, kNaN}}});
}

struct UnCase {
  const char* what;
  std::function<Tensor(const Tensor&)> fn;
  Vals in, exp;
};

TEST(FloatEdges, NaNAndInfPropagate) {
  const std::vector<UnCase> un = {
      {"exp", [](auto& t) { return t.exp(); }, {kNaN, kInf, -kInf}, {kNaN, kInf, 0}},
      {"exp2", [](auto& t) { return t.exp2(); }, {kNaN, kInf, -kInf}, {kNaN, kInf, 0}},
      {"log", [](auto& t) { return t.log(); }, {kNaN, kInf, 0, -1}, {kNaN, kInf, -kInf, kNaN}},
      {"log2", [](auto& t) { return t.log2(); }, {kNaN, kInf, 0, -1}, {kNaN, kInf, -kInf, kNaN}},
      {"sqrt", [](auto& t) { return t.sqrt(); }, {kNaN, kInf, -1, 0}, {kNaN, kInf, kNaN, 0}},
      {"rsqrt", [](auto& t) { return t.rsqrt(); }, {kNaN, kInf, 0}, {kNaN, 0, kInf}},
      {"sin", [](auto& t) { return t.sin(); }, {kNaN, kInf}, {kNaN, kNaN}},
      {"relu", [](auto& t) { return t.relu(); }, {kNaN, -kInf, kInf}, {kNaN, 0, kInf}},
      {"abs", [](auto& t) { return t.abs(); }, {kNaN, -kInf}, {kNaN, kInf}},
      {"neg", [](auto& t) { return t.neg(); }, {kNaN, kInf}, {kNaN, -kInf}},
      {"sigmoid", [](auto& t) { return t.sigmoid(); }, {kNaN, kInf, -kInf}, {kNaN, 1, 0}},
      {"tanh", [](auto& t) { return t.tanh(); }, {kNaN, kInf, -kInf}, {kNaN, 1, -1}},
      {"silu", [](auto& t) { return t.silu(); }, {kNaN, kInf}, {kNaN, kInf}},
  };
  const std::vector<BinCase> bin = {
      {"nan + 1", dt::float32, {kNaN, kInf, kInf}, {1, -kInf, kInf}, add, dt::float32, {kNaN, kNaN, kInf}},
      {"inf * 0", dt::float32, {kInf, kNaN}, {0, 0}, mul, dt::float32, {kNaN, kNaN}},
      {"maximum",
       dt::float32,
       {kNaN, 1, kNaN, -kInf},
       {1, kNaN, kNaN, 3},
       [](auto& a, auto& b) { return a.maximum(b); },
       dt::float32,
       {kNaN, kNaN, kNaN, 3}},
      {"minimum",
       dt::float32,
       {kNaN, 1, kInf},
       {1, kNaN, 3},
       [](auto& a, auto& b) { return a.minimum(b); },
       dt::float32,
       {kNaN, kNaN, 3}},
      {"lt",
       dt::float32,
       {kNaN, 1, kNaN, -kInf},
       {1, kNaN, kNaN, kInf},
       [](auto& a, auto& b) { return a.lt(b); },
       dt::bool_,
       {0, 0, 0, 1}},
      {"le",
       dt::float32,
       {kNaN, 1, kNaN},
       {1, kNaN, kNaN},
       [](auto& a, auto& b) { return a.le(b); },
       dt::bool_,
       {0, 0, 0}},
      {"gt",
       dt::float32,
       {kNaN, 1, kNaN},
       {1, kNaN, kNaN},
       [](auto& a, auto& b) { return a.gt(b); },
       dt::bool_,
       {0, 0, 0}},
      {"ge",
       dt::float32,
       {kNaN, 1, kNaN},
       {1, kNaN, kNaN},
       [](auto& a, auto& b) { return a.ge(b); },
       dt::bool_,
       {0, 0, 0}},
      {"eq",
       dt::float32,
       {kNaN, kInf, 0},
       {kNaN, kInf, -0.0L},
       [](auto& a, auto& b) { return a.eq(b); },
       dt::bool_,
       {0, 1, 1}},
      {"ne",
       dt::float32,
       {kNaN, kInf, 0},
       {kNaN, kInf, -0.0L},
       [](auto& a, auto& b) { return a.ne(b); },
       dt::bool_,
       {1, 0, 0}},
  };
  for (DType d : {dt::float32, dt::float64, dt::float16, dt::bfloat16}) {
    for (auto& c : un) {
      SCOPED_TRACE(std::string(c.what) + " " + d.name());
      Shape s{static_cast<int64_t>(c.in.size())};
      EXPECT_TRUE(check(c.fn(make(c.in, s, d)), s, d, c.exp));
    }
    std::vector<BinCase> cases = bin;
    for (auto& c : cases) {
      c.d = d;
      if (!c.out.is_bool()) c.out = d;
    }
    run(cases);
  }
}

// reads a float tensor's bit patterns
std::vector<uint16_t> bits16(Tensor t) { return t.to_vector<uint16_t>(); }
std::vector<uint32_t> bits32(Tensor t) { return t.bitcast(dt::uint32).to_vector<uint32_t>(); }

TEST(FloatEdges, SignedZeros) {
  std::vector<float> in = {-0.0f, 0.0f, -2.0f};
  Tensor t = Tensor::from_vector(in, {3});
  EXPECT_EQ(bits32(t.abs()), (std::vector<uint32_t>{0x00000000u, 0x00000000u, 0x40000000u})) << "abs(-0.0) = +0.0";
  EXPECT_EQ(bits32(-t), (std::vector<uint32_t>{0x00000000u, 0x80000000u, 0x40000000u})) << "neg";
  EXPECT_EQ(bits16(t.cast(dt::float16).abs()), (std::vector<uint16_t>{0x0000, 0x0000, 0x4000})) << "float16 abs";
  EXPECT_EQ(bits16(t.cast(dt::float16)), (std::vector<uint16_t>{0x8000, 0x0000, 0xC000})) << "float16 cast keeps -0.0";
  EXPECT_EQ(bits16(t.cast(dt::bfloat16)), (std::vector<uint16_t>{0x8000, 0x0000, 0xC000}))
      << "bfloat16 cast keeps -0.0";
}

struct Bits16Case {
  uint32_t f32;   // input float32 bit pattern
  uint16_t want;  // expected 16-bit pattern
  const char* why;
};

// float32 -> float16 round-to-nearest-even, hand-computed
const std::vector<Bits16Case> kToHalf = {
    {0x3F800000, 0x3C00, "1.0"},
    {0x3F801000, 0x3C00, "1 + 2^-11: halfway, ties to even (down)"},
    {0x3F803000, 0x3C02, "1 + 3*2^-11: halfway, ties to even (up)"},
    {0x3F801001, 0x3C01, "just above halfway rounds up"},
    {0x3F800FFF, 0x3C00, "just below halfway rounds down"},
    {0xBF803000, 0xBC02, "negative halfway up"},
    {0x477FE000, 0x7BFF, "65504 = max half"},
    {0x477FEFFF, 0x7BFF, "just below 65520 stays finite"},
    {0x477FF000, 0x7C00, "65520 rounds to inf"},
    {0x49742400, 0x7C00, "1e6 overflows to inf"},
    {0xC9742400, 0xFC00, "-1e6 overflows to -inf"},
    {0x38800000, 0x0400, "2^-14 = min normal"},
    {0x387FC000, 0x03FF, "2^-14 - 2^-24 = max subnormal"},
    {0x33800000, 0x0001, "2^-24 = min subnormal"},
    {0x33000000, 0x0000, "2^-25: halfway between 0 and 2^-24, ties to even (0)"},
    {0x33000001, 0x0001, "just above 2^-25 rounds up"},
    {0x33C00000, 0x0002, "3*2^-25: halfway between 1 and 2 ulps, ties to even (2)"},
    {0x32000000, 0x0000, "2^-27 underflows to 0"},
    {0xB3800000, 0x8001, "-2^-24"},
    {0x7F800000, 0x7C00, "inf"},
    {0xFF800000, 0xFC00, "-inf"},
    {0x3FFFF000, 0x4000, "1.99951171875 + rounding carries into the exponent"},
};
// float32 -> bfloat16 round-to-nearest-even, hand-computed
const std::vector<Bits16Case> kToBf16 = {
    {0x3F800000, 0x3F80, "1.0"},
    {0x3F808000, 0x3F80, "1 + 2^-8: halfway, ties to even (down)"},
    {0x3F818000, 0x3F82, "1 + 3*2^-8: halfway, ties to even (up)"},
    {0x3F808001, 0x3F81, "just above halfway"},
    {0x3F807FFF, 0x3F80, "just below halfway"},
    {0x7F7F7FFF, 0x7F7F, "large, rounds down"},
    {0x7F7FFFFF, 0x7F80, "FLT_MAX rounds to inf"},
    {0x00010000, 0x0001, "float32 subnormal kept"},
    {0x00008000, 0x0000, "subnormal halfway ties to even (0)"},
    {0x00018000, 0x0002, "subnormal halfway ties to even (2)"},
    {0xFF800000, 0xFF80, "-inf"},
    {0x3FFF8000, 0x4000, "rounding carries into the exponent"},
};

bool is_nan16(uint16_t h, bool half) {
  return half ? (h & 0x7C00) == 0x7C00 && (h & 0x3FF) : (h & 0x7F80) == 0x7F80 && (h & 0x7F);
}

TEST(FloatEdges, HostHelpersRoundToNearestEven) {
  for (auto& c : kToHalf) EXPECT_EQ(tg::float_to_half(std::bit_cast<float>(c.f32)), c.want) << c.why;
  for (auto& c : kToBf16) EXPECT_EQ(tg::float_to_bfloat16(std::bit_cast<float>(c.f32)), c.want) << c.why;
  EXPECT_TRUE(is_nan16(tg::float_to_half(NAN), true));
  EXPECT_TRUE(is_nan16(tg::float_to_bfloat16(NAN), false));
  EXPECT_EQ(tg::half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(tg::half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(tg::half_to_float(0xC000), -2.0f);
  EXPECT_EQ(tg::bfloat16_to_float(0x3F81), 1.0f + 0x1p-7f);
}

void check_bits_cast(const std::vector<Bits16Case>& cases, DType to) {
  std::vector<float> in;
  for (auto& c : cases) in.push_back(std::bit_cast<float>(c.f32));
  in.push_back(NAN);
  std::vector<uint16_t> got = bits16(Tensor::from_vector(in, {static_cast<int64_t>(in.size())}).cast(to));
  ASSERT_EQ(got.size(), in.size());
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(got[i], cases[i].want) << to.name() << ": " << cases[i].why << " (0x" << std::hex << cases[i].f32
                                     << " got 0x" << got[i] << ", expected 0x" << cases[i].want << ")";
  EXPECT_TRUE(is_nan16(got.back(), to == dt::float16)) << "NaN -> 0x" << std::hex << got.back();
}

TEST(FloatEdges, CastFloat32ToHalfRoundsToNearestEven) { check_bits_cast(kToHalf, dt::float16); }
TEST(FloatEdges, CastFloat32ToBFloat16RoundsToNearestEven) { check_bits_cast(kToBf16, dt::bfloat16); }

TEST(FloatEdges, CastFloat64ToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is above the halfway point: correct rounding gives 1 + 2^-10; rounding through float32 first
  // would land exactly on the halfway point and tie to 1.0
  std::vector<double> in = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 65519.999, 0x1p-25 + 0x1p-60};
  Tensor t = Tensor::from_vector<double>(in, {4}, dt::float64);
  EXPECT_EQ(bits16(t.cast(dt::float16)), (std::vector<uint16_t>{0x3C01, 0x3C00, 0x7BFF, 0x0001}));
  std::vector<double> inb = {1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-8};
  EXPECT_EQ(bits16(Tensor::from_vector<double>(inb, {2}, dt::float64).cast(dt::bfloat16)),
            (std::vector<uint16_t>{0x3F81, 0x3F80}));
}

TEST(FloatEdges, EveryHalfAndBFloat16PatternWidensExactly) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (DType d : {dt::float16, dt::bfloat16}) {
    std::vector<uint32_t> got = bits32(Tensor::from_vector<uint16_t>(all, {65536}, d).cast(dt::float32));
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      float want = d == dt::float16 ? tg::half_to_float(all[i]) : tg::bfloat16_to_float(all[i]);
      bool ok = std::isnan(want) ? std::isnan(std::bit_cast<float>(got[i])) : got[i] == std::bit_cast<uint32_t>(want);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << d.name() << " 0x" << std::hex << i << " -> 0x" << got[i] << ", expected 0x"
                      << std::bit_cast<uint32_t>(want);
    }
    EXPECT_EQ(bad, 0u) << d.name();
  }
}

TEST(FloatEdges, RandomFloat32PatternsNarrowLikeTheHostHelpers) {
  std::mt19937 rng(99);
  SCOPED_TRACE("seed=99");
  std::vector<float> in(1 << 16);
  for (auto& f : in) {
    f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) f = 1.0f;
  }
  Tensor t = Tensor::from_vector(in, {static_cast<int64_t>(in.size())});
  std::vector<uint16_t> h = bits16(t.cast(dt::float16)), b = bits16(t.cast(dt::bfloat16));
  size_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    uint16_t wh = tg::float_to_half(in[i]), wb = tg::float_to_bfloat16(in[i]);
    if ((h[i] != wh || b[i] != wb) && bad++ < 5)
      ADD_FAILURE() << "0x" << std::hex << std::bit_cast<uint32_t>(in[i]) << ": half 0x" << h[i] << " (want 0x" << wh
                    << "), bfloat16 0x" << b[i] << " (want 0x" << wb << ")";
  }
  EXPECT_EQ(bad, 0u);
}

TEST(CastEdges, FloatToIntTruncatesTowardZero) {
  struct Case {
    DType from, to;
    Vals in, exp;
  };
  const std::vector<Case> cases = {
      {dt::float32,
       dt::int32,
       {2.9, -2.9, -0.5, 0.5, -0.0L, 1e9, -2147483520.0L},
       {2, -2, 0, 0, 0, 1000000000, -2147483520.0L}},
      {dt::float32, dt::int8, {127.9, -128.9, 5.5, -5.5}, {127, -128, 5, -5}},
      {dt::float32, dt::uint8, {255.9, 0.9, 128.5}, {255, 0, 128}},
      {dt::float32, dt::uint32, {4294967040.0L, 3.99}, {4294967040.0L, 3}},
      {dt::float32, dt::int64, {-1e18, 123456789.5}, {-999999984306749440.0L, 123456792}},
      {dt::float64, dt::int64, {-9007199254740993.0L, 2.5e18, -7.999999}, {-9007199254740992.0L, 2.5e18, -7}},
      {dt::float64, dt::uint64, {1.8e19, 0.999}, {18000000000000000000.0L, 0}},
      {dt::float16, dt::int32, {65504, -1.5, 0.999}, {65504, -1, 0}},
      {dt::bfloat16, dt::int16, {-300.5, 7.75}, {-300, 7}},
      {dt::float32, dt::bool_, {0, -0.0L, 0.5, -kInf, kNaN}, {0, 0, 1, 1, 1}},
      {dt::int32, dt::float32, {16777217, 16777219, -16777217}, {16777216, 16777220, -16777216}},
      {dt::int64, dt::float64, {9007199254740993.0L, 9007199254740995.0L}, {9007199254740992.0L, 9007199254740996.0L}},
      {dt::uint64, dt::float32, {18446744073709551615.0L}, {18446744073709551616.0L}},
      {dt::int32, dt::float16, {2049, 2051, 65519, 65520, 70000}, {2048, 2052, 65504, kInf, kInf}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.from.name()) + " -> " + c.to.name());
    Shape s{static_cast<int64_t>(c.in.size())};
    EXPECT_TRUE(check(make(c.in, s, c.from).cast(c.to), s, c.to, c.exp));
  }
}

}  // namespace
