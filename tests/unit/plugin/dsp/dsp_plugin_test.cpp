// Unit tests of the DSP plugin (Hexagon C, run under qemu-hexagon) through its C ABI: the device and caps, typed
// scalar arguments (int64, float16, int8), the runtime's library calls against the host's IEEE results (float64
// division and square roots, 64-bit integer division, every float16 conversion), aliasing views of one buffer, a
// 64 MiB buffer streamed both ways, and the one-line messages for a crashing kernel, a hung kernel (DSP_TIMEOUT_S)
// and a missing qemu (QEMU_HEXAGON).
//
// DSP_PLUGIN_TEST_PATH, when set, overrides the compiled-in plugin path; TG_TEST_PRINT_SOURCE=1 prints kernels.
#include "../plugin_fixture.hpp"

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

const char* tg::test::plugin_path() {
  const char* env = std::getenv("DSP_PLUGIN_TEST_PATH");
  return env != nullptr && *env != '\0' ? env : TG_DSP_PLUGIN_PATH;
}

namespace {

using tg::test::api;
using tg::test::Kir;
using tg::test::pack;
using tg::test::Status;
using tg::test::take;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Run only with QEMU_HEXAGON naming a missing file (a separate ctest entry, dsp_plugin_no_qemu).
TEST(DspPluginNoQemu, MissingQemuMeansNoDeviceAndOpenSaysWhy) {
  const char* qemu = std::getenv("QEMU_HEXAGON");
  if (qemu == nullptr || std::string(qemu).find("nonexistent") == std::string::npos)
    GTEST_SKIP() << "set QEMU_HEXAGON=/nonexistent/qemu-hexagon to run this";
  uint32_t count = 7;
  ASSERT_OK(api()->device_count(&count));
  EXPECT_EQ(count, 0u);
  tg_device device = nullptr;
  const Status s = take(api()->device_open(0, &device));
  EXPECT_EQ(s.code, TG_ERR_UNAVAILABLE);
  EXPECT_EQ(device, nullptr);
  EXPECT_TRUE(contains(s.message, std::string("QEMU_HEXAGON=") + qemu)) << s.message;
  EXPECT_EQ(s.message.find('\n'), std::string::npos) << s.message;
  std::cout << s.message << "\n";
}

class DspPlugin : public tg::test::PluginTest {
 protected:
  static void SetUpTestSuite() {
    if (std::getenv("QEMU_HEXAGON") != nullptr && contains(std::getenv("QEMU_HEXAGON"), "nonexistent"))
      GTEST_SKIP() << "no qemu in this run";
    uint32_t count = 0;
    if (take(api()->device_count(&count)).code == TG_OK && count == 0) {
      tg_device none = nullptr;
      GTEST_SKIP() << "no DSP device here: " << take(api()->device_open(0, &none)).message;
    }
    PluginTest::SetUpTestSuite();
  }
  void SetUp() override {
    if (device_ == nullptr) GTEST_SKIP() << "no DSP device";
  }
  // exec + submit + wait, returning the status of the submit (a failed launch is reported there).
  Status try_launch(tg_program program, const std::vector<unsigned char>& args, uint32_t global) {
    const tg_launch_dims dims{{global, 1, 1}, {1, 1, 1}};
    Status s = take(api()->hwqueue_exec(queue_, program, args.data(), args.size(), &dims));
    if (s.code != TG_OK) return s;
    s = take(api()->hwqueue_submit(queue_));
    return s;
  }
};

TEST_F(DspPlugin, DeviceIsTheQemuMockAndCapsSayWhatItTakes) {
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_OK(api()->device_get_info(device_, &info));
  EXPECT_STREQ(info.name, "DSP");
  EXPECT_STREQ(info.arch, "hexagonv67");
  EXPECT_EQ(info.is_host, 0u);
  EXPECT_TRUE(contains(info.description, "qemu-hexagon")) << info.description;
  EXPECT_TRUE(contains(info.description, "FastRPC")) << info.description;
  std::cout << "DSP: " << info.description << "\n";
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_OK(api()->renderer_get_caps(renderer_, &caps));
  EXPECT_EQ(caps.has_threads, 0u);
  EXPECT_EQ(caps.has_local, 0u);
  EXPECT_EQ(caps.max_global_dims, 1u);
  EXPECT_EQ(caps.ops[TG_DTYPE_FLOAT64] >> TG_KIR_FMA & 1u, 0u);  // no soft fma in the runtime
  EXPECT_EQ(caps.ops[TG_DTYPE_FLOAT32] >> TG_KIR_FMA & 1u, 1u);  // sffma
  EXPECT_EQ(caps.vector_widths[TG_DTYPE_BOOL], 1u << 1);
  EXPECT_EQ(caps.vector_widths[TG_DTYPE_FLOAT32], (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16));
}

// int64, float16 and int8 variables at their natural alignment in the packed blob; float16 arrives as its bits.
TEST_F(DspPlugin, TypedScalarArgumentsInt64Float16Int8) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT64, true), outf = k.buffer(TG_DTYPE_FLOAT32, true);
  const int big = k.var(TG_DTYPE_INT64, "big"), h = k.var(TG_DTYPE_FLOAT16, "h"), c = k.var(TG_DTYPE_INT8, "c");
  const int g = k.global_id(5);
  const int g64 = k.op(TG_KIR_CAST, TG_DTYPE_INT64, {g});
  const int c64 = k.op(TG_KIR_CAST, TG_DTYPE_INT64, {c});
  const int sum = k.op(TG_KIR_ADD, TG_DTYPE_INT64, {k.op(TG_KIR_MUL, TG_DTYPE_INT64, {big, g64}), c64});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, g, sum});
  const int hf = k.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {h});
  const int gf = k.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {g});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {outf, g, k.op(TG_KIR_MUL, TG_DTYPE_FLOAT32, {hf, gf})});
  tg_program program = build(k, "typed_args");
  const tg_buffer_desc bo = buffer(std::vector<int64_t>(5, 0)), bf = buffer(std::vector<float>(5, 0));
  const int64_t v = -((int64_t{1} << 40) + 11);
  const uint16_t h_bits = 0xbe00;  // -1.5
  const std::vector<unsigned char> args =
      pack(k, {bo.addr, bf.addr, static_cast<uint64_t>(v), h_bits, static_cast<uint64_t>(-100)});
  ASSERT_EQ(args.size(), 27u);  // 8 + 8 + 8 (int64) + 2 (float16) + 1 (int8)
  launch(program, args, 5);
  std::vector<int64_t> want;
  std::vector<float> wantf;
  for (int64_t i = 0; i < 5; ++i) want.push_back(v * i - 100), wantf.push_back(-1.5f * static_cast<float>(i));
  EXPECT_EQ(read<int64_t>(bo), want);
  EXPECT_EQ(read<float>(bf), wantf);
}

uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

// float64 FDIV and SQRT go through the runtime's __hexagon_divdf3 and sqrt, int64 IDIV/MOD through
// __hexagon_divdi3/moddi3: compared bit for bit with the host's IEEE results, over edge cases (subnormals,
// infinities, NaN, signed zeros, exact ties) and random values (seed printed).
TEST_F(DspPlugin, RuntimeLibcallsMatchTheHostBitForBit) {
  std::vector<double> a = {1.0,         -1.0,      3.0,      0.0,
                           -0.0,        1e308,     4.9e-324, 2.2250738585072009e-308,
                           INFINITY,    -INFINITY, NAN,      10.0,
                           7.0,         1.0 / 3.0, 2.0,      1e-310,
                           123456789.0, 0.1,       5e-324,   1.7976931348623157e308};
  std::vector<double> b = {3.0, 7.0, -0.0, 0.0, 5.0,   1e-10, 2.0,    0.5, 2.0, INFINITY,
                           1.0, 4.0, 0.1,  3.0, 1e308, 3.0,   -987.0, 0.3, 0.5, 0.5};
  const unsigned seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> any;
  for (int i = 0; i < 200; ++i) {
    double x, y;
    const uint64_t bx = any(rng), by = any(rng);  // any bits: NaNs, infinities and subnormals included
    std::memcpy(&x, &bx, 8), std::memcpy(&y, &by, 8);
    const int ea = static_cast<int>(rng() % 200) - 100;
    a.push_back(i % 4 == 0 ? x : std::ldexp(static_cast<double>(rng() % 1000000 + 1), ea));
    b.push_back(i % 3 == 0 ? y : std::ldexp(static_cast<double>(rng() % 1000 + 1), static_cast<int>(rng() % 40) - 20));
  }
  const uint32_t n = static_cast<uint32_t>(a.size());
  std::vector<int64_t> ia(n), ib(n);
  for (uint32_t i = 0; i < n; ++i) {
    ia[i] = static_cast<int64_t>(any(rng)) >> (rng() % 60);
    ib[i] = static_cast<int64_t>(any(rng)) >> (rng() % 63);
    if (ib[i] == 0) ib[i] = 7;
  }
  ia[0] = INT64_MIN, ib[0] = 3, ia[1] = -7, ib[1] = 2, ia[2] = 7, ib[2] = -2, ia[3] = INT64_MAX, ib[3] = INT64_MIN;

  Kir k;
  const int qd = k.buffer(TG_DTYPE_FLOAT64, true), sd = k.buffer(TG_DTYPE_FLOAT64, true);
  const int sf = k.buffer(TG_DTYPE_FLOAT32, true);
  const int qi = k.buffer(TG_DTYPE_INT64, true), ri = k.buffer(TG_DTYPE_INT64, true);
  const int da = k.buffer(TG_DTYPE_FLOAT64), db = k.buffer(TG_DTYPE_FLOAT64);
  const int xa = k.buffer(TG_DTYPE_INT64), xb = k.buffer(TG_DTYPE_INT64);
  const int g = k.global_id(static_cast<int>(n));
  const int x = k.load(TG_DTYPE_FLOAT64, da, g), y = k.load(TG_DTYPE_FLOAT64, db, g);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT64, {qd, g, k.op(TG_KIR_FDIV, TG_DTYPE_FLOAT64, {x, y})});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT64, {sd, g, k.op(TG_KIR_SQRT, TG_DTYPE_FLOAT64, {x})});
  const int xf = k.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {x});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {sf, g, k.op(TG_KIR_SQRT, TG_DTYPE_FLOAT32, {xf})});
  const int p = k.load(TG_DTYPE_INT64, xa, g), q = k.load(TG_DTYPE_INT64, xb, g);
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {qi, g, k.op(TG_KIR_IDIV, TG_DTYPE_INT64, {p, q})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {ri, g, k.op(TG_KIR_MOD, TG_DTYPE_INT64, {p, q})});
  tg_program program = build(k, "libcalls");
  const tg_buffer_desc bqd = buffer(std::vector<double>(n)), bsd = buffer(std::vector<double>(n)),
                       bsf = buffer(std::vector<float>(n)), bqi = buffer(std::vector<int64_t>(n)),
                       bri = buffer(std::vector<int64_t>(n)), ba = buffer(a), bb = buffer(b), bia = buffer(ia),
                       bib = buffer(ib);
  launch(program, pack(k, {bqd.addr, bsd.addr, bsf.addr, bqi.addr, bri.addr, ba.addr, bb.addr, bia.addr, bib.addr}), n);
  const std::vector<double> got_q = read<double>(bqd), got_s = read<double>(bsd);
  const std::vector<float> got_sf = read<float>(bsf);
  const std::vector<int64_t> got_qi = read<int64_t>(bqi), got_ri = read<int64_t>(bri);
  for (uint32_t i = 0; i < n; ++i) {
    const double want_q = a[i] / b[i], want_s = std::sqrt(a[i]);
    const float want_sf = std::sqrt(static_cast<float>(a[i]));
    if (std::isnan(want_q))
      EXPECT_TRUE(std::isnan(got_q[i])) << a[i] << " / " << b[i];
    else
      EXPECT_EQ(bits_of(got_q[i]), bits_of(want_q))
          << std::hexfloat << a[i] << " / " << b[i] << " gave " << got_q[i] << ", expected " << want_q;
    if (std::isnan(want_s))
      EXPECT_TRUE(std::isnan(got_s[i])) << "sqrt " << a[i];
    else
      EXPECT_EQ(bits_of(got_s[i]), bits_of(want_s))
          << std::hexfloat << "sqrt " << a[i] << " gave " << got_s[i] << ", expected " << want_s;
    if (std::isnan(want_sf))
      EXPECT_TRUE(std::isnan(got_sf[i])) << "sqrtf " << a[i];
    else
      EXPECT_EQ(got_sf[i], want_sf) << std::hexfloat << "sqrtf " << static_cast<float>(a[i]);
    const int64_t want_qi = ia[i] == INT64_MIN && ib[i] == -1 ? INT64_MIN : ia[i] / ib[i];
    EXPECT_EQ(got_qi[i], want_qi) << ia[i] << " / " << ib[i];
    EXPECT_EQ(got_ri[i], ib[i] == -1 ? 0 : ia[i] % ib[i]) << ia[i] << " % " << ib[i];
  }
}

// Every float16 bit pattern through float32 and back (the runtime's tg_dsp_f16_to_f32 / tg_dsp_f64_to_f16), and
// float32 values rounded to float16 and bfloat16, against an independent reference: the host's own conversions.
TEST_F(DspPlugin, Float16ConversionsRoundTripEveryBitPattern) {
  Kir k;
  const int wide = k.buffer(TG_DTYPE_FLOAT32, true), back = k.buffer(TG_DTYPE_FLOAT16, true);
  const int src = k.buffer(TG_DTYPE_FLOAT16);
  const int g = k.global_id(65536);
  const int f = k.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {k.load(TG_DTYPE_FLOAT16, src, g)});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {wide, g, f});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT16, {back, g, k.op(TG_KIR_CAST, TG_DTYPE_FLOAT16, {f})});
  tg_program program = build(k, "half_round_trip");
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  const tg_buffer_desc bw = buffer(std::vector<float>(65536)), bb = buffer(std::vector<uint16_t>(65536));
  const tg_buffer_desc bs = buffer(all);
  launch(program, pack(k, {bw.addr, bb.addr, bs.addr}), 65536);
  const std::vector<float> got_w = read<float>(bw);
  const std::vector<uint16_t> got_b = read<uint16_t>(bb);
  int bad = 0;
  for (uint32_t i = 0; i < 65536 && bad < 10; ++i) {
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(i)));
    const bool nan = std::isnan(want);
    // a NaN stays a (quiet) NaN; every other value widens exactly and rounds back to itself
    const bool same = nan ? std::isnan(got_w[i]) && (got_b[i] & 0x7e00) == 0x7e00
                          : std::bit_cast<uint32_t>(got_w[i]) == std::bit_cast<uint32_t>(want) && got_b[i] == i;
    if (!same) {
      ADD_FAILURE() << "float16 0x" << std::hex << i << ": float32 " << got_w[i] << " (expected " << want
                    << "), back 0x" << got_b[i];
      ++bad;
    }
  }
}

// MAX(x, 0.0) (a ReLU) keeps a NaN, float32 and float64: with the constant, clang's hexagon backend once folded
// the NaN-propagating helper into one sfmax, which returns the number (tensor_dtype_edge_test caught it).
TEST_F(DspPlugin, MaxWithAConstantPropagatesNaN) {
  Kir k;
  const int o32 = k.buffer(TG_DTYPE_FLOAT32, true), o64 = k.buffer(TG_DTYPE_FLOAT64, true);
  const int i32 = k.buffer(TG_DTYPE_FLOAT32), i64 = k.buffer(TG_DTYPE_FLOAT64);
  const int g = k.global_id(4);
  const int z32 = k.constant_f(TG_DTYPE_FLOAT32, 0.0), z64 = k.constant_f(TG_DTYPE_FLOAT64, 0.0);
  const int x32 = k.load(TG_DTYPE_FLOAT32, i32, g), x64 = k.load(TG_DTYPE_FLOAT64, i64, g);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {o32, g, k.op(TG_KIR_MAX, TG_DTYPE_FLOAT32, {x32, z32})});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT64, {o64, g, k.op(TG_KIR_MAX, TG_DTYPE_FLOAT64, {z64, x64})});
  tg_program program = build(k, "relu_nan");
  const tg_buffer_desc b32 = buffer(std::vector<float>(4)), b64 = buffer(std::vector<double>(4));
  const tg_buffer_desc a32 = buffer(std::vector<float>{NAN, -2.0f, 3.0f, -0.0f});
  const tg_buffer_desc a64 = buffer(std::vector<double>{NAN, -2.0, 3.0, -0.0});
  launch(program, pack(k, {b32.addr, b64.addr, a32.addr, a64.addr}), 4);
  const std::vector<float> r32 = read<float>(b32);
  const std::vector<double> r64 = read<double>(b64);
  EXPECT_TRUE(std::isnan(r32[0])) << r32[0];
  EXPECT_TRUE(std::isnan(r64[0])) << r64[0];
  EXPECT_EQ(r32[1], 0.0f);
  EXPECT_EQ(r32[2], 3.0f);
  EXPECT_EQ(r32[3], 0.0f);
  EXPECT_EQ(r64[1], 0.0);
  EXPECT_EQ(r64[2], 3.0);
  EXPECT_EQ(r64[3], 0.0);
}

// Two views of one allocation, read through one and written through the other: the launch sends the allocation
// once, so the kernel sees its own stores through both, as on a device (data0[i+1] = data1[i] * 2 on one buffer).
TEST_F(DspPlugin, AliasingViewsShareOneRegion) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), in = k.buffer(TG_DTYPE_INT32);
  const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(8)});
  const int v = k.load(TG_DTYPE_INT32, in, r);
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, r, k.op(TG_KIR_MUL, TG_DTYPE_INT32, {v, k.i32(2)})});
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  tg_program program = build(k, "alias");
  const tg_buffer_desc b = buffer(std::vector<int32_t>{1, 0, 0, 0, 0, 0, 0, 0, 0, 77});
  launch(program, pack(k, {b.addr + 4, b.addr}), 1);  // out = &b[1], in = &b[0]: each store feeds the next load
  EXPECT_EQ(read<int32_t>(b), (std::vector<int32_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 77}));
}

// 64 MiB in and out: the pipe never holds a buffer, both ends stream it.
TEST_F(DspPlugin, LargeBufferStreamsBothWays) {
  constexpr uint32_t n = 16u << 20;  // float32 elements: 64 MiB
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), in = k.buffer(TG_DTYPE_FLOAT32);
  const int g = k.global_id(static_cast<int>(n / 16));
  const int base = k.op(TG_KIR_MUL, TG_DTYPE_INT32, {g, k.i32(16)});
  const int v = k.load(TG_DTYPE_FLOAT32, in, base, 16);
  const int three_s = k.constant_f(TG_DTYPE_FLOAT32, 3.0);
  const int three = k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, std::vector<int>(16, three_s), 16);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, base, k.op(TG_KIR_MUL, TG_DTYPE_FLOAT32, {v, three}, 16)});
  tg_program program = build(k, "large");
  std::vector<float> src(n);
  for (uint32_t i = 0; i < n; ++i) src[i] = static_cast<float>(i % 100003);
  const tg_buffer_desc bo = buffer(std::vector<float>(n, -1.0f)), bi = buffer(src);
  const auto t0 = std::chrono::steady_clock::now();
  launch(program, pack(k, {bo.addr, bi.addr}), n / 16);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "64 MiB launch: " << took << " s\n";
  const std::vector<float> got = read<float>(bo);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != src[i] * 3.0f;
  EXPECT_EQ(wrong, 0u) << "first: got " << got[0] << " " << got[n - 1];
}

// A kernel that stores far outside its buffer: the guest's SIGSEGV is one line naming the kernel and the signal.
TEST_F(DspPlugin, CrashingKernelIsReportedWithItsName) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true);
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0x3ff00000), k.i32(1)});
  tg_program program = build(k, "wild_store");
  const tg_buffer_desc b = buffer(std::vector<int32_t>(4, 0));
  const Status s = try_launch(program, pack(k, {b.addr}), 1);
  EXPECT_NE(s.code, TG_OK);
  EXPECT_TRUE(contains(s.message, "kernel wild_store")) << s.message;
  EXPECT_TRUE(contains(s.message, "signal 11") || contains(s.message, "Segmentation fault")) << s.message;
  EXPECT_EQ(s.message.find('\n'), std::string::npos) << s.message;
  std::cout << s.message << "\n";
}

// A kernel that never ends is killed at DSP_TIMEOUT_S, read when a device opens: a second device with 2 s.
TEST_F(DspPlugin, HungKernelTimesOut) {
  ::setenv("DSP_TIMEOUT_S", "2", 1);
  tg_device dev = nullptr;
  const Status opened = take(api()->device_open(0, &dev));
  ::unsetenv("DSP_TIMEOUT_S");
  ASSERT_EQ(opened.code, TG_OK) << opened.message;
  tg_hwqueue q = nullptr;
  ASSERT_OK(api()->hwqueue_create(dev, &q));
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true);
  const int r1 = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(INT32_MAX)});
  const int r2 = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(INT32_MAX)});
  // out[0] = out[0] * 3 + r2: a recurrence no compiler folds into a closed form, 2^62 times
  const int prev = k.load(TG_DTYPE_INT32, out, k.i32(0));
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0), k.op(TG_KIR_MULACC, TG_DTYPE_INT32, {prev, k.i32(3), r2})});
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r2});
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r1});
  const std::string source = render(k, "forever");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_OK(api()->compiler_compile(compiler_, source.c_str(), "forever", &blob, &size));
  tg_program program = nullptr;
  const Status loaded = take(api()->program_create(dev, blob, size, "forever", k.params().data(), 1, &program));
  api()->blob_free(blob);
  ASSERT_EQ(loaded.code, TG_OK) << loaded.message;
  const tg_buffer_desc b = buffer(std::vector<int32_t>(1, 0));
  const std::vector<unsigned char> args = pack(k, {b.addr});
  const tg_launch_dims dims{{1, 1, 1}, {1, 1, 1}};
  ASSERT_OK(api()->hwqueue_exec(q, program, args.data(), args.size(), &dims));
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = take(api()->hwqueue_submit(q));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(s.code, TG_OK);
  EXPECT_TRUE(contains(s.message, "kernel forever")) << s.message;
  EXPECT_TRUE(contains(s.message, "DSP_TIMEOUT_S")) << s.message;
  EXPECT_LT(took, 30.0);
  std::cout << s.message << " (" << took << " s)\n";
  api()->program_destroy(program);
  api()->hwqueue_destroy(q);
  api()->device_close(dev);
}

// A kernel clang cannot compile: a TG_ERR_COMPILE naming the kernel, with clang's diagnostics.
TEST_F(DspPlugin, CompileErrorCarriesClangsDiagnostics) {
  void* blob = nullptr;
  size_t size = 0;
  const char* source = "void broken(void) { undeclared_name = 1; }";
  const Status s = take(api()->compiler_compile(compiler_, source, "broken", &blob, &size));
  EXPECT_EQ(s.code, TG_ERR_COMPILE);
  EXPECT_TRUE(contains(s.message, "DSP kernel broken")) << s.message;
  EXPECT_TRUE(contains(s.message, "undeclared_name")) << s.message;
}

}  // namespace
