// Compile-only test of the NV plugin (ctest label nv-compile): schedules a set of Tensor programs (elementwise over
// every dtype the plugin claims, casts, reductions, matmul, softmax, movement views, variables), lowers each kernel
// with the NV renderer's caps, renders it with the NV renderer and compiles it with NVRTC for sm_80 and sm_90.
// No GPU is needed: the renderer and compiler are made with a NULL device (the compiler then targets NV_ARCH).
//
// The NV plugin is loaded from TG_NV_PLUGIN_PATH (compiled in; the environment variable overrides it), the way the
// core loads plugins. Tensors live on the CPU device, which only provides their buffers' dtypes to the lowering.
#include "codegen/lower.hpp"
#include "compile_test_programs.hpp"
#include "plugin_api.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return tg::test::path_from_env("TG_NV_PLUGIN_PATH", TG_NV_PLUGIN_PATH); }

namespace {

using tg::test::take_message;

using tg::DType;
using tg::Tensor;
namespace dt = tg::dtypes;

using Program = tg::test::Program;

// One render + one NVRTC compile per kernel and arch; every failure is reported with its source.
TEST(NvCompile, EveryKernelCompilesForSm80AndSm90) {
  setenv("DEV", "CPU", 1);        // tensors only need a device for their buffers
  setenv("NV_ARCH", "sm_90", 1);  // the device-less renderer's arch: tensor cores are claimed from sm_80 on
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take_message(api->renderer_create(nullptr, "CUDA", &renderer)), "");
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_EQ(take_message(api->renderer_get_caps(renderer, &caps)), "");
  std::vector<tg_compiler> compilers;
  for (const char* arch : {"sm_80", "sm_90"}) {
    setenv("NV_ARCH", arch, 1);
    tg_compiler compiler = nullptr;
    const std::string made = take_message(api->compiler_create(nullptr, &compiler));
    if (made.find("cannot load NVRTC") != std::string::npos) GTEST_SKIP() << made;
    ASSERT_EQ(made, "") << arch;
    compilers.push_back(compiler);
  }
  int kernels = 0;
  bool shared_memory = false, grid_3d = false, tensor_cores = false;  // the GPU paths were compiled too
  bool wide_access = false, lane_access = false;
  for (const Program& program : tg::test::compile_test_programs()) {
    SCOPED_TRACE(program.name);
    const Tensor t = program.make();
    std::vector<tg::sched::ScheduleItem> items = tg::sched::create_schedule({t.node()}, t.device()).items;
    for (const auto& item : items) {
      if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
      const tg::codegen::KirProgram kir = tg::codegen::lower_kernel(item.kernel, caps);
      const tg_kir_kernel kernel = kir.view();
      const char* source = nullptr;
      const std::string rendered = take_message(api->renderer_render(renderer, &kernel, &source));
      ASSERT_EQ(rendered, "") << kir.dump();
      const std::string text = source;
      shared_memory |=
          text.find("__shared__") != std::string::npos && text.find("__syncthreads();") != std::string::npos;
      grid_3d |= text.find("blockIdx.z") != std::string::npos;
      tensor_cores |= text.find("mma.sync.aligned.m16n8k16") != std::string::npos;
      wide_access |= text.find("(*((tg_vec<float,4>*)(data1+") != std::string::npos;
      if (std::string(program.name) == "shifted vectors") {
        EXPECT_EQ(text.find("(*((tg_vec<float,4>*)(data1+"), std::string::npos)
            << "a load at 4i+1 must not be one 16-byte access\n"
            << text;
        lane_access |= text.find("{{data1[(") != std::string::npos;
      }
      for (size_t c = 0; c < compilers.size(); ++c) {
        void* blob = nullptr;
        size_t size = 0;
        const std::string compiled =
            take_message(api->compiler_compile(compilers[c], source, kernel.name, &blob, &size));
        EXPECT_EQ(compiled, "") << (c == 0 ? "sm_80" : "sm_90") << "\n" << source;
        EXPECT_GT(size, 0u);
        if (blob != nullptr) api->blob_free(blob);
      }
      ++kernels;
    }
  }
  std::cout << kernels << " kernels compiled for sm_80 and sm_90\n";
  EXPECT_GT(kernels, 60);
  EXPECT_TRUE(shared_memory) << "no kernel shared a reduction through __shared__ memory";
  EXPECT_TRUE(grid_3d) << "no kernel ran on a three-dim grid";
  EXPECT_TRUE(tensor_cores) << "no float16/bfloat16 matmul used mma.sync";
  EXPECT_TRUE(wide_access) << "no kernel loaded a float4 in one access";
  EXPECT_TRUE(lane_access) << "the shifted view's float4 was not loaded lane by lane";
  for (tg_compiler compiler : compilers) api->compiler_destroy(compiler);
  api->renderer_destroy(renderer);
}

// Without a GPU the plugin still loads, and says there are no devices; device_open says why.
TEST(NvCompile, LoadsWithoutAGpuAndCountsDevices) {
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->device_name, "NV");
  uint32_t count = 99;
  ASSERT_EQ(take_message(api->device_count(&count)), "");
  if (count > 0) GTEST_SKIP() << count << " NV device(s) present";
  tg_device device = nullptr;
  const std::string why = take_message(api->device_open(0, &device));
  EXPECT_NE(why.find("nv device_open"), std::string::npos) << why;
  std::cout << "no NV device: " << why << "\n";
}

}  // namespace
