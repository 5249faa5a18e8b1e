// Render-only tests of the METAL plugin (ctest label unit): every kernel of the compile-test programs lowered with
// the METAL renderer's caps, rendered to MSL by a device-less renderer and type-checked by clang++ against
// shim/metal_stdlib; the check itself rejecting wrong MSL; the simdgroup tensor core's fragment maps against Apple's
// layout; and the plugin's answers where the Metal runtime is missing.
//
// The plugin is loaded from TG_METAL_PLUGIN_PATH (compiled in; the environment variable overrides it), the way the
// core loads plugins. Tensors live on the CPU device, which only provides their buffers to the lowering.
#include "../compile_test_programs.hpp"
#include "../plugin_api.hpp"
#include "codegen/lower.hpp"
#include "msl_check.hpp"
#include "schedule/schedule.hpp"
#include "tg/error.hpp"

#include <tg/plugin_abi.h>
#include <tg/sdk/kir_builder.hpp>
#include <tg/sdk/tensor_cores.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return tg::test::path_from_env("TG_METAL_PLUGIN_PATH", TG_METAL_PLUGIN_PATH); }

namespace {

using tg::test::take_message;

using tg::Tensor;
using tg::test::CheckResult;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Removes the checked .metal files once every test passed (after a failure they stay, for its diagnostics).
class RemoveMslWorkDir : public ::testing::Environment {
  void TearDown() override {
    const std::string& dir = tg::test::msl_work_dir();
    if (::testing::UnitTest::GetInstance()->Passed() && contains(dir, "/tg_msl_")) std::filesystem::remove_all(dir);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveMslWorkDir =
    ::testing::AddGlobalTestEnvironment(new RemoveMslWorkDir);

class MetalRender : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = tg::test::api();
    ASSERT_NE(api_, nullptr) << "cannot load the METAL plugin: " << dlerror();
    ASSERT_EQ(take_message(api_->renderer_create(nullptr, "MSL", &renderer_)), "");
    caps_.struct_size = sizeof(caps_);
    ASSERT_EQ(take_message(api_->renderer_get_caps(renderer_, &caps_)), "");
  }
  void TearDown() override {
    if (renderer_ != nullptr) api_->renderer_destroy(renderer_);
  }
  // The source, or "" with the status's message in `error`.
  std::string render(const tg_kir_kernel& kernel, std::string& error) {
    const char* source = nullptr;
    error = take_message(api_->renderer_render(renderer_, &kernel, &source));
    return error.empty() && source != nullptr ? source : "";
  }

  const tg_plugin_api* api_ = nullptr;
  tg_renderer renderer_ = nullptr;
  tg_renderer_caps caps_{};
};

bool uses_float64(const tg_kir_kernel& k) {
  for (uint32_t i = 0; i < k.ninsts; ++i)
    if (k.insts[i].dtype == TG_DTYPE_FLOAT64) return true;
  return false;
}

// Every kernel rendered and syntax-checked in one clang run (measured: ~0.15 s per run of one kernel, so ~13 s for the
// 84 kernels one at a time, against ~0.5 s for the batch); when the batch fails, each kernel is checked alone so
// the report names it and shows its source. Kernels the core cannot lower without float64 are counted apart.
TEST_F(MetalRender, EveryKernelPassesTheMslSyntaxCheck) {
  setenv("DEV", "CPU", 1);  // tensors only need a device for their buffers
  std::vector<std::string> sources, names;
  int refused_float64 = 0;
  bool threadgroup_memory = false, grid_3d = false, wide_loads = false, lane_loads = false;
  bool wmma_half = false, wmma_bfloat = false, wmma_float = false;
  for (const tg::test::Program& program : tg::test::compile_test_programs()) {
    SCOPED_TRACE(program.name);
    const Tensor t = program.make();
    const auto schedule = tg::sched::create_schedule({t.node()}, t.device());
    for (const auto& item : schedule.items) {
      if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
      std::optional<tg::codegen::KirProgram> lowered;
      try {
        lowered = tg::codegen::lower_kernel(item.kernel, caps_);
      } catch (const tg::Error& e) {  // Metal has no double: the core finds no float64 op in the caps
        EXPECT_TRUE(contains(e.what(), "float64")) << e.what();
        ++refused_float64;
        continue;
      }
      const tg::codegen::KirProgram& kir = *lowered;
      const tg_kir_kernel kernel = kir.view();
      std::string error;
      const std::string text = render(kernel, error);
      if (uses_float64(kernel)) {  // and a float64 load or store that got through is refused by the renderer
        EXPECT_TRUE(contains(error, "Metal has no double")) << error << "\n" << kir.dump();
        ++refused_float64;
        continue;
      }
      ASSERT_EQ(error, "") << kir.dump();
      EXPECT_TRUE(contains(text, "#include <metal_stdlib>") &&
                  contains(text, std::string("kernel void ") + kernel.name + "("))
          << text;
      threadgroup_memory |= contains(text, "threadgroup __attribute__((aligned(16))) float temp") &&
                            contains(text, "threadgroup_barrier(mem_flags::mem_threadgroup);");
      grid_3d |= contains(text, ")gid.z;") || contains(text, ")tid.z;");
      wmma_half |= contains(text, "tg_wmma_half(");
      wmma_bfloat |= contains(text, "tg_wmma_bfloat(");
      wmma_float |= contains(text, "tg_wmma_float(");
      wide_loads |= contains(text, "*((device float4*)(data1+");
      if (std::string(program.name) == "shifted vectors") {
        EXPECT_FALSE(contains(text, "*((device float4*)(data1+")) << "a load at 4i+1 must not be one 16-byte access\n"
                                                                  << text;
        lane_loads |= contains(text, "float4(data1[(");
      }
      sources.push_back(text);
      names.push_back(kernel.name);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const CheckResult batch = tg::test::msl_syntax_check_batch(sources, "all_kernels");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << sources.size() << " kernels rendered to MSL and syntax-checked in one clang run (" << seconds << " s); "
            << refused_float64 << " float64 kernels refused\n";
  if (!batch.ok) {
    for (size_t i = 0; i < sources.size(); ++i) {
      const CheckResult one = tg::test::msl_syntax_check(sources[i], "kernel_" + std::to_string(i));
      EXPECT_TRUE(one.ok) << names[i] << ":\n" << one.diagnostics << "\n" << sources[i];
    }
    FAIL() << "the batch failed:\n" << batch.diagnostics.substr(0, 4000);
  }
  EXPECT_GT(sources.size(), 60u);
  EXPECT_GT(refused_float64, 0) << "the float64 programs were expected to be refused";
  EXPECT_TRUE(threadgroup_memory) << "no kernel shared a reduction or a tile through threadgroup memory and a barrier";
  EXPECT_TRUE(grid_3d) << "no kernel ran on a three-dim grid";
  EXPECT_TRUE(wmma_half && wmma_bfloat && wmma_float)
      << "the tiled matmuls did not use every simdgroup unit: half " << wmma_half << ", bfloat " << wmma_bfloat
      << ", float " << wmma_float;
  EXPECT_TRUE(wide_loads) << "no kernel loaded a float4 in one access";
  EXPECT_TRUE(lane_loads) << "the shifted view's float4 was not loaded lane by lane";
}

// The check must be able to fail: each snippet has one mistake, and a control without it passes.
TEST(MslSyntaxCheck, RejectsWrongMsl) {
  const std::string head =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "kernel void k(device float* data0 [[buffer(0)]], uint3 gid [[threadgroup_position_in_grid]]) {\n";
  const CheckResult control = tg::test::msl_syntax_check(
      head + "  float4 v = float4(data0[0], 1.0f, 2.0f, 3.0f);\n  data0[gid.x] = v[1] + float(half(v[2]));\n}\n",
      "control");
  EXPECT_TRUE(control.ok) << control.diagnostics;
  const struct {
    const char* what;
    const char* body;
  } mistakes[] = {
      {"a float4 assigned to a float", "  float4 v = float4(1.0f);\n  float x = v;\n  data0[0] = x;\n"},
      {"an undeclared function", "  data0[0] = exp(data0[1]);\n"},
      {"a vector with a lane missing", "  float4 v = float4(1.0f, 2.0f, 3.0f);\n  data0[0] = v[0];\n"},
      {"an implicit int4 -> uint4", "  int4 a = int4(1);\n  uint4 b = a;\n  data0[0] = float(b[0]);\n"},
      {"a conversion between vectors of different lanes", "  float4 v = float4(int2(1));\n  data0[0] = v[0];\n"},
      {"as_type between sizes", "  data0[0] = as_type<float>(1L);\n"},
      {"a missing semicolon", "  data0[0] = 1.0f\n"},
  };
  int i = 0;
  for (const auto& m : mistakes) {
    const CheckResult r = tg::test::msl_syntax_check(head + m.body + "}\n", "mistake_" + std::to_string(i++));
    EXPECT_FALSE(r.ok) << m.what << " passed the check";
  }
  const CheckResult attribute = tg::test::msl_syntax_check(
      "#include <metal_stdlib>\nkernel void k(device float* data0 [[bufer(0)]]) {}\n", "misspelt_attribute");
  EXPECT_FALSE(attribute.ok) << "a misspelt attribute passed the check";
  EXPECT_TRUE(contains(attribute.diagnostics, "bufer")) << attribute.diagnostics;
}

// Hand-built kernels: KIR's semantics as MSL spells them, and the check passing on the result.
TEST_F(MetalRender, SpellsKirSemantics) {
  tg::sdk::Kir kir;
  const int out = kir.buffer(TG_DTYPE_FLOAT32, true), in = kir.buffer(TG_DTYPE_FLOAT32),
            n = kir.var(TG_DTYPE_INT64, "n");
  const int gid = kir.global_id(64);
  const int x = kir.load(TG_DTYPE_FLOAT32, in, gid),
            y = kir.op(TG_KIR_MAX, TG_DTYPE_FLOAT32, {x, kir.constant_f(TG_DTYPE_FLOAT32, 0.5)});
  const int a = kir.op(TG_KIR_CAST, TG_DTYPE_INT32, {x});
  const int q = kir.op(TG_KIR_IDIV, TG_DTYPE_INT32, {a, kir.i32(-3)}),
            r = kir.op(TG_KIR_MOD, TG_DTYPE_INT32, {a, kir.i32(7)});
  const int s = kir.op(TG_KIR_SHR, TG_DTYPE_INT32, {kir.op(TG_KIR_ADD, TG_DTYPE_INT32, {q, r}), kir.i32(2)});
  const int wide = kir.op(TG_KIR_MUL, TG_DTYPE_INT64, {kir.op(TG_KIR_CAST, TG_DTYPE_INT64, {s}), n});
  const int sum = kir.op(TG_KIR_ADD, TG_DTYPE_FLOAT32, {y, kir.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {wide})});
  const int h = kir.op(TG_KIR_CAST, TG_DTYPE_FLOAT16, {kir.op(TG_KIR_SQRT, TG_DTYPE_FLOAT32, {sum})});
  const int h2 = kir.op(TG_KIR_MAX, TG_DTYPE_FLOAT16, {h, kir.constant_f(TG_DTYPE_FLOAT16, 0.1)});
  const int bits = kir.op(TG_KIR_BITCAST, TG_DTYPE_UINT16, {h2});
  const int lanes = kir.op(TG_KIR_VECTORIZE, TG_DTYPE_INT32, {q, r}, 2);
  const int wrapped = kir.op(TG_KIR_MUL, TG_DTYPE_INT32, {lanes, lanes}, 2);
  const int back = kir.op(TG_KIR_GEP, TG_DTYPE_INT32, {wrapped}, 1, 1);
  kir.store(out, gid,
            kir.op(TG_KIR_ADD, TG_DTYPE_FLOAT32,
                   {kir.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {bits}), kir.op(TG_KIR_CAST, TG_DTYPE_FLOAT32, {back})}));
  const tg_kir_kernel kernel = kir.kernel("semantics");
  std::string error;
  const std::string text = render(kernel, error);
  ASSERT_EQ(error, "");
  EXPECT_TRUE(contains(text, "constant long& n [[buffer(2)]]")) << text;
  EXPECT_TRUE(contains(text, "(int)tid.x")) << text;
  EXPECT_TRUE(contains(text, "tg_max_float32(")) << "MAX must propagate NaN\n" << text;
  EXPECT_TRUE(contains(text, "tg_max_float16(")) << text;
  EXPECT_TRUE(contains(text, "tg_idiv_int32(") && contains(text, "tg_mod_int32(")) << text;
  EXPECT_TRUE(contains(text, "((int)((uint)")) << "signed ADD must wrap\n" << text;
  EXPECT_TRUE(contains(text, "as_type<int2>(as_type<uint2>(")) << "so must a signed vector MUL\n" << text;
  EXPECT_TRUE(contains(text, "precise::sqrt(")) << text;
  EXPECT_TRUE(contains(text, "as_type<half>(((ushort)11878))")) << "0.1 rounded to the nearest half\n" << text;
  EXPECT_TRUE(contains(text, "as_type<ushort>(")) << text;
  const CheckResult check = tg::test::msl_syntax_check(text, "semantics");
  EXPECT_TRUE(check.ok) << check.diagnostics << "\n" << text;
}

// Metal has no double: a kernel using one is refused by name rather than rendered into invalid MSL.
TEST_F(MetalRender, RefusesFloat64) {
  EXPECT_EQ(caps_.dtypes >> TG_DTYPE_FLOAT64 & 1u, 0u);
  tg::sdk::Kir kir;
  const int out = kir.buffer(TG_DTYPE_FLOAT64, true);
  kir.op(TG_KIR_STORE, TG_DTYPE_FLOAT64, {out, kir.i32(0), kir.constant_f(TG_DTYPE_FLOAT64, 1.0)});
  std::string error;
  render(kir.kernel("doubles"), error);
  EXPECT_TRUE(contains(error, "metal renderer_render") && contains(error, "kernel doubles") &&
              contains(error, "Metal has no double"))
      << error;
}

// Apple's simdgroup_matrix layout (8x8, 32 threads, thread_elements()[0..1]), written as Apple's quadrants: lane l
// is in quad q = l / 4; its row is 4 (q / 4) + (l / 2) % 4 and its first column 2 (q & 2) + 2 (l % 2), the
// second element the column after it. Every matrix of the unit (A, B, C) is laid out that way.
std::pair<uint32_t, uint32_t> simdgroup_element(uint32_t lane, uint32_t elem) {
  const uint32_t quad = lane / 4;
  return {(quad / 4) * 4 + (lane / 2) % 4, (quad & 2) * 2 + (lane % 2) * 2 + elem};
}

// The claimed units: well formed, 8x8x8 on 32 threads with 2-lane fragments, and their maps name the elements
// Apple's layout puts in each thread. Then one D = A * B + C through the maps on a host model of the simdgroup
// (each thread's elements placed by Apple's layout) equals the plain product.
TEST_F(MetalRender, TensorCoreMapsMatchTheSimdgroupLayout) {
  ASSERT_EQ(caps_.ntensor_cores, 3u);
  std::vector<uint32_t> inputs;
  for (uint32_t t = 0; t < caps_.ntensor_cores; ++t) {
    const std::optional<tg_tensor_core> unit = tg::sdk::tensor_core_at(caps_, t);
    ASSERT_TRUE(unit.has_value());
    const tg_tensor_core& tc = *unit;
    EXPECT_EQ(tg::sdk::tc_problem(tc), "");
    EXPECT_EQ(tc.m, 8u);
    EXPECT_EQ(tc.n, 8u);
    EXPECT_EQ(tc.k, 8u);
    EXPECT_EQ(tc.threads, 32u);
    EXPECT_EQ(tc.dtype_acc, static_cast<uint32_t>(TG_DTYPE_FLOAT32));
    inputs.push_back(tc.dtype_in);
    for (const uint8_t* map : {tc.a_map, tc.b_map, tc.c_map}) {
      ASSERT_EQ(tg::sdk::tc_lanes(map, 6), 2u);
      for (uint32_t lane = 0; lane < 32; ++lane)
        for (uint32_t e = 0; e < 2; ++e)
          EXPECT_EQ(tg::sdk::tc_coord(map, 3, 3, lane, e), simdgroup_element(lane, e))
              << "lane " << lane << " elem " << e;
    }
    std::mt19937 rng(1234 + t);
    std::uniform_int_distribution<int> value(-8, 8);
    float a[8][8], b[8][8], c[8][8];
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j)
        a[i][j] = static_cast<float>(value(rng)), b[i][j] = static_cast<float>(value(rng)),
        c[i][j] = static_cast<float>(value(rng));
    float fa[32][2], fb[32][2], fc[32][2];  // each thread's fragments, gathered by the maps (as the core does)
    for (uint32_t lane = 0; lane < 32; ++lane)
      for (uint32_t e = 0; e < 2; ++e) {
        auto [ar, ac] = tg::sdk::tc_coord(tc.a_map, 3, 3, lane, e);
        auto [br, bc] = tg::sdk::tc_coord(tc.b_map, 3, 3, lane, e);
        auto [cr, cc] = tg::sdk::tc_coord(tc.c_map, 3, 3, lane, e);
        fa[lane][e] = a[ar][ac], fb[lane][e] = b[br][bc], fc[lane][e] = c[cr][cc];
      }
    float ma[8][8], mb[8][8], mc[8][8];  // the simdgroup's matrices, from thread_elements() by Apple's layout
    for (uint32_t lane = 0; lane < 32; ++lane)
      for (uint32_t e = 0; e < 2; ++e) {
        auto [r, col] = simdgroup_element(lane, e);
        ma[r][col] = fa[lane][e], mb[r][col] = fb[lane][e], mc[r][col] = fc[lane][e];
      }
    for (uint32_t lane = 0; lane < 32; ++lane)
      for (uint32_t e = 0; e < 2; ++e) {
        auto [r, col] =
            simdgroup_element(lane, e);  // the thread's D elements, as simdgroup_multiply_accumulate leaves them
        float d = mc[r][col];
        for (int k = 0; k < 8; ++k) d += ma[r][k] * mb[k][col];
        auto [dr, dc] = tg::sdk::tc_coord(tc.c_map, 3, 3, lane, e);  // where the core stores it
        float expected = c[dr][dc];
        for (int k = 0; k < 8; ++k) expected += a[dr][k] * b[k][dc];
        EXPECT_EQ(d, expected) << "lane " << lane << " elem " << e;
      }
  }
  EXPECT_EQ(inputs, (std::vector<uint32_t>{TG_DTYPE_FLOAT16, TG_DTYPE_BFLOAT16, TG_DTYPE_FLOAT32}));
}

// No Metal here (the default libobjc and Metal.framework paths are macOS's): zero devices, and device_open and a
// device-less compiler_create say which library is missing, in one line. Slots given no device say so.
TEST_F(MetalRender, SlotsThatNeedTheRuntimeSayWhy) {
  EXPECT_STREQ(api_->device_name, "METAL");
  uint32_t count = 99;
  ASSERT_EQ(take_message(api_->device_count(&count)), "");
  if (count != 0) GTEST_SKIP() << "this machine has Metal";
  int32_t code = 0;
  tg_device device = nullptr;
  const std::string open = take_message(api_->device_open(0, &device), &code);
  EXPECT_EQ(code, TG_ERR_UNAVAILABLE);
  EXPECT_TRUE(
      contains(open, "metal device_open: no METAL device 0: no Objective-C runtime: /usr/lib/libobjc.A.dylib: ") &&
      contains(open, "(Metal exists only on macOS)"))
      << open;
  EXPECT_EQ(open.find('\n'), std::string::npos) << open;
  tg_compiler compiler = nullptr;
  const std::string compile = take_message(api_->compiler_create(nullptr, &compiler), &code);
  EXPECT_EQ(code, TG_ERR_UNAVAILABLE);
  EXPECT_TRUE(contains(compile, "metal compiler_create: no Objective-C runtime")) << compile;
  tg_buffer_desc buffer{};
  const std::string alloc = take_message(api_->allocator_alloc(nullptr, 64, &buffer), &code);
  EXPECT_EQ(code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(alloc, "metal allocator_alloc")) << alloc;
  tg_hwqueue queue = nullptr;
  EXPECT_TRUE(contains(take_message(api_->hwqueue_create(nullptr, &queue), &code), "metal hwqueue_create"));
  EXPECT_EQ(code, TG_ERR_INVALID_ARGUMENT);
  tg_renderer other = nullptr;
  const std::string target = take_message(api_->renderer_create(nullptr, "CUDA", &other), &code);
  EXPECT_EQ(code, TG_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(target, "no renderer 'CUDA' on METAL")) << target;
}

}  // namespace
