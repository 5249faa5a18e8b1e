// Unit tests of the CPU plugin through its C ABI: loads the built plugin with dlopen (as the core does), builds
// KIR by hand, and compares what the kernels compute with plain C++ loops and hand-computed values.
//
// CMake registration (tests/unit/plugin/CMakeLists.txt):
//   target_compile_definitions(cpu_plugin_test PRIVATE TG_CPU_PLUGIN_PATH="$<TARGET_FILE:tg_plugin_cpu>")
// The environment variable TG_CPU_PLUGIN_PATH, when set, overrides the compiled-in path. TG_TEST_PRINT_SOURCE=1
// prints every rendered kernel.
#include "plugin_fixture.hpp"
#include "test_seed.hpp"

#include <tg/plugin_abi.h>
#include <tg/sdk/shared_object.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

const char* tg::test::plugin_path() {
  const char* env = std::getenv("TG_CPU_PLUGIN_PATH");
  return env != nullptr && *env != '\0' ? env : TG_CPU_PLUGIN_PATH;
}

namespace {

using tg::test::api;
using tg::test::entry_point;
using tg::test::Kir;
using tg::test::pack;
using tg::test::Status;
using tg::test::take;

class CpuPlugin : public tg::test::PluginTest {};

bool sdk_is_float(uint32_t dtype) { return dtype >= TG_DTYPE_FLOAT16 && dtype <= TG_DTYPE_FLOAT64; }

uint32_t random_seed() { return tgtest::test_seed("cpu_plugin_test"); }

// ---- (a) elementwise, split across cores --------------------------------------------------------------------------

TEST_F(CpuPlugin, MulAddSplitsWorkItemsAcrossThreads) {
  constexpr int n = 1000;
  std::mt19937 rng(random_seed());
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> a(n), b(n), c(n), expected(n);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(rng), b[i] = dist(rng), c[i] = dist(rng);
    volatile float product = a[i] * b[i];  // two roundings, like the kernel (no fused multiply-add)
    expected[i] = product + c[i];
  }
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), pa = k.buffer(TG_DTYPE_FLOAT32), pb = k.buffer(TG_DTYPE_FLOAT32),
            pc = k.buffer(TG_DTYPE_FLOAT32);
  const int g = k.global_id(n);
  const int prod =
      k.op(TG_KIR_MUL, TG_DTYPE_FLOAT32, {k.load(TG_DTYPE_FLOAT32, pa, g), k.load(TG_DTYPE_FLOAT32, pb, g)});
  k.store(out, g, k.op(TG_KIR_ADD, TG_DTYPE_FLOAT32, {prod, k.load(TG_DTYPE_FLOAT32, pc, g)}));
  tg_program program = build(k, "E_1000");
  const tg_buffer_desc bo = buffer(std::vector<float>(n, -1.0f)), ba = buffer(a), bb = buffer(b), bc = buffer(c);
  launch(program, pack(k, {bo.addr, ba.addr, bb.addr, bc.addr}), n);
  const std::vector<float> got = read<float>(bo);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(got[i], expected[i]) << "i=" << i << " a=" << a[i] << " b=" << b[i] << " c=" << c[i];
}

// ---- (b) typed scalar arguments: int8, int64, int32 at their natural alignment -----------------------------------

TEST_F(CpuPlugin, ScalarArgumentsKeepTheirTypes) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT64, true);
  const int a = k.var(TG_DTYPE_INT8, "a"), b = k.var(TG_DTYPE_INT64, "b"), c = k.var(TG_DTYPE_INT32, "c");
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(0), k.op(TG_KIR_CAST, TG_DTYPE_INT64, {a})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(1), b});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(2), k.op(TG_KIR_CAST, TG_DTYPE_INT64, {c})});
  const int64_t big = (int64_t{1} << 35) + 7;
  tg_program program = build(k, "typed_args");
  const tg_buffer_desc bo = buffer(std::vector<int64_t>(3, 0));
  const std::vector<unsigned char> args =
      pack(k, {bo.addr, static_cast<uint64_t>(-5), static_cast<uint64_t>(big), 123456});
  ASSERT_EQ(args.size(), 28u);  // data0 @0, a @8, b @16, c @24
  launch(program, args, 1);
  EXPECT_EQ(read<int64_t>(bo), (std::vector<int64_t>{-5, big, 123456}));
}

// ---- (c) a reduction: RANGE loop over a DEFINE_REG accumulator -----------------------------------------------------

TEST_F(CpuPlugin, RangeReductionIntoRegisterAccumulator) {
  constexpr int n = 1000;
  std::mt19937 rng(random_seed());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> in(n);
  float expected = 0.0f;
  for (float& x : in) expected += (x = dist(rng));  // the same order as the loop: float addition is not associative
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), src = k.buffer(TG_DTYPE_FLOAT32);
  const int acc = k.op(TG_KIR_DEFINE_REG, TG_DTYPE_FLOAT32, {}, 1, 1), zero = k.i32(0);
  k.store(acc, zero, k.constant_f(TG_DTYPE_FLOAT32, 0.0));
  const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(n)}, 1, 0);
  const int sum =
      k.op(TG_KIR_ADD, TG_DTYPE_FLOAT32, {k.load(TG_DTYPE_FLOAT32, acc, zero), k.load(TG_DTYPE_FLOAT32, src, r)});
  k.store(acc, zero, sum);
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  k.store(out, zero, k.load(TG_DTYPE_FLOAT32, acc, zero));
  tg_program program = build(k, "r_1000");
  const tg_buffer_desc bo = buffer(std::vector<float>{0.0f}), bi = buffer(in);
  launch(program, pack(k, {bo.addr, bi.addr}), 1);
  EXPECT_EQ(read<float>(bo)[0], expected);
}

// Row sums of a 6 x 50 matrix, out[i] = sum over j of in[i * 50 + j]: the inner load's index adds a part its loop
// does not change (i * 50), which the renderer hoists as a pointer, (in + i * 50)[j], and the sums are right.
TEST_F(CpuPlugin, LoopInvariantIndexPartIsHoistedAsAPointer) {
  constexpr int rows = 6, cols = 50;
  std::vector<float> in(rows * cols), want(rows, 0.0f);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i % 7) - 3.0f, want[i / cols] += in[i];
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), src = k.buffer(TG_DTYPE_FLOAT32);
  const int acc = k.op(TG_KIR_DEFINE_REG, TG_DTYPE_FLOAT32, {}, 1, 1), zero = k.i32(0);
  const int i = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(rows)}, 1, 0);
  k.store(acc, zero, k.constant_f(TG_DTYPE_FLOAT32, 0.0));
  const int base = k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {i, k.i32(cols)});
  const int j = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(cols)}, 1, 1);
  const int v = k.load(TG_DTYPE_FLOAT32, src, k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {j, base}));
  k.store(acc, zero, k.alu(TG_KIR_ADD, TG_DTYPE_FLOAT32, {k.load(TG_DTYPE_FLOAT32, acc, zero), v}));
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {j});
  k.store(out, i, k.load(TG_DTYPE_FLOAT32, acc, zero));
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {i});
  const std::string source = render(k, "row_sums");
  EXPECT_NE(source.find("(data1+alu"), std::string::npos) << source;
  tg_program program = build(k, "row_sums");
  const tg_buffer_desc bo = buffer(std::vector<float>(rows, -1.0f)), bi = buffer(in);
  launch(program, pack(k, {bo.addr, bi.addr}), 1);
  EXPECT_EQ(read<float>(bo), want);
}

// ---- (d) vectors: 4-wide load / add / store, and lane shuffles with GEP + VECTORIZE -------------------------------

TEST_F(CpuPlugin, VectorLoadAddStore) {
  constexpr int n = 64;
  std::vector<float> a(n + 1), b(n + 1), expected(n);
  for (int i = 0; i <= n; ++i) a[i] = 0.5f * i, b[i] = 1000.0f - i;
  for (int i = 0; i < n; ++i) expected[i] = a[i + 1] + b[i + 1];
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), pa = k.buffer(TG_DTYPE_FLOAT32), pb = k.buffer(TG_DTYPE_FLOAT32);
  const int g = k.global_id(n / 4);
  const int idx = k.op(TG_KIR_MUL, TG_DTYPE_INT32, {g, k.i32(4)});
  // Loads start one element in: a vector access at any element index must work (no 16-byte alignment).
  const int in_idx = k.op(TG_KIR_ADD, TG_DTYPE_INT32, {idx, k.i32(1)});
  const int sum = k.op(TG_KIR_ADD, TG_DTYPE_FLOAT32,
                       {k.load(TG_DTYPE_FLOAT32, pa, in_idx, 4), k.load(TG_DTYPE_FLOAT32, pb, in_idx, 4)}, 4);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, idx, sum});
  tg_program program = build(k, "E_16_4");
  const tg_buffer_desc bo = buffer(std::vector<float>(n, 0.0f)), ba = buffer(a), bb = buffer(b);
  launch(program, pack(k, {bo.addr, ba.addr, bb.addr}), n / 4);
  EXPECT_EQ(read<float>(bo), expected);
}

TEST_F(CpuPlugin, GepAndVectorizeReverseLanes) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), in = k.buffer(TG_DTYPE_INT32);
  const int v = k.load(TG_DTYPE_INT32, in, k.i32(0), 4);
  std::vector<int> lanes;
  for (int lane = 3; lane >= 0; --lane) lanes.push_back(k.op(TG_KIR_GEP, TG_DTYPE_INT32, {v}, 1, lane));
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0), k.op(TG_KIR_VECTORIZE, TG_DTYPE_INT32, lanes, 4)});
  tg_program program = build(k, "reverse4");
  const tg_buffer_desc bo = buffer(std::vector<int32_t>(4, 0)), bi = buffer(std::vector<int32_t>{1, 2, 3, 4});
  launch(program, pack(k, {bo.addr, bi.addr}), 1);
  EXPECT_EQ(read<int32_t>(bo), (std::vector<int32_t>{4, 3, 2, 1}));
}

// ---- (e) exact op semantics: NaN-propagating MAX, int wrap-around, constants ---------------------------------------

TEST_F(CpuPlugin, FloatMaxPropagatesNanScalarAndVector) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a{nan, 1.0f, nan, 2.0f, -inf, 3.0f, -1.0f, nan};
  const std::vector<float> b{1.0f, nan, nan, 1.0f, 3.0f, -inf, -2.0f, 0.0f};
  for (int vcount : {1, 4}) {
    Kir k;
    const int out = k.buffer(TG_DTYPE_FLOAT32, true), pa = k.buffer(TG_DTYPE_FLOAT32), pb = k.buffer(TG_DTYPE_FLOAT32);
    const int idx = k.op(TG_KIR_MUL, TG_DTYPE_INT32, {k.global_id(8 / vcount), k.i32(vcount)});
    const int m = k.op(TG_KIR_MAX, TG_DTYPE_FLOAT32,
                       {k.load(TG_DTYPE_FLOAT32, pa, idx, vcount), k.load(TG_DTYPE_FLOAT32, pb, idx, vcount)}, vcount);
    k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, idx, m});
    tg_program program = build(k, vcount == 1 ? "max_scalar" : "max_vec4");
    const tg_buffer_desc bo = buffer(std::vector<float>(8, 0.0f)), ba = buffer(a), bb = buffer(b);
    launch(program, pack(k, {bo.addr, ba.addr, bb.addr}), 8 / vcount);
    const std::vector<float> got = read<float>(bo);
    for (int i = 0; i < 8; ++i) {
      if (std::isnan(a[i]) || std::isnan(b[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "vcount " << vcount << " i=" << i;
      } else {
        EXPECT_EQ(got[i], std::max(a[i], b[i])) << "vcount " << vcount << " i=" << i;
      }
    }
  }
}

TEST_F(CpuPlugin, Int8AddWrapsAround) {
  const std::vector<int8_t> a{100, -128, 127, -100, 5}, b{100, -1, 1, -100, -7};
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT8, true), pa = k.buffer(TG_DTYPE_INT8), pb = k.buffer(TG_DTYPE_INT8);
  const int g = k.global_id(5);
  k.op(TG_KIR_STORE, TG_DTYPE_INT8,
       {out, g, k.op(TG_KIR_ADD, TG_DTYPE_INT8, {k.load(TG_DTYPE_INT8, pa, g), k.load(TG_DTYPE_INT8, pb, g)})});
  tg_program program = build(k, "add_i8");
  const tg_buffer_desc bo = buffer(std::vector<int8_t>(5, 0)), ba = buffer(a), bb = buffer(b);
  launch(program, pack(k, {bo.addr, ba.addr, bb.addr}), 5);
  EXPECT_EQ(read<int8_t>(bo), (std::vector<int8_t>{-56, 127, -128, 56, -2}));
}

TEST_F(CpuPlugin, ConstantsRenderExactly) {
  Kir k;
  const int i64 = k.buffer(TG_DTYPE_INT64, true), f32 = k.buffer(TG_DTYPE_FLOAT32, true),
            f64 = k.buffer(TG_DTYPE_FLOAT64, true), i32 = k.buffer(TG_DTYPE_INT32, true),
            u64 = k.buffer(TG_DTYPE_UINT64, true);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  auto put = [&](int buf, tg_dtype dtype, int index, int value) {
    k.op(TG_KIR_STORE, dtype, {buf, k.i32(index), value});
  };
  put(i64, TG_DTYPE_INT64, 0, k.constant(TG_DTYPE_INT64, std::numeric_limits<int64_t>::min()));
  put(i64, TG_DTYPE_INT64, 1, k.constant(TG_DTYPE_INT64, std::numeric_limits<int64_t>::max()));
  put(f32, TG_DTYPE_FLOAT32, 0, k.constant_f(TG_DTYPE_FLOAT32, inf));
  put(f32, TG_DTYPE_FLOAT32, 1, k.constant_f(TG_DTYPE_FLOAT32, -inf));
  put(f32, TG_DTYPE_FLOAT32, 2, k.constant_f(TG_DTYPE_FLOAT32, nan));
  put(f32, TG_DTYPE_FLOAT32, 3, k.constant_f(TG_DTYPE_FLOAT32, 0.1));
  put(f64, TG_DTYPE_FLOAT64, 0, k.constant_f(TG_DTYPE_FLOAT64, 0.1));
  put(f64, TG_DTYPE_FLOAT64, 1, k.constant_f(TG_DTYPE_FLOAT64, -inf));
  put(f64, TG_DTYPE_FLOAT64, 2, k.constant_f(TG_DTYPE_FLOAT64, 4.9406564584124654e-324));
  put(f64, TG_DTYPE_FLOAT64, 3, k.constant_f(TG_DTYPE_FLOAT64, -0.0));
  put(i32, TG_DTYPE_INT32, 0, k.constant(TG_DTYPE_INT32, std::numeric_limits<int32_t>::min()));
  put(u64, TG_DTYPE_UINT64, 0, k.constant(TG_DTYPE_UINT64, -1));
  tg_program program = build(k, "constants");
  const tg_buffer_desc b64 = buffer(std::vector<int64_t>(2)), b32 = buffer(std::vector<float>(4)),
                       bd = buffer(std::vector<double>(4)), bi = buffer(std::vector<int32_t>(1)),
                       bu = buffer(std::vector<uint64_t>(1));
  launch(program, pack(k, {b64.addr, b32.addr, bd.addr, bi.addr, bu.addr}), 1);
  EXPECT_EQ(read<int64_t>(b64), (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  const std::vector<float> f = read<float>(b32);
  EXPECT_EQ(f[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], 0.1f);
  const std::vector<double> d = read<double>(bd);
  EXPECT_EQ(d[0], 0.1);
  EXPECT_EQ(d[1], -inf);
  EXPECT_EQ(d[2], 4.9406564584124654e-324);
  EXPECT_TRUE(d[3] == 0.0 && std::signbit(d[3]));
  EXPECT_EQ(read<int32_t>(bi)[0], INT32_MIN);
  EXPECT_EQ(read<uint64_t>(bu)[0], UINT64_MAX);
}

// Random int32 operands through every binary int op, against C++ with the same wrap and truncation rules.
TEST_F(CpuPlugin, Int32OpsMatchCxx) {
  const std::vector<tg_kir_op> ops{TG_KIR_ADD, TG_KIR_SUB, TG_KIR_MUL, TG_KIR_IDIV, TG_KIR_MOD, TG_KIR_MAX,
                                   TG_KIR_AND, TG_KIR_OR,  TG_KIR_XOR, TG_KIR_SHL,  TG_KIR_SHR};
  auto reference = [](tg_kir_op op, int32_t x, int32_t y) -> int32_t {
    const uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
    switch (op) {
      case TG_KIR_ADD: return static_cast<int32_t>(ux + uy);
      case TG_KIR_SUB: return static_cast<int32_t>(ux - uy);
      case TG_KIR_MUL: return static_cast<int32_t>(ux * uy);
      case TG_KIR_IDIV: return y == -1 ? static_cast<int32_t>(0u - ux) : x / y;
      case TG_KIR_MOD: return y == -1 ? 0 : x % y;
      case TG_KIR_MAX: return std::max(x, y);
      case TG_KIR_AND: return x & y;
      case TG_KIR_OR: return x | y;
      case TG_KIR_XOR: return x ^ y;
      case TG_KIR_SHL: return static_cast<int32_t>(ux << (y & 31));
      case TG_KIR_SHR: return x >> (y & 31);  // arithmetic (C++20)
      default: return 0;
    }
  };
  constexpr int n = 256;
  std::mt19937 rng(random_seed());
  std::vector<int32_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int32_t>(rng());
    b[i] = i % 4 == 0 ? static_cast<int32_t>(rng() % 33) : static_cast<int32_t>(rng());
    if (b[i] == 0) b[i] = 3;  // the core guards division by zero
  }
  a[0] = INT32_MIN, b[0] = -1;  // INT_MIN / -1 wraps (and must not trap)
  for (tg_kir_op op : ops) {
    Kir k;
    const int out = k.buffer(TG_DTYPE_INT32, true), pa = k.buffer(TG_DTYPE_INT32), pb = k.buffer(TG_DTYPE_INT32);
    const int g = k.global_id(n);
    k.op(TG_KIR_STORE, TG_DTYPE_INT32,
         {out, g, k.op(op, TG_DTYPE_INT32, {k.load(TG_DTYPE_INT32, pa, g), k.load(TG_DTYPE_INT32, pb, g)})});
    tg_program program = build(k, "int_op");  // the same name every time: each program is its own shared object
    const tg_buffer_desc bo = buffer(std::vector<int32_t>(n)), ba = buffer(a), bb = buffer(b);
    launch(program, pack(k, {bo.addr, ba.addr, bb.addr}), n);
    const std::vector<int32_t> got = read<int32_t>(bo);
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(got[i], reference(op, a[i], b[i])) << "op " << op << " a=" << a[i] << " b=" << b[i];
  }
}

// The value of IEEE half-precision bits (reference for the plugin's conversion).
float half_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0x1f) return man ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
  return sign *
         (exp == 0 ? std::ldexp(static_cast<float>(man), -24) : std::ldexp(static_cast<float>(1024 + man), exp - 25));
}

// float16/bfloat16 are storage types: casts round to nearest even, keep inf/NaN and subnormals.
TEST_F(CpuPlugin, HalfAndBfloat16CastsRoundToNearestEven) {
  const std::vector<float> in{1.0f,        65504.0f,   65520.0f, 0x1p-24f,
                              0x1p-25f,    0x1.8p-25f, -2.5f,    std::numeric_limits<float>::quiet_NaN(),
                              1.00390625f, 1.01171875f};
  const std::vector<uint16_t> half_bits{0x3C00, 0x7BFF, 0x7C00, 0x0001, 0x0000, 0x0001, 0xC100, 0x7E00, 0x3C04, 0x3C0C};
  const std::vector<uint16_t> bf16_bits{0x3F80, 0x4780, 0x4780, 0x3380, 0x3300, 0x3340, 0xC020, 0x7FC0, 0x3F80, 0x3F82};
  for (tg_dtype small : {TG_DTYPE_FLOAT16, TG_DTYPE_BFLOAT16}) {
    Kir k;
    const int out = k.buffer(small, true), back = k.buffer(TG_DTYPE_FLOAT32, true), src = k.buffer(TG_DTYPE_FLOAT32);
    const int g = k.global_id(static_cast<int>(in.size()));
    const int h = k.op(TG_KIR_CAST, small, {k.load(TG_DTYPE_FLOAT32, src, g)});
    k.op(TG_KIR_STORE, small, {out, g, h});
    k.store(back, g, k.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {h}));
    tg_program program = build(k, "to_small_float");
    const tg_buffer_desc bo = buffer(std::vector<uint16_t>(in.size())), bb = buffer(std::vector<float>(in.size())),
                         bi = buffer(in);
    launch(program, pack(k, {bo.addr, bb.addr, bi.addr}), static_cast<uint32_t>(in.size()));
    const std::vector<uint16_t>& expected = small == TG_DTYPE_FLOAT16 ? half_bits : bf16_bits;
    const std::vector<uint16_t> bits = read<uint16_t>(bo);
    const std::vector<float> widened = read<float>(bb);
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(bits[i], expected[i]) << (small == TG_DTYPE_FLOAT16 ? "half" : "bf16") << " of " << in[i];
      // Widening is exact: the float of the stored bits.
      const float exact =
          small == TG_DTYPE_BFLOAT16 ? std::bit_cast<float>(uint32_t{bits[i]} << 16) : half_to_float(bits[i]);
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(widened[i]));
      } else {
        EXPECT_EQ(widened[i], exact);
      }
    }
    if (small == TG_DTYPE_FLOAT16) {
      EXPECT_EQ((std::vector<float>(widened.begin(), widened.begin() + 4)),
                (std::vector<float>{1.0f, 65504.0f, std::numeric_limits<float>::infinity(), 0x1p-24f}));
    }
  }
}

// Gates: a gated LOAD reads 0 without touching memory, a gated STORE and an IF skip their stores.
TEST_F(CpuPlugin, GatedLoadStoreAndIf) {
  constexpr int n = 8;
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), flags = k.buffer(TG_DTYPE_INT32, true), in = k.buffer(TG_DTYPE_INT32);
  const int g = k.global_id(n);
  const int low = k.op(TG_KIR_CMPLT, TG_DTYPE_BOOL, {g, k.i32(5)});
  const int v = k.op(TG_KIR_LOAD, TG_DTYPE_INT32, {in, g, low});  // in has only 5 elements
  const int odd = k.op(TG_KIR_CMPNE, TG_DTYPE_BOOL, {k.op(TG_KIR_AND, TG_DTYPE_INT32, {g, k.i32(1)}), k.i32(0)});
  const int even = k.op(TG_KIR_XOR, TG_DTYPE_BOOL, {odd, k.constant(TG_DTYPE_BOOL, 1)});
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, g, v, even});
  const int branch = k.op(TG_KIR_IF, TG_DTYPE_BOOL, {k.op(TG_KIR_CMPEQ, TG_DTYPE_BOOL, {g, k.i32(3)})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT32,
       {flags, k.i32(0), k.op(TG_KIR_WHERE, TG_DTYPE_INT32, {odd, k.i32(42), k.i32(-1)})});
  k.op(TG_KIR_ENDIF, TG_DTYPE_BOOL, {branch});
  tg_program program = build(k, "gates");
  const tg_buffer_desc bo = buffer(std::vector<int32_t>(n, 7)), bf = buffer(std::vector<int32_t>{0}),
                       bi = buffer(std::vector<int32_t>{10, 11, 12, 13, 14});
  launch(program, pack(k, {bo.addr, bf.addr, bi.addr}), n);
  EXPECT_EQ(read<int32_t>(bo), (std::vector<int32_t>{10, 7, 12, 7, 14, 7, 0, 7}));
  EXPECT_EQ(read<int32_t>(bf)[0], 42);
}

// Every op the caps declare, for every dtype and lane count, renders to C that clang accepts and that runs:
// unary and binary ops on loaded operands, WHERE, MULACC, comparisons (scalar), and a CAST and a BITCAST to every
// other dtype and back.
TEST_F(CpuPlugin, EveryDeclaredOpCompilesAndRuns) {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_OK(api()->renderer_get_caps(renderer_, &caps));
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    for (int vcount : {1, 4}) {
      if (!(caps.vector_widths[d] & (1u << vcount))) continue;
      const auto dtype = static_cast<tg_dtype>(d);
      Kir k;
      const int out = k.buffer(dtype, true), outb = k.buffer(TG_DTYPE_BOOL, true), pa = k.buffer(dtype),
                pb = k.buffer(dtype);
      const int a = k.load(dtype, pa, k.i32(0), vcount), b = k.load(dtype, pb, k.i32(0), vcount);
      const int cond = k.op(TG_KIR_CMPNE, TG_DTYPE_BOOL, {k.i32(1), k.i32(2)});
      int slot = 0, add_slot = -1;
      auto put = [&](int value) { k.op(TG_KIR_STORE, dtype, {out, k.i32(vcount * slot++), value}); };
      for (uint32_t op = TG_KIR_NEG; op < TG_KIR_OP_COUNT; ++op) {
        if (!(caps.ops[d] & (uint64_t{1} << op)) || op == TG_KIR_TILE_MMA) continue;  // a statement: tile_mma_test
        const auto o = static_cast<tg_kir_op>(op);
        if (o == TG_KIR_CAST || o == TG_KIR_BITCAST) {
          for (uint32_t to = 0; to < TG_DTYPE_COUNT; ++to) {
            const bool same_size = tg_dtype_size(to) == tg_dtype_size(d);
            if (to == d || (vcount > 1 && (to == TG_DTYPE_BOOL)) ||
                (o == TG_KIR_BITCAST && (!same_size || to == TG_DTYPE_BOOL || d == TG_DTYPE_BOOL)))
              continue;
            put(k.op(o, dtype, {k.op(o, static_cast<tg_dtype>(to), {a}, vcount)}, vcount));
          }
        } else if (o == TG_KIR_CMPLT || o == TG_KIR_CMPNE || o == TG_KIR_CMPEQ) {
          if (vcount == 1) k.op(TG_KIR_STORE, TG_DTYPE_BOOL, {outb, k.i32(0), k.op(o, TG_DTYPE_BOOL, {a, b})});
        } else if (o == TG_KIR_WHERE) {
          put(k.op(o, dtype, {cond, a, b}, vcount));
        } else if (o == TG_KIR_MULACC || o == TG_KIR_FMA || o == TG_KIR_DOT4) {
          put(k.op(o, dtype, {a, b, a}, vcount));
        } else if (o == TG_KIR_LUT16) {
          put(k.op(o, dtype, {a, b, a, b, a}, vcount));
        } else if (o >= TG_KIR_ADD) {
          if (o == TG_KIR_ADD) add_slot = slot;
          put(k.op(o, dtype, {a, b}, vcount));
        } else {
          put(k.op(o, dtype, {a}, vcount));
        }
      }
      const std::string name = std::string("all_ops_") + std::to_string(d) + "_" + std::to_string(vcount);
      tg_program program = build(k, name.c_str());
      ASSERT_NE(program, nullptr) << "dtype " << d << " x" << vcount;
      std::vector<uint64_t> ones(vcount, 0x0101010101010101ull);  // a valid, nonzero value of every dtype
      const tg_buffer_desc bo = buffer(std::vector<uint64_t>(slot * vcount + 1)), bb = buffer(std::vector<uint64_t>(1)),
                           ba = buffer(ones), bbb = buffer(ones);
      launch(program, pack(k, {bo.addr, bb.addr, ba.addr, bbb.addr}), 1);
      // ADD is declared for every numeric dtype: check its slot against 1+1 in that dtype (bytes 0x01 repeated).
      if (add_slot < 0 || sdk_is_float(d)) continue;
      const std::vector<uint8_t> bytes = read<uint8_t>(bo);
      const uint32_t size = tg_dtype_size(d);
      for (uint32_t byte = 0; byte < size; ++byte)
        ASSERT_EQ(bytes[add_slot * vcount * size + byte], 2) << "dtype " << d;
    }
  }
}

// ---- (f)-(i) errors, ABI negotiation, the queue
// ----------------------------------------------------------------------

TEST_F(CpuPlugin, CompileErrorReturnsDiagnostics) {
  void* blob = nullptr;
  size_t size = 0;
  const Status s =
      take(api()->compiler_compile(compiler_, "void broken(void) { return 1 +; }", "broken", &blob, &size));
  EXPECT_EQ(s.code, TG_ERR_COMPILE);
  EXPECT_NE(s.message.find("error"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("broken"), std::string::npos) << s.message;
  EXPECT_EQ(blob, nullptr);
}

TEST_F(CpuPlugin, MalformedKirIsRejectedNotCrashed) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, k.i32(0), 99});  // operand 99 does not exist
  const tg_kir_kernel kernel = k.kernel("bad");
  const char* source = nullptr;
  const Status s = take(api()->renderer_render(renderer_, &kernel, &source));
  EXPECT_EQ(s.code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("operand 2"), std::string::npos) << s.message;
}

TEST_F(CpuPlugin, AllocatorChecksBounds) {
  tg_buffer_desc b{}, empty{};
  ASSERT_OK(api()->allocator_alloc(device_, 64, &b));
  buffers_.push_back(b);
  EXPECT_EQ(b.addr % 64, 0u);
  ASSERT_OK(api()->allocator_alloc(device_, 0, &empty));
  buffers_.push_back(empty);
  const uint64_t value = 42;
  ASSERT_OK(api()->allocator_copy_in(device_, &b, 56, &value, 8));
  const Status past = take(api()->allocator_copy_in(device_, &b, 60, &value, 8));
  EXPECT_EQ(past.code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(past.message.find("offset 60 + size 8"), std::string::npos) << past.message;
  EXPECT_NE(past.message.find("64-byte"), std::string::npos) << past.message;
  uint64_t out = 0;
  EXPECT_EQ(take(api()->allocator_copy_out(device_, &out, &b, UINT64_MAX, 8)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->allocator_copy_out(device_, &out, &empty, 0, 1)).code, TG_ERR_INVALID_ARGUMENT);
  ASSERT_OK(api()->allocator_copy_out(device_, &out, &b, 56, 8));
  EXPECT_EQ(out, 42u);
  tg_buffer_desc huge{};
  EXPECT_EQ(take(api()->allocator_alloc(device_, uint64_t{1} << 62, &huge)).code, TG_ERR_OUT_OF_MEMORY);
}

// Large buffers freed are kept for reuse: a request up to an eighth smaller takes the freed mapping (no fresh pages
// to fault in), a much smaller one does not; a reused buffer is whole and freed at its mapping's full length.
TEST_F(CpuPlugin, FreedLargeBuffersAreReusedBySize) {
  auto fill = [&](const tg_buffer_desc& b, uint8_t v) {
    std::vector<uint8_t> bytes(b.size, v);
    ASSERT_OK(api()->allocator_copy_in(device_, &b, 0, bytes.data(), bytes.size()));
    std::vector<uint8_t> back(b.size);
    ASSERT_OK(api()->allocator_copy_out(device_, back.data(), &b, 0, back.size()));
    EXPECT_EQ(back, bytes);
  };
  tg_buffer_desc a{}, b{}, c{}, d{};
  ASSERT_OK(api()->allocator_alloc(device_, 8 << 20, &a));
  fill(a, 1);
  const uint64_t first = a.addr;
  api()->allocator_free(device_, &a);
  ASSERT_OK(api()->allocator_alloc(device_, (8 << 20) - (512 << 10), &b));  // 7.5 MB
  EXPECT_EQ(b.addr, first);
  fill(b, 2);
  ASSERT_OK(api()->allocator_alloc(device_, 8 << 20, &c));  // while b holds the freed one: a mapping of its own
  EXPECT_NE(c.addr, b.addr);
  fill(c, 3);
  api()->allocator_free(device_, &b);
  ASSERT_OK(api()->allocator_alloc(device_, 1 << 20, &d));  // far smaller than the freed 8 MB: not that one
  EXPECT_NE(d.addr, first);
  fill(d, 4);
  api()->allocator_free(device_, &c);
  api()->allocator_free(device_, &d);
}

TEST_F(CpuPlugin, WrongAbiMajorIsRefusedNamingBothVersions) {
  tg_status_t status = nullptr;
  EXPECT_EQ(entry_point()(TG_ABI_VERSION_MAJOR + 1, 3, &status), nullptr);
  const Status s = take(status);
  EXPECT_EQ(s.code, TG_ERR_ABI);
  EXPECT_NE(s.message.find("1.0"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("2.3"), std::string::npos) << s.message;
  EXPECT_EQ(entry_point()(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR + 5, &status), api());  // newer minor: fine
  EXPECT_EQ(status, nullptr);
}

TEST_F(CpuPlugin, QueueSignalsWaitsAndTimestamps) {
  tg_hwqueue q = nullptr;
  ASSERT_OK(api()->hwqueue_create(device_, &q));
  uint64_t t0 = 0, t1 = 0, ns0 = 0, ns1 = 0;
  const tg_buffer_desc src = buffer(std::vector<int32_t>{7, 8, 9, 10}), dst = buffer(std::vector<int32_t>(4));
  ASSERT_OK(api()->hwqueue_timestamp(q, &t0));
  ASSERT_OK(api()->hwqueue_copy(q, &dst, 4, &src, 0, 12));
  ASSERT_OK(api()->hwqueue_signal(q, 5));
  ASSERT_OK(api()->hwqueue_timestamp(q, &t1));
  EXPECT_EQ(take(api()->hwqueue_copy(q, &dst, 8, &src, 0, 12)).code, TG_ERR_INVALID_ARGUMENT);  // past dst's end
  EXPECT_EQ(take(api()->hwqueue_signal(q, 4)).code, TG_ERR_INVALID_ARGUMENT);                   // signals only grow
  EXPECT_EQ(take(api()->hwqueue_read_timestamp(q, t1, &ns1)).code, TG_ERR_INVALID_ARGUMENT);    // not run yet
  const Status early = take(api()->hwqueue_wait(q, 5, 0));  // recorded, not submitted: an error, not a hang
  EXPECT_EQ(early.code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(early.message.find("not submitted"), std::string::npos) << early.message;
  ASSERT_OK(api()->hwqueue_submit(q));
  ASSERT_OK(api()->hwqueue_wait(q, 5, 0));
  ASSERT_OK(api()->hwqueue_wait(q, 3, 1000));
  EXPECT_EQ(take(api()->hwqueue_wait(q, 6, 1000)).code, TG_ERR_INVALID_ARGUMENT);  // nothing will set 6
  EXPECT_EQ(take(api()->hwqueue_signal(q, 4)).code, TG_ERR_INVALID_ARGUMENT);
  ASSERT_OK(api()->hwqueue_read_timestamp(q, t0, &ns0));
  ASSERT_OK(api()->hwqueue_read_timestamp(q, t1, &ns1));
  EXPECT_LE(ns0, ns1);
  EXPECT_EQ(take(api()->hwqueue_read_timestamp(q, 99, &ns1)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(read<int32_t>(dst), (std::vector<int32_t>{0, 7, 8, 9}));
  api()->hwqueue_destroy(q);
}

TEST_F(CpuPlugin, NullHandlesAreInvalidArguments) {
  EXPECT_EQ(take(api()->hwqueue_submit(nullptr)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->device_get_info(nullptr, nullptr)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->renderer_render(renderer_, nullptr, nullptr)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->program_create(device_, nullptr, 0, "k", nullptr, 0, nullptr)).code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->device_open(1, nullptr)).code, TG_ERR_INVALID_ARGUMENT);
  api()->program_destroy(nullptr);
  api()->allocator_free(device_, nullptr);
}

TEST_F(CpuPlugin, DeviceInfoAndCaps) {
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_OK(api()->device_get_info(device_, &info));
  EXPECT_STREQ(info.name, "CPU");
  EXPECT_EQ(info.is_host, 1u);
  EXPECT_GT(info.memory_bytes, 0u);
  EXPECT_NE(std::string(info.description).find("cores"), std::string::npos) << info.description;
  std::cout << "CPU: " << info.description << " arch " << info.arch << "\n";
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_OK(api()->renderer_get_caps(renderer_, &caps));
  EXPECT_EQ(caps.dtypes, (1u << TG_DTYPE_COUNT) - 1);
  EXPECT_EQ(caps.ops[TG_DTYPE_FLOAT16], (1ull << TG_KIR_CAST) | (1ull << TG_KIR_BITCAST));
  EXPECT_EQ(caps.vector_widths[TG_DTYPE_BOOL], 2u);
  EXPECT_EQ(caps.max_global_dims, 1u);
  EXPECT_EQ(caps.has_threads, 1u);
}

// The core compiles a schedule's kernels in parallel: compiles on several threads at once must all succeed.
TEST_F(CpuPlugin, CompilesConcurrently) {
  constexpr int threads = 4;
  std::vector<std::string> sources(threads);
  std::vector<Status> results(threads);
  for (int t = 0; t < threads; ++t)
    sources[t] = "void k" + std::to_string(t) +
                 "(float* p) { for (int i = 0; i < 64; ++i) p[i] = __builtin_sqrtf(p[i]) * " + std::to_string(t) +
                 ".0f; }";
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      void* blob = nullptr;
      size_t size = 0;
      results[t] =
          take(api()->compiler_compile(compiler_, sources[t].c_str(), ("k" + std::to_string(t)).c_str(), &blob, &size));
      if (blob != nullptr && size < 64) results[t] = {TG_ERR_INTERNAL, "object too small"};
      api()->blob_free(blob);
    });
  for (std::thread& t : pool) t.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(results[t].code, TG_OK) << results[t].message;
}

}  // namespace

// The SDK's private files keep their extension when a long kernel name is shortened (a C compiler decides what a
// file is by it: a cut-off "kernel.c" went to the linker as a script).
TEST(SdkPrivateFile, LongNamesKeepTheirExtension) {
  const std::string name(100, 'k');
  const std::string path = tg::sdk::write_private_file("x", 1, "tg_test", name + ".c", 0600);
  EXPECT_EQ(path.substr(path.size() - 2), ".c") << path;
  const std::string base = path.substr(path.rfind('/') + 1);
  EXPECT_LE(base.size(), 64u + 40u) << base;  // prefix, pid and counter, then at most 64 characters of the name
  EXPECT_EQ(std::count(base.begin(), base.end(), 'k'), 62) << base;
  EXPECT_EQ(::unlink(path.c_str()), 0) << path;
}
