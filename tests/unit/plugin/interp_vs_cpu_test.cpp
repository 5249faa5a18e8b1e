// INTERP (the SDK's reference KIR interpreter) against CPU (clang-compiled C): the same Tensor programs on both
// devices must give the same bytes. Both plugins declare the same capabilities, so the core sends them the same
// KIR; CPU compiles it with -fwrapv -ffp-contract=off and no fast-math, and INTERP evaluates each op the way that
// C does (IEEE per operation, libm for exp2/log2/sin), so integer AND float results are required bit for bit.
// A mismatch prints the program, dtype, first differing element and both values.
//
// Registered from tests/sdk/CMakeLists.txt (label unit). TG_TEST_SEED reproduces a run's random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_seed.hpp"
#include "tg/device.hpp"
#include "tg/dtype.hpp"
#include "tg/tensor.hpp"

namespace {

using tg::DType;
using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;

uint32_t seed() {
  static const uint32_t value = tgtest::test_seed("interp_vs_cpu_test");
  return value;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Random host bytes for `shape` of dtype d: small values (|x| <= 100) in the dtype's own encoding, with a
// sprinkling of zeros so division and comparisons meet their edge cases.
std::vector<uint8_t> random_bytes(DType d, const Shape& shape, uint32_t stream) {
  std::mt19937 rng(seed() * 7919u + stream);
  std::uniform_real_distribution<double> real(-100.0, 100.0);
  std::uniform_int_distribution<int> small(-100, 100), zero(0, 9);
  const int64_t n = numel(shape);
  std::vector<uint8_t> out(static_cast<size_t>(n * d.itemsize()));
  for (int64_t i = 0; i < n; ++i) {
    const bool is_zero = zero(rng) == 0;
    const double f = is_zero ? 0.0 : real(rng);
    const int64_t k = is_zero ? 0 : small(rng);
    uint8_t* at = out.data() + i * d.itemsize();
    const auto put = [&](auto v) { std::memcpy(at, &v, sizeof v); };
    switch (d.scalar) {
      case tg::ScalarType::Bool: put(static_cast<uint8_t>(k > 0)); break;
      case tg::ScalarType::Int8: put(static_cast<int8_t>(k)); break;
      case tg::ScalarType::Int16: put(static_cast<int16_t>(k * 300)); break;
      case tg::ScalarType::Int32: put(static_cast<int32_t>(k * 20000000)); break;
      case tg::ScalarType::Int64: put(static_cast<int64_t>(k) * 90000000000000000LL); break;
      case tg::ScalarType::UInt8: put(static_cast<uint8_t>(k < 0 ? -k : k)); break;
      case tg::ScalarType::UInt16: put(static_cast<uint16_t>((k < 0 ? -k : k) * 600)); break;
      case tg::ScalarType::UInt32: put(static_cast<uint32_t>((k < 0 ? -k : k) * 40000000)); break;
      case tg::ScalarType::UInt64: put(static_cast<uint64_t>(k < 0 ? -k : k) * 180000000000000000ULL); break;
      case tg::ScalarType::Float16:  // a few exact float16 values: 1/8 steps below 100
      {  // float16 bits by hand, exact for multiples of 1/8 below 128: sign, exponent, 10-bit mantissa
        const double a = std::fabs(std::round(f * 8) / 8);
        uint16_t bits = 0;
        if (a != 0) {
          const int e = static_cast<int>(std::floor(std::log2(a)));
          bits = static_cast<uint16_t>(((e + 15) << 10) |
                                       static_cast<int>(std::lround((a / std::ldexp(1.0, e) - 1) * 1024)));
        }
        put(static_cast<uint16_t>(bits | (f < 0 ? 0x8000 : 0)));
      } break;
      case tg::ScalarType::BFloat16:
        put(static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(f)) >> 16));  // truncated: exact
        break;
      case tg::ScalarType::Float32: put(static_cast<float>(f)); break;
      case tg::ScalarType::Float64: put(f); break;
    }
  }
  return out;
}

Tensor input(DType d, const Shape& shape, uint32_t stream, const std::string& device) {
  const std::vector<uint8_t> bytes = random_bytes(d, shape, stream);
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape, d, device);
}

std::vector<uint8_t> bytes_of(Tensor t) {
  std::vector<uint8_t> out(static_cast<size_t>(t.numel() * t.dtype().itemsize()));
  t.copy_out(out.data(), out.size());
  return out;
}

std::string hex(const uint8_t* p, int size) {
  std::ostringstream os;
  os << "0x";
  for (int b = size - 1; b >= 0; --b) os << std::hex << std::setw(2) << std::setfill('0') << +p[b];
  return os.str();
}

// Runs `program` on CPU and on INTERP and requires the same dtype, shape and bytes.
void check_same(const std::string& what, const std::function<Tensor(const std::string&)>& program) {
  SCOPED_TRACE(what);
  Tensor on_cpu = program("CPU"), on_interp = program("INTERP");
  ASSERT_EQ(on_cpu.dtype().name(), on_interp.dtype().name()) << what;
  ASSERT_EQ(on_cpu.shape(), on_interp.shape()) << what;
  EXPECT_EQ(on_interp.device(), "INTERP") << what;
  const std::vector<uint8_t> a = bytes_of(on_cpu), b = bytes_of(on_interp);
  ASSERT_EQ(a.size(), b.size());
  const int size = on_cpu.dtype().itemsize();
  for (size_t i = 0; i < a.size(); i += size) {
    if (std::memcmp(&a[i], &b[i], size) == 0) continue;
    ADD_FAILURE() << what << " (" << on_cpu.dtype().name() << " " << tg::shape_str(on_cpu.shape()) << "): element "
                  << i / size << " is " << hex(&a[i], size) << " on CPU but " << hex(&b[i], size) << " on INTERP";
    return;
  }
}

class InterpVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto devices = tg::available_devices();
    for (const char* needed : {"CPU", "INTERP"})
      if (std::find(devices.begin(), devices.end(), needed) == devices.end())
        GTEST_SKIP() << "no " << needed << " device (plugins:" << devices.size() << ")";
  }
};

const std::vector<DType> kInts = {dt::int8,  dt::int16,  dt::int32,  dt::int64,
                                  dt::uint8, dt::uint16, dt::uint32, dt::uint64};
const std::vector<DType> kFloats = {dt::float16, dt::bfloat16, dt::float32, dt::float64};

// ---- elementwise, every dtype
// ----------------------------------------------------------------------------------------

TEST_F(InterpVsCpu, IntegerArithmeticWrapsAndDividesAlike) {
  const Shape shape{7, 37};  // odd sizes: vector lanes and a scalar tail
  for (DType d : kInts) {
    const auto a = [&](const std::string& dev) { return input(d, shape, 1, dev); };
    const auto b = [&](const std::string& dev) { return input(d, shape, 2, dev); };
    const std::string n = d.name();
    check_same(n + " a*b+a", [&](const std::string& dev) { return a(dev) * b(dev) + a(dev); });
    check_same(n + " a-b", [&](const std::string& dev) { return a(dev) - b(dev); });
    check_same(n + " -a", [&](const std::string& dev) { return -a(dev); });
    check_same(n + " a idiv b", [&](const std::string& dev) { return a(dev).idiv(b(dev)); });
    check_same(n + " a mod b", [&](const std::string& dev) { return a(dev).mod(b(dev)); });
    check_same(n + " max/min", [&](const std::string& dev) { return a(dev).maximum(b(dev)) - a(dev).minimum(b(dev)); });
    check_same(n + " where(a<b, a, b*3)",
               [&](const std::string& dev) { return Tensor::where(a(dev).lt(b(dev)), a(dev), b(dev) * 3); });
    check_same(n + " a==b", [&](const std::string& dev) { return a(dev).eq(b(dev)); });
    check_same(n + " a/b (true division)", [&](const std::string& dev) { return a(dev) / b(dev); });
  }
}

TEST_F(InterpVsCpu, FloatArithmeticAndTranscendentalsAgreeBitForBit) {
  const Shape shape{5, 41};
  for (DType d : kFloats) {
    const auto a = [&](const std::string& dev) { return input(d, shape, 3, dev); };
    const auto b = [&](const std::string& dev) { return input(d, shape, 4, dev); };
    const std::string n = d.name();
    check_same(n + " a*b+a/b", [&](const std::string& dev) { return a(dev) * b(dev) + a(dev) / b(dev); });
    check_same(n + " max/min", [&](const std::string& dev) { return a(dev).maximum(b(dev)) - a(dev).minimum(b(dev)); });
    check_same(n + " sqrt|a| exp(a/50) log|a|",
               [&](const std::string& dev) { return a(dev).abs().sqrt() + (a(dev) / 50).exp() + a(dev).abs().log(); });
    check_same(n + " sin cos", [&](const std::string& dev) { return a(dev).sin() * a(dev).cos(); });
    check_same(n + " sigmoid tanh gelu",
               [&](const std::string& dev) { return a(dev).sigmoid() + (a(dev) / 10).tanh() + (a(dev) / 10).gelu(); });
    check_same(n + " where(a<b)",
               [&](const std::string& dev) { return Tensor::where(a(dev).lt(b(dev)), a(dev), -b(dev)); });
  }
}

TEST_F(InterpVsCpu, CastsBetweenEveryPairOfDtypes) {
  std::vector<DType> all = kInts;
  all.insert(all.end(), kFloats.begin(), kFloats.end());
  all.push_back(dt::bool_);
  // A negative float cast to an unsigned type is out of range: undefined in the C the CPU plugin renders, and its
  // answer changes with clang's choice of scalar or vector instruction. Those casts take |x| (in range) instead.
  for (DType from : all)
    for (DType to : all) {
      const bool undefined_when_negative = from.is_float() && to.name()[0] == 'u';
      check_same(std::string("cast ") + from.name() + " -> " + to.name(), [&](const std::string& dev) {
        const Tensor x = input(from, {3, 19}, 5, dev);
        return (undefined_when_negative ? x.abs() : x).cast(to);
      });
    }
}

TEST_F(InterpVsCpu, BitcastsKeepBits) {
  check_same("float32 -> int32 bitcast",
             [](const std::string& dev) { return input(dt::float32, {64}, 6, dev).bitcast(dt::int32); });
  check_same("uint16 -> float16 bitcast",
             [](const std::string& dev) { return input(dt::uint16, {64}, 7, dev).bitcast(dt::float16); });
}

// ---- reductions, matmul, movement, softmax
// -----------------------------------------------------------------------------

TEST_F(InterpVsCpu, Reductions) {
  for (DType d : {dt::int32, dt::int64, dt::uint8, dt::float32, dt::float64, dt::float16}) {
    const auto x = [&](const std::string& dev) { return input(d, {6, 10, 13}, 8, dev); };
    const std::string n = d.name();
    check_same(n + " sum all", [&](const std::string& dev) { return x(dev).sum(); });
    check_same(n + " sum axis 1", [&](const std::string& dev) { return x(dev).sum({1}); });
    check_same(n + " max axis 2", [&](const std::string& dev) { return x(dev).max({2}); });
    check_same(n + " min axes 0,2", [&](const std::string& dev) { return x(dev).min({0, 2}); });
    check_same(n + " argmax axis 1", [&](const std::string& dev) { return x(dev).argmax(1); });
  }
  check_same("float32 mean", [](const std::string& dev) { return input(dt::float32, {9, 31}, 9, dev).mean({1}); });
}

TEST_F(InterpVsCpu, Matmul) {
  for (DType d : {dt::float32, dt::int32, dt::float64}) {
    check_same(std::string(d.name()) + " 17x33 @ 33x9",
               [&](const std::string& dev) { return input(d, {17, 33}, 10, dev).matmul(input(d, {33, 9}, 11, dev)); });
  }
  check_same("batched float32 3x4x16 @ 16x32", [](const std::string& dev) {
    return input(dt::float32, {3, 4, 16}, 12, dev).matmul(input(dt::float32, {16, 32}, 13, dev));
  });
}

TEST_F(InterpVsCpu, MovementViews) {
  const auto x = [](const std::string& dev) { return input(dt::int16, {4, 6, 5}, 14, dev); };
  check_same("permute", [&](const std::string& dev) { return x(dev).permute({2, 0, 1}).contiguous(); });
  check_same("pad (gated loads)", [&](const std::string& dev) { return x(dev).pad({{1, 2}, {0, 3}, {2, 0}}); });
  check_same("shrink flip", [&](const std::string& dev) { return x(dev).shrink({{1, 3}, {0, 6}, {1, 4}}).flip({1}); });
  check_same("expand",
             [&](const std::string& dev) { return x(dev).reshape({4, 1, 30}).expand({4, 3, 30}).contiguous(); });
  check_same("cat", [&](const std::string& dev) { return Tensor::cat({x(dev), x(dev) * 2}, 1); });
  check_same("gather", [&](const std::string& dev) {
    const std::vector<int32_t> idx = {0, 3, 3, 1, 0, 2};
    return x(dev).reshape({4, 30}).gather(0, Tensor::from_vector(idx, {2, 3}, dt::int32, dev));
  });
}

TEST_F(InterpVsCpu, Softmax) {
  check_same("softmax float32", [](const std::string& dev) { return input(dt::float32, {8, 37}, 15, dev).softmax(); });
  check_same("log_softmax float32",
             [](const std::string& dev) { return input(dt::float32, {8, 37}, 16, dev).log_softmax(0); });
  check_same("softmax float16", [](const std::string& dev) { return input(dt::float16, {4, 20}, 17, dev).softmax(); });
}

// ---- copies between devices
// ------------------------------------------------------------------------------------------

TEST_F(InterpVsCpu, CopiesBetweenCpuAndInterpRoundTrip) {
  for (DType d : {dt::float32, dt::int64, dt::uint8, dt::bfloat16, dt::bool_}) {
    const std::vector<uint8_t> host = random_bytes(d, {5, 23}, 18);
    Tensor cpu = Tensor::from_bytes(host.data(), host.size(), {5, 23}, d, "CPU");
    Tensor there = cpu.to("INTERP");
    EXPECT_EQ(there.device(), "INTERP");
    EXPECT_EQ(bytes_of(there), host) << d.name() << " CPU -> INTERP";
    Tensor back = there.flip({1}).contiguous().to("CPU");  // a kernel on INTERP, then the copy back
    EXPECT_EQ(back.device(), "CPU");
    EXPECT_EQ(bytes_of(back), bytes_of(cpu.flip({1}).contiguous())) << d.name() << " INTERP -> CPU";
  }
}

}  // namespace
