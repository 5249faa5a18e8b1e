// Unit tests of the QCOM (OpenCL) plugin through its C ABI on whatever OpenCL device is present (PoCL here): the
// device's name and caps, typed scalar arguments, vector loads at unaligned indices, signed wrap-around, the
// driver's build log in compile errors, OpenCL error names, and the message when libOpenCL is missing.
//
// The generic plugin battery (cpu_plugin_test) also runs against this plugin; see CMakeLists.txt.
// QCOM_PLUGIN_TEST_PATH, when set, overrides the compiled-in plugin path; TG_TEST_PRINT_SOURCE=1 prints kernels.
#include "plugin_fixture.hpp"

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

const char* tg::test::plugin_path() {
  const char* env = std::getenv("QCOM_PLUGIN_TEST_PATH");
  return env != nullptr && *env != '\0' ? env : TG_QCOM_PLUGIN_PATH;
}

namespace {

using tg::test::api;
using tg::test::Kir;
using tg::test::pack;
using tg::test::Status;
using tg::test::take;

// Run only with QCOM_OPENCL_LIBRARY pointing at a missing file (a separate ctest entry): the library is loaded
// once per process, so this cannot share a process with the tests that need a device.
TEST(QcomPluginNoOpenCl, MissingLibraryIsUnavailableAndNamed) {
  const char* lib = std::getenv("QCOM_OPENCL_LIBRARY");
  if (lib == nullptr || *lib == '\0') GTEST_SKIP() << "set QCOM_OPENCL_LIBRARY to a missing file to run this";
  uint32_t count = 7;
  const Status s = take(api()->device_count(&count));
  EXPECT_EQ(s.code, TG_ERR_UNAVAILABLE);
  EXPECT_NE(s.message.find(std::string("cannot load ") + lib), std::string::npos) << s.message;
  tg_device device = nullptr;
  EXPECT_EQ(take(api()->device_open(0, &device)).code, TG_ERR_UNAVAILABLE);
}

class QcomPlugin : public tg::test::PluginTest {
 protected:
  static void SetUpTestSuite() {
    if (std::getenv("QCOM_OPENCL_LIBRARY") != nullptr) GTEST_SKIP() << "no OpenCL in this run";
    PluginTest::SetUpTestSuite();
  }
  void SetUp() override {
    if (device_ == nullptr) GTEST_SKIP() << "no QCOM device";
  }
};

TEST_F(QcomPlugin, DeviceIsNamedQcomAndCapsFollowTheDevice) {
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_OK(api()->device_get_info(device_, &info));
  EXPECT_STREQ(info.name, "QCOM");
  EXPECT_EQ(info.is_host, 0u);
  EXPECT_GT(info.memory_bytes, 0u);
  EXPECT_NE(std::string(info.description).find("OpenCL C"), std::string::npos) << info.description;
  std::cout << "QCOM: " << info.description << " arch " << info.arch << "\n";
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_OK(api()->renderer_get_caps(renderer_, &caps));
  // work-groups as the OpenCL device reports them (PoCL: 3 dims, 4096 work-items, local memory)
  EXPECT_EQ(caps.max_global_dims, 3u);
  EXPECT_EQ(caps.has_local, caps.local_mem_bytes > 0 && caps.max_local_threads > 1 ? 1u : 0u);
  EXPECT_GE(caps.max_local_threads, caps.max_local[0] > 0 ? 1u : 0u);
  EXPECT_TRUE(caps.dtypes >> TG_DTYPE_FLOAT32 & 1u);
  EXPECT_TRUE(caps.dtypes >> TG_DTYPE_BFLOAT16 & 1u);
  EXPECT_EQ(caps.ops[TG_DTYPE_BFLOAT16], (1ull << TG_KIR_CAST) | (1ull << TG_KIR_BITCAST));
  EXPECT_EQ(caps.ops[TG_DTYPE_FLOAT32] >> TG_KIR_EXP2 & 1u, 0u);  // OpenCL's exp2 is not exact: the core's is used
  EXPECT_EQ(caps.vector_widths[TG_DTYPE_FLOAT32], (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16));
}

// int8, int64 and int32 variables at their natural alignment in the packed blob, each its own clSetKernelArg.
TEST_F(QcomPlugin, TypedScalarArgumentsInt8Int64Int32) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT64, true);
  const int a = k.var(TG_DTYPE_INT8, "a"), b = k.var(TG_DTYPE_INT64, "b"), c = k.var(TG_DTYPE_INT32, "c");
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(0), k.op(TG_KIR_CAST, TG_DTYPE_INT64, {a})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(1), b});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(2), k.op(TG_KIR_CAST, TG_DTYPE_INT64, {c})});
  // a + c computed in int32, b * 3 in int64: the values must arrive whole, sign included
  const int sum = k.op(TG_KIR_ADD, TG_DTYPE_INT32, {k.op(TG_KIR_CAST, TG_DTYPE_INT32, {a}), c});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64, {out, k.i32(3), k.op(TG_KIR_CAST, TG_DTYPE_INT64, {sum})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT64,
       {out, k.i32(4), k.op(TG_KIR_MUL, TG_DTYPE_INT64, {b, k.constant(TG_DTYPE_INT64, 3)})});
  const int64_t big = -((int64_t{1} << 40) + 11);
  tg_program program = build(k, "typed_args");
  const tg_buffer_desc bo = buffer(std::vector<int64_t>(5, 0));
  const std::vector<unsigned char> args =
      pack(k, {bo.addr, static_cast<uint64_t>(-100), static_cast<uint64_t>(big), static_cast<uint64_t>(-70000)});
  ASSERT_EQ(args.size(), 28u);
  launch(program, args, 1);
  EXPECT_EQ(read<int64_t>(bo), (std::vector<int64_t>{-100, big, -70000, -70100, big * 3}));
}

// vload4/vstore4 at an index that is not a multiple of 4 (a shrunk view): only element alignment is promised.
TEST_F(QcomPlugin, VectorAccessAtUnalignedIndex) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_FLOAT32, true), src = k.buffer(TG_DTYPE_FLOAT32);
  const int g = k.global_id(3);
  const int base = k.op(TG_KIR_ADD, TG_DTYPE_INT32, {k.op(TG_KIR_MUL, TG_DTYPE_INT32, {g, k.i32(4)}), k.i32(1)});
  const int v = k.load(TG_DTYPE_FLOAT32, src, base, 4);
  const int two = k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, std::vector<int>(4, k.constant_f(TG_DTYPE_FLOAT32, 2.0)), 4);
  k.op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, base, k.op(TG_KIR_MUL, TG_DTYPE_FLOAT32, {v, two}, 4)});
  tg_program program = build(k, "unaligned_vec");
  std::vector<float> in(13);
  for (int i = 0; i < 13; ++i) in[i] = static_cast<float>(i) + 0.5f;
  const tg_buffer_desc bo = buffer(std::vector<float>(13, -1.0f)), bi = buffer(in);
  launch(program, pack(k, {bo.addr, bi.addr}), 3);
  const std::vector<float> got = read<float>(bo);
  EXPECT_EQ(got[0], -1.0f);
  for (int i = 1; i < 13; ++i) EXPECT_EQ(got[i], in[i] * 2.0f) << i;
}

// Signed overflow is undefined in OpenCL C; KIR wraps, scalar and vector.
TEST_F(QcomPlugin, SignedArithmeticWrapsScalarAndVector) {
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), src = k.buffer(TG_DTYPE_INT32);
  const int v = k.load(TG_DTYPE_INT32, src, k.i32(0), 4);
  const int big = k.op(TG_KIR_VECTORIZE, TG_DTYPE_INT32, std::vector<int>(4, k.constant(TG_DTYPE_INT32, INT32_MAX)), 4);
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0), k.op(TG_KIR_ADD, TG_DTYPE_INT32, {v, big}, 4)});
  const int s = k.load(TG_DTYPE_INT32, src, k.i32(0));
  k.op(TG_KIR_STORE, TG_DTYPE_INT32,
       {out, k.i32(4), k.op(TG_KIR_MUL, TG_DTYPE_INT32, {s, k.constant(TG_DTYPE_INT32, INT32_MIN)})});
  k.op(TG_KIR_STORE, TG_DTYPE_INT32,
       {out, k.i32(5), k.op(TG_KIR_NEG, TG_DTYPE_INT32, {k.constant(TG_DTYPE_INT32, INT32_MIN)})});
  tg_program program = build(k, "wrap");
  const tg_buffer_desc bo = buffer(std::vector<int32_t>(6, 0)), bi = buffer(std::vector<int32_t>{1, 2, -1, 0});
  launch(program, pack(k, {bo.addr, bi.addr}), 1);
  EXPECT_EQ(read<int32_t>(bo),
            (std::vector<int32_t>{INT32_MIN, INT32_MIN + 1, INT32_MAX - 1, INT32_MAX, INT32_MIN, INT32_MIN}));
}

TEST_F(QcomPlugin, CompileErrorCarriesTheBuildLog) {
  void* blob = nullptr;
  size_t size = 0;
  const char* source = "__kernel void broken(__global int* x) { x[0] = undeclared_name; }";
  const Status s = take(api()->compiler_compile(compiler_, source, "broken", &blob, &size));
  EXPECT_EQ(s.code, TG_ERR_COMPILE);
  EXPECT_NE(s.message.find("kernel broken"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("undeclared_name"), std::string::npos) << s.message;  // the driver's log
  EXPECT_EQ(blob, nullptr);
}

TEST_F(QcomPlugin, OpenClErrorsAreNamedWithTheFailingCall) {
  // A binary that is no program: clCreateProgramWithBinary refuses it.
  const char junk[] = "not a program binary";
  tg_program program = nullptr;
  const Status s = take(api()->program_create(device_, junk, sizeof junk, "k", nullptr, 0, &program));
  EXPECT_NE(s.code, TG_OK);
  EXPECT_NE(s.message.find("qcom program_create"), std::string::npos) << s.message;
  EXPECT_EQ(program, nullptr);
  // A kernel name the program lacks: clCreateKernel fails with CL_INVALID_KERNEL_NAME.
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true);
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0), k.i32(1)});
  const std::string source = render(k, "named_k");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_OK(api()->compiler_compile(compiler_, source.c_str(), "named_k", &blob, &size));
  const Status wrong = take(api()->program_create(device_, blob, size, "other_name", k.params().data(), 1, &program));
  api()->blob_free(blob);
  EXPECT_NE(wrong.message.find("clCreateKernel(other_name) failed: CL_INVALID_KERNEL_NAME"), std::string::npos)
      << wrong.message;
}

}  // namespace
