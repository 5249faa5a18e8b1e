// Unit tests of the INTERP reference plugin through its C ABI (loaded with dlopen, as the core does): hand-built
// KIR checked against hand-computed values, the text "source" round trip, bounds-checked memory, gated accesses,
// vector accumulators, and the errors bad input must become.
//
// Registered from tests/sdk/CMakeLists.txt with TG_INTERP_PLUGIN_PATH (the env var of that name overrides it).
#include "plugin_fixture.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

const char* tg::test::plugin_path() {
  const char* env = std::getenv("TG_INTERP_PLUGIN_PATH");
  return env != nullptr && *env != '\0' ? env : TG_INTERP_PLUGIN_PATH;
}

namespace {

using tg::test::api;
using tg::test::Kir;
using tg::test::pack;
using tg::test::Status;
using tg::test::take;

class InterpPlugin : public tg::test::PluginTest {
 protected:
  // exec + signal + submit, returning submit's status (where a run-time error lands).
  Status run(tg_program program, const std::vector<unsigned char>& args, uint32_t global) {
    const tg_launch_dims dims{{global, 1, 1}, {1, 1, 1}};
    Status s = take(api()->hwqueue_exec(queue_, program, args.data(), args.size(), &dims));
    if (s.code != TG_OK) return s;
    s = take(api()->hwqueue_signal(queue_, ++signal_));
    if (s.code != TG_OK) return s;
    return take(api()->hwqueue_submit(queue_));
  }
};

TEST_F(InterpPlugin, DeclaresItselfAndTheCpuCapabilities) {
  EXPECT_STREQ(api()->device_name, "INTERP");
  tg_renderer_caps caps{};
  caps.struct_size = sizeof caps;
  ASSERT_OK(api()->renderer_get_caps(renderer_, &caps));
  EXPECT_EQ(caps.dtypes, (1u << TG_DTYPE_COUNT) - 1);
  EXPECT_EQ(caps.max_global_dims, 1u);
  EXPECT_EQ(caps.vector_widths[TG_DTYPE_FLOAT32], (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16));
  EXPECT_EQ(caps.ops[TG_DTYPE_FLOAT16], (uint64_t{1} << TG_KIR_CAST) | (uint64_t{1} << TG_KIR_BITCAST));
}

// out[i] = a[i] * 2 + 1 over int32, with int32 wrap-around at the top.
TEST_F(InterpPlugin, ElementwiseKernelAndItsTextRoundTrip) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), a = k.buffer(TG_DTYPE_INT32);
  const int gidx = k.global_id(4);
  const int x = k.load(TG_DTYPE_INT32, a, gidx);
  const int y = k.op(TG_KIR_MULACC, TG_DTYPE_INT32, {x, k.i32(2), k.i32(1)});
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, gidx, y});
  const std::string source = render(k, "double_plus_one");
  EXPECT_NE(source.find("MULACC"), std::string::npos) << source;
  EXPECT_NE(source.find("kernel double_plus_one"), std::string::npos) << source;
  tg_program program = build(k, "double_plus_one");
  const tg_buffer_desc bo = buffer(std::vector<int32_t>(4, 0));
  const tg_buffer_desc ba = buffer(std::vector<int32_t>{0, -3, 1073741824, 2147483647});
  launch(program, pack(k, {bo.addr, ba.addr}), 4);
  EXPECT_EQ(read<int32_t>(bo), (std::vector<int32_t>{1, -5, -2147483647, -1}));
}

// A vector accumulator (DEFINE_REG of float32x4) summed over a RANGE, then a 4-lane store: the core's reduce shape.
TEST_F(InterpPlugin, VectorAccumulatorOverALoop) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), in = k.buffer(TG_DTYPE_FLOAT32);
  const int acc = k.op(TG_KIR_DEFINE_REG, TG_DTYPE_FLOAT32, {}, 4, 1);
  const int zero = k.i32(0);
  const int zeros = k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32,
                         {k.constant_f(TG_DTYPE_FLOAT32, 0), k.constant_f(TG_DTYPE_FLOAT32, 0),
                          k.constant_f(TG_DTYPE_FLOAT32, 0), k.constant_f(TG_DTYPE_FLOAT32, 0)},
                         4);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {acc, zero, zeros});
  const int r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {k.i32(3)});
  const int row = k.load(TG_DTYPE_FLOAT32, in, k.op(TG_KIR_MUL, TG_DTYPE_INT32, {r, k.i32(4)}), 4);
  const int cur = k.op(TG_KIR_LOAD, TG_DTYPE_FLOAT32, {acc, zero}, 4);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {acc, zero, k.op(TG_KIR_ADD, TG_DTYPE_FLOAT32, {cur, row}, 4)});
  k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, zero, k.op(TG_KIR_LOAD, TG_DTYPE_FLOAT32, {acc, zero}, 4)});
  tg_program program = build(k, "column_sums");
  const tg_buffer_desc bo = buffer(std::vector<float>(4, -1));
  const tg_buffer_desc bi = buffer(std::vector<float>{1, 2, 3, 4, 10, 20, 30, 40, 100, 200, 300, 400});
  launch(program, pack(k, {bo.addr, bi.addr}), 1);
  EXPECT_EQ(read<float>(bo), (std::vector<float>{111, 222, 333, 444}));
}

// out[i] = i < 2 ? in[i + 6] : 0 — with a gate, the index past the end for i >= 2 is never read.
TEST_F(InterpPlugin, GatedLoadReadsNothingWhenTheGateIsFalse) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT16, true), in = k.buffer(TG_DTYPE_INT16);
  const int gidx = k.global_id(4);
  const int gate = k.op(TG_KIR_CMPLT, TG_DTYPE_BOOL, {gidx, k.i32(2)});
  const int v = k.op(TG_KIR_LOAD, TG_DTYPE_INT16, {in, k.op(TG_KIR_ADD, TG_DTYPE_INT32, {gidx, k.i32(6)}), gate});
  k.op(TG_KIR_STORE, TG_DTYPE_INT16, {out, gidx, v});
  tg_program program = build(k, "gated");
  const tg_buffer_desc bo = buffer(std::vector<int16_t>(4, 9));
  const tg_buffer_desc bi = buffer(std::vector<int16_t>{0, 1, 2, 3, 4, 5, 6, 7});
  launch(program, pack(k, {bo.addr, bi.addr}), 4);
  EXPECT_EQ(read<int16_t>(bo), (std::vector<int16_t>{6, 7, 0, 0}));
}

// Without the gate the same kernel reads past the buffer: INTERP says where instead of reading garbage.
TEST_F(InterpPlugin, OutOfBoundsAccessIsAnErrorNamingTheInstruction) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT16, true), in = k.buffer(TG_DTYPE_INT16);
  const int gidx = k.global_id(4);
  const int v = k.op(TG_KIR_LOAD, TG_DTYPE_INT16, {in, k.op(TG_KIR_ADD, TG_DTYPE_INT32, {gidx, k.i32(6)})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT16, {out, gidx, v});
  tg_program program = build(k, "past_the_end");
  const tg_buffer_desc bo = buffer(std::vector<int16_t>(4, 9));
  const tg_buffer_desc bi = buffer(std::vector<int16_t>(8, 1));
  const Status s = run(program, pack(k, {bo.addr, bi.addr}), 4);
  EXPECT_EQ(s.code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("kernel past_the_end: inst "), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("(LOAD) accesses 1 int16 lane(s) at element 8"), std::string::npos) << s.message;
}

TEST_F(InterpPlugin, BadSourceAndBadBlobsAreErrorsNotCrashes) {
  void* blob = nullptr;
  size_t size = 0;
  Status s =
      take(api()->compiler_compile(compiler_, "kernel k global_dims 1\n    0: FROB float32\n", "k", &blob, &size));
  EXPECT_EQ(s.code, TG_ERR_COMPILE);
  EXPECT_NE(s.message.find("unknown op 'FROB'"), std::string::npos) << s.message;
  // A store to a parameter the signature marks read-only is refused at compile time with the instruction named.
  s = take(api()->compiler_compile(compiler_,
                                   "kernel k global_dims 0\nparam 0 buffer float32 ro data0\n"
                                   "    0: PARAM float32 global arg=0\n    1: CONST int32 arg=0\n"
                                   "    2: CONST float32 arg=0x3ff0000000000000\n    3: STORE float32 %0 %1 %2\n",
                                   "k", &blob, &size));
  EXPECT_EQ(s.code, TG_ERR_COMPILE);
  EXPECT_NE(s.message.find("inst 3 (STORE): stores to read-only parameter 0"), std::string::npos) << s.message;
  tg_program program = nullptr;
  const char junk[] = "not a blob at all";
  s = take(api()->program_create(device_, junk, sizeof junk, "k", nullptr, 0, &program));
  EXPECT_EQ(s.code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("bad magic"), std::string::npos) << s.message;
  EXPECT_EQ(program, nullptr);
}

TEST_F(InterpPlugin, LocalMemoryIsRefusedAsUnsupported) {
  Kir k;
  k.buffer(TG_DTYPE_FLOAT32, true);
  k.op(TG_KIR_DEFINE_LOCAL, TG_DTYPE_FLOAT32, {}, 1, 16);
  const tg_kir_kernel kernel = k.kernel("uses_local");
  const char* source = nullptr;
  const Status s = take(api()->renderer_render(renderer_, &kernel, &source));
  EXPECT_EQ(s.code, TG_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("INTERP has no local memory"), std::string::npos) << s.message;
}

}  // namespace
