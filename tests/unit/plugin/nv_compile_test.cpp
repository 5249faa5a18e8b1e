// Compile-only test of the NV plugin (ctest label nv-compile): schedules a set of Tensor programs (elementwise over
// every dtype the plugin claims, casts, reductions, matmul, softmax, movement views, variables), lowers each kernel
// with the NV renderer's caps, renders it with the NV renderer and compiles it with NVRTC for sm_80 and sm_90.
// No GPU is needed: the renderer and compiler are made with a NULL device (the compiler then targets NV_ARCH).
//
// The NV plugin is loaded from TG_NV_PLUGIN_PATH (compiled in; the environment variable overrides it), the way the
// core loads plugins. Tensors live on the CPU device, which only provides their buffers' dtypes to the lowering.
#include "codegen/lower.hpp"
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

namespace {

using tg::DType;
using tg::Tensor;
namespace dt = tg::dtypes;

const tg_plugin_api* nv_api() {
  static const tg_plugin_api* api = [] {
    const char* env = std::getenv("TG_NV_PLUGIN_PATH");
    const char* path = env != nullptr && *env != '\0' ? env : TG_NV_PLUGIN_PATH;
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return static_cast<const tg_plugin_api*>(nullptr);
    auto get = reinterpret_cast<tg_plugin_get_api_fn>(dlsym(handle, TG_ABI_ENTRY_POINT));
    tg_status_t status = nullptr;
    return get ? get(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &status) : nullptr;
  }();
  return api;
}

// A status's message (freed), or "" for success.
std::string take(tg_status_t status) {
  if (status == nullptr) return "";
  std::string out = status->message ? status->message : "(no message)";
  if (out.empty()) out = "(empty message)";
  nv_api()->status_free(status);
  return out;
}

struct Program {
  const char* name;
  std::function<Tensor()> make;
};

std::vector<Program> programs() {
  std::vector<Program> out;
  const auto arange = [](int64_t n, DType d) { return Tensor::arange(0, static_cast<double>(n)).cast(d); };
  // elementwise over every dtype: arithmetic where it means something, comparisons and where everywhere
  for (DType d : dt::all) {
    out.push_back({"elementwise", [=] {
                     const Tensor a = arange(64, d), b = arange(64, d).flip({0});
                     if (d == dt::bool_) return Tensor::where(a.eq(b), a, b.logical_not());
                     Tensor r = (a + b) * a - b;
                     if (d.is_float()) r = r / (b + Tensor::full({64}, 1.0, d));
                     if (!d.is_float()) r = r.idiv(b + Tensor::full({64}, 1.0, d)) + a.mod(b);
                     return Tensor::where(a.lt(b), r, a.maximum(b)).contiguous();
                   }});
    out.push_back({"cast to float32", [=] { return arange(64, d).cast(dt::float32); }});
    out.push_back({"cast from float32", [=] { return (Tensor::arange(0, 64).cast(dt::float32) * 0.37).cast(d); }});
    if (d.itemsize() == 2 && d != dt::bool_) out.push_back({"bitcast", [=] { return arange(16, d).bitcast(dt::int16); }});
  }
  out.push_back({"transcendentals", [] {
                   const Tensor x = Tensor::arange(1, 33).cast(dt::float32) * 0.1;
                   return x.exp() + x.log() + x.sin() + x.sqrt() + x.tanh() + x.gelu() + x.sigmoid() + x.pow(1.5);
                 }});
  out.push_back({"transcendentals float64", [] { return (Tensor::arange(1, 33).cast(dt::float64) * 0.1).exp().log(); }});
  out.push_back({"transcendentals half", [] { return (Tensor::arange(1, 33).cast(dt::float16) * 0.1).exp().sqrt(); }});
  for (DType d : {dt::float32, dt::int32, dt::float16, dt::bfloat16, dt::int64, dt::float64}) {
    out.push_back({"sum", [=] { return arange(256, d).reshape({16, 16}).sum({1}); }});
    out.push_back({"max min", [=] { return arange(256, d).reshape({16, 16}).max({0}) + arange(256, d).reshape({16, 16}).min({1}); }});
    out.push_back({"full reduce", [=] { return arange(1000, d).sum(); }});
  }
  // the GPU paths: a work-group per output sharing two long reduces through shared memory, a three-dim grid
  out.push_back({"grouped reduces", [] {
                   const Tensor x = Tensor::arange(0, 3 * 3000).cast(dt::float32).reshape({3, 3000});
                   return x.sum({1}) + x.max({1});
                 }});
  out.push_back({"three-dim grid", [] { return Tensor::arange(0, 6 * 40 * 96).cast(dt::float32).reshape({6, 40, 96}) * 2.0; }});
  out.push_back({"mean", [] { return Tensor::arange(0, 60).cast(dt::float32).reshape({3, 4, 5}).mean({0, 2}); }});
  out.push_back({"argmax", [] { return Tensor::arange(0, 60).cast(dt::float32).reshape({6, 10}).argmax(1); }});
  for (DType d : {dt::float32, dt::float16, dt::bfloat16}) {
    out.push_back({"matmul", [=] {
                     return Tensor::arange(0, 64 * 32).cast(d).reshape({64, 32}).matmul(
                         Tensor::arange(0, 32 * 48).cast(d).reshape({32, 48}));
                   }});
  }
  // tiled through shared memory (float32) and on tensor cores (16-bit floats), with a batch on the grid's z
  for (DType d : {dt::float32, dt::float16, dt::bfloat16}) {
    out.push_back({"tiled matmul", [=] {
                     return Tensor::arange(0, 2 * 128 * 64).cast(d).reshape({2, 128, 64}).matmul(
                         Tensor::arange(0, 2 * 64 * 128).cast(d).reshape({2, 64, 128}));
                   }});
  }
  // float4 accesses: aligned where the index is a multiple of 4, lane by lane where a view shifts it by one
  out.push_back({"aligned vectors", [] { return Tensor::arange(0, 4096).cast(dt::float32).contiguous() * 2.0; }});
  out.push_back({"shifted vectors", [] { return Tensor::arange(0, 4100).cast(dt::float32).contiguous().shrink(0, 1, 4096) * 2.0; }});
  out.push_back({"softmax", [] { return Tensor::arange(0, 128).cast(dt::float32).reshape({8, 16}).softmax(-1); }});
  out.push_back({"log_softmax", [] { return Tensor::arange(0, 128).cast(dt::float32).reshape({8, 16}).log_softmax(0); }});
  out.push_back({"movement", [] {
                   const Tensor x = Tensor::arange(0, 120).cast(dt::float32).reshape({2, 3, 4, 5});
                   return x.permute({3, 1, 0, 2}).pad({{1, 0}, {0, 2}, {0, 0}, {1, 1}}).shrink({{0, 5}, {1, 4}, {0, 2}, {1, 5}})
                       .flip({1}).contiguous();
                 }});
  out.push_back({"expand", [] { return Tensor::arange(0, 4).cast(dt::float32).reshape({4, 1}).expand({4, 8}) + 1.0; }});
  out.push_back({"cat", [] { return Tensor::cat({Tensor::arange(0, 6).reshape({2, 3}), Tensor::arange(0, 9).reshape({3, 3})}, 0); }});
  out.push_back({"gather", [] {
                   return Tensor::arange(0, 20).cast(dt::float32).reshape({4, 5}).gather(1, Tensor::arange(0, 8).mod(Tensor::full({8}, 5, dt::int32)).reshape({4, 2}));
                 }});
  out.push_back({"variable shrink", [] {
                   const tg::Variable v("start_pos", 0, 30);
                   return Tensor::arange(0, 64).cast(dt::float32).shrink(0, v.bind(3), 8) * 2.0;
                 }});
  out.push_back({"int64 variable", [] {
                   const tg::Variable v("big", 0, int64_t{1} << 40, dt::int64);
                   return Tensor::from_variable(v.bind(int64_t{1} << 35)) + Tensor::full({4}, 1, dt::int64);
                 }});
  return out;
}

// One render + one NVRTC compile per kernel and arch; every failure is reported with its source.
TEST(NvCompile, EveryKernelCompilesForSm80AndSm90) {
  setenv("DEV", "CPU", 1);  // tensors only need a device for their buffers
  setenv("NV_ARCH", "sm_90", 1);  // the device-less renderer's arch: tensor cores are claimed from sm_80 on
  const tg_plugin_api* api = nv_api();
  ASSERT_NE(api, nullptr) << "cannot load the NV plugin: " << dlerror();
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take(api->renderer_create(nullptr, "CUDA", &renderer)), "");
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_EQ(take(api->renderer_get_caps(renderer, &caps)), "");
  std::vector<tg_compiler> compilers;
  for (const char* arch : {"sm_80", "sm_90"}) {
    setenv("NV_ARCH", arch, 1);
    tg_compiler compiler = nullptr;
    const std::string made = take(api->compiler_create(nullptr, &compiler));
    if (made.find("cannot load NVRTC") != std::string::npos) GTEST_SKIP() << made;
    ASSERT_EQ(made, "") << arch;
    compilers.push_back(compiler);
  }
  int kernels = 0;
  bool shared_memory = false, grid_3d = false, tensor_cores = false;  // the GPU paths were compiled too
  bool wide_access = false, lane_access = false;
  for (const Program& program : programs()) {
    SCOPED_TRACE(program.name);
    const Tensor t = program.make();
    std::vector<std::shared_ptr<tg::rt::Buffer>> outs;
    std::vector<tg::sched::ScheduleItem> items = tg::sched::create_schedule({t.node()}, t.device(), outs);
    for (const auto& item : items) {
      if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
      const tg::codegen::KirProgram kir = tg::codegen::lower_kernel(item.kernel, item.bufs, caps);
      const tg_kir_kernel kernel = kir.view();
      const char* source = nullptr;
      const std::string rendered = take(api->renderer_render(renderer, &kernel, &source));
      ASSERT_EQ(rendered, "") << kir.dump();
      const std::string text = source;
      shared_memory |= text.find("__shared__") != std::string::npos && text.find("__syncthreads();") != std::string::npos;
      grid_3d |= text.find("blockIdx.z") != std::string::npos;
      tensor_cores |= text.find("mma.sync.aligned.m16n8k16") != std::string::npos;
      wide_access |= text.find("(*((tg_vec<float,4>*)(data1+") != std::string::npos;
      if (std::string(program.name) == "shifted vectors") {
        EXPECT_EQ(text.find("(*((tg_vec<float,4>*)(data1+"), std::string::npos) << "a load at 4i+1 must not be one 16-byte access\n" << text;
        lane_access |= text.find("{{data1[(") != std::string::npos;
      }
      for (size_t c = 0; c < compilers.size(); ++c) {
        void* blob = nullptr;
        size_t size = 0;
        const std::string compiled = take(api->compiler_compile(compilers[c], source, kernel.name, &blob, &size));
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
  const tg_plugin_api* api = nv_api();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->device_name, "NV");
  uint32_t count = 99;
  ASSERT_EQ(take(api->device_count(&count)), "");
  if (count > 0) GTEST_SKIP() << count << " NV device(s) present";
  tg_device device = nullptr;
  const std::string why = take(api->device_open(0, &device));
  EXPECT_NE(why.find("nv device_open"), std::string::npos) << why;
  std::cout << "no NV device: " << why << "\n";
}

}  // namespace
