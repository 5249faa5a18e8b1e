// Compile-only test of the AMD plugin (ctest label amd-compile): schedules the Tensor programs of
// compile_test_programs.hpp, lowers each kernel with the AMD renderer's caps, renders it with the AMD renderer and
// compiles it with LLVM's AMDGPU backend for gfx1100 (RDNA3, wave32) and gfx942 (CDNA3, wave64). Each code object is
// read with an ELF reader of the test's own (code_object.hpp) and its kernel descriptor checked against the KIR:
// kernarg_size is the aligned sum of the parameters (buffers 8 bytes, variables their own size, each at its natural
// alignment: the seed's fix), the LDS size covers the kernel's DEFINE_LOCALs, and the wave size is the arch's.
// No GPU and no ROCm are needed: the renderer and compiler are made with a NULL device (the compiler then targets
// AMD_ARCH).
#include "../plugin_api.hpp"
#include "code_object.hpp"
#include "codegen/lower.hpp"
#include "compile_test_programs.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return tg::test::path_from_env("TG_AMD_PLUGIN_PATH", TG_AMD_PLUGIN_PATH); }

namespace {

using tg::test::take_message;

using tg::Tensor;
namespace amdgpu = tg::test::amdgpu;

// The kernarg segment the seed's fix gives a kernel: each parameter rounded up to its own size (buffers are 8-byte
// addresses, variables 1, 2, 4 or 8 bytes), in signature order. Computed here from the KIR, not with the ABI helper.
uint32_t expected_kernarg_size(const tg_kir_kernel& kernel) {
  static const uint32_t sizes[TG_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  uint32_t size = 0;
  for (uint32_t p = 0; p < kernel.nparams; ++p) {
    const uint32_t sz = kernel.params[p].kind == TG_PARAM_VAR ? sizes[kernel.params[p].dtype] : 8;
    size = (size + sz - 1) / sz * sz + sz;
  }
  return size;
}

// Bytes of the kernel's work-group arrays, and how many there are.
std::pair<uint64_t, uint32_t> local_bytes(const tg_kir_kernel& kernel) {
  static const uint32_t sizes[TG_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  uint64_t bytes = 0;
  uint32_t count = 0;
  for (uint32_t i = 0; i < kernel.ninsts; ++i) {
    const tg_kir_inst& in = kernel.insts[i];
    if (in.op != TG_KIR_DEFINE_LOCAL) continue;
    bytes += static_cast<uint64_t>(in.arg.i) * sizes[in.dtype] * in.vcount;
    ++count;
  }
  return {bytes, count};
}

struct Target {
  const char* arch;
  uint32_t mach;
  bool wave32;
  tg_renderer renderer = nullptr;
  tg_compiler compiler = nullptr;
  tg_renderer_caps caps{};
};

// Checks one code object against the KIR it came from; returns what is wrong ("" when nothing is).
std::string check_code_object(const std::vector<unsigned char>& blob, const tg_kir_kernel& kernel, const Target& t,
                              std::map<std::string, int64_t>& lds_slack) {
  std::string error;
  const amdgpu::CodeObject co = amdgpu::read_code_object(blob, kernel.name, error);
  if (!error.empty()) return error;
  std::string out;
  if (co.machine != amdgpu::kEmAmdgpu) out += tg::sdk::cat("e_machine ", co.machine, " is not EM_AMDGPU; ");
  if (co.os_abi != amdgpu::kOsAbiAmdgpuHsa) out += tg::sdk::cat("OS/ABI ", +co.os_abi, " is not AMDGPU_HSA; ");
  if ((co.flags & amdgpu::kEfAmdgpuMachMask) != t.mach)
    out += tg::sdk::cat("e_flags mach 0x", std::hex, (co.flags & amdgpu::kEfAmdgpuMachMask), std::dec, " is not ",
                        t.arch, "'s; ");
  const amdgpu::KernelDescriptor& kd = *co.descriptor;
  if (kd.kernarg_size != expected_kernarg_size(kernel))
    out += tg::sdk::cat("kernarg_size ", kd.kernarg_size, " != the aligned sum of the parameters ",
                        expected_kernarg_size(kernel), "; ");
  const auto [lds, nlocal] = local_bytes(kernel);
  // LLVM lays the arrays out one after another, each at its alignment (16 here), so the segment is at least their
  // bytes and at most 15 more per array
  if (kd.group_segment_fixed_size < lds || kd.group_segment_fixed_size > lds + 15u * nlocal)
    out += tg::sdk::cat("group_segment_fixed_size ", kd.group_segment_fixed_size, " for ", nlocal, " arrays of ", lds,
                        " bytes; ");
  if (nlocal != 0) {
    const int64_t slack = static_cast<int64_t>(kd.group_segment_fixed_size) - static_cast<int64_t>(lds);
    lds_slack[t.arch] = std::max(lds_slack[t.arch], slack);
  }
  const bool wave32 = (kd.kernel_code_properties & amdgpu::kEnableWavefrontSize32) != 0;
  if (wave32 != t.wave32) out += tg::sdk::cat("ENABLE_WAVEFRONT_SIZE32 is ", wave32, " on ", t.arch, "; ");
  return out;
}

// One render + one compile per kernel and arch; every failure is reported with its source and diagnostics.
TEST(AmdCompile, EveryKernelCompilesForGfx1100AndGfx942) {
  setenv("DEV", "CPU", 1);  // tensors only need a device for their buffers
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  std::vector<Target> targets = {{"gfx1100", amdgpu::kMachGfx1100, true}, {"gfx942", amdgpu::kMachGfx942, false}};
  for (Target& t : targets) {
    setenv("AMD_ARCH", t.arch, 1);  // what the device-less renderer and compiler target
    ASSERT_EQ(take_message(api->renderer_create(nullptr, "HIP", &t.renderer)), "") << t.arch;
    t.caps.struct_size = sizeof(t.caps);
    ASSERT_EQ(take_message(api->renderer_get_caps(t.renderer, &t.caps)), "") << t.arch;
    ASSERT_EQ(take_message(api->compiler_create(nullptr, &t.compiler)), "") << t.arch;
  }
  int kernels = 0;
  bool shared_memory = false, grid_3d = false, wide_access = false, lane_access = false;
  std::map<std::string, int> tensor_core_kernels;  // per builtin: the kernels that used it
  uint32_t max_kernarg = 0;
  std::map<std::string, int64_t> lds_slack;
  for (const tg::test::Program& program : tg::test::compile_test_programs()) {
    SCOPED_TRACE(program.name);
    const Tensor out = program.make();
    std::vector<tg::sched::ScheduleItem> items = tg::sched::create_schedule({out.node()}, out.device()).items;
    for (const auto& item : items) {
      if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
      for (const Target& t : targets) {
        const tg::codegen::KirProgram kir = tg::codegen::lower_kernel(item.kernel, t.caps);
        const tg_kir_kernel kernel = kir.view();
        const char* source = nullptr;
        ASSERT_EQ(take_message(api->renderer_render(t.renderer, &kernel, &source)), "") << t.arch << "\n" << kir.dump();
        const std::string text = source;
        shared_memory |= text.find("address_space(3)") != std::string::npos &&
                         text.find("__builtin_amdgcn_s_barrier()") != std::string::npos;
        grid_3d |= text.find("__builtin_amdgcn_workgroup_id_z()") != std::string::npos;
        for (const char* builtin :
             {"__builtin_amdgcn_wmma_f32_16x16x16_f16_w32(", "__builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(",
              "__builtin_amdgcn_mfma_f32_16x16x16f16(", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k("})
          if (text.find(builtin) != std::string::npos) {
            ++tensor_core_kernels[builtin];
            const bool wmma = std::string(builtin).find("wmma") != std::string::npos;
            EXPECT_EQ(wmma, t.wave32) << t.arch << " used " << builtin;
          }
        wide_access |= text.find("(*((tg_vec<float,4>*)(data1+") != std::string::npos;
        if (std::string(program.name) == "shifted vectors") {
          EXPECT_EQ(text.find("(*((tg_vec<float,4>*)(data1+"), std::string::npos)
              << "a load at 4i+1 must not be one 16-byte access\n"
              << text;
          lane_access |= text.find("{{(float)(data1[(") != std::string::npos;
        }
        void* blob = nullptr;
        size_t size = 0;
        const std::string compiled = take_message(api->compiler_compile(t.compiler, source, kernel.name, &blob, &size));
        EXPECT_EQ(compiled, "") << t.arch << "\n" << source;
        if (blob == nullptr) continue;
        const std::vector<unsigned char> bytes(static_cast<unsigned char*>(blob),
                                               static_cast<unsigned char*>(blob) + size);
        api->blob_free(blob);
        EXPECT_EQ(check_code_object(bytes, kernel, t, lds_slack), "") << t.arch << " kernel " << kernel.name << "\n"
                                                                      << source;
        max_kernarg = std::max(max_kernarg, expected_kernarg_size(kernel));
        ++kernels;
      }
    }
  }
  std::cout << kernels << " kernels compiled (each program's kernels for gfx1100 and gfx942); largest kernarg segment "
            << max_kernarg << " bytes\n";
  for (const auto& [arch, slack] : lds_slack)
    std::cout << arch << ": LDS segment at most " << slack << " bytes above the DEFINE_LOCALs' sum\n";
  EXPECT_GT(kernels, 120);
  // the float16 and bfloat16 tiled matmuls ran on the matrix units of both archs
  for (const auto& [builtin, count] : tensor_core_kernels) std::cout << count << " kernel(s) used " << builtin << ")\n";
  EXPECT_EQ(tensor_core_kernels.size(), 4u) << "WMMA (gfx1100) and MFMA (gfx942), float16 and bfloat16";
  EXPECT_TRUE(shared_memory) << "no kernel shared a reduction through LDS";
  EXPECT_TRUE(grid_3d) << "no kernel ran on a three-dim grid";
  EXPECT_TRUE(wide_access) << "no kernel loaded a float4 in one access";
  EXPECT_TRUE(lane_access) << "the shifted view's float4 was not loaded lane by lane";
  for (Target& t : targets) {
    api->compiler_destroy(t.compiler);
    api->renderer_destroy(t.renderer);
  }
}

// The kernarg layout with variables of every size: each at its natural alignment, the segment their aligned sum
// (by hand: the buffer @0, int8 @8, int64 @16, int16 @24, int32 @28 -> 32 bytes).
TEST(AmdCompile, KernargSegmentIsTheAlignedSumOfMixedParameters) {
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  setenv("AMD_ARCH", "gfx942", 1);
  tg_renderer renderer = nullptr;
  tg_compiler compiler = nullptr;
  ASSERT_EQ(take_message(api->renderer_create(nullptr, nullptr, &renderer)), "");
  ASSERT_EQ(take_message(api->compiler_create(nullptr, &compiler)), "");
  // out[0] = (float)(a + b + c + d), a int8, b int64, c int16, d int32
  const char* names[] = {"data0", "a", "b", "c", "d"};
  const uint32_t dtypes[] = {TG_DTYPE_FLOAT32, TG_DTYPE_INT8, TG_DTYPE_INT64, TG_DTYPE_INT16, TG_DTYPE_INT32};
  std::vector<tg_kir_param> params;
  for (int p = 0; p < 5; ++p)
    params.push_back(
        {p == 0 ? uint32_t{TG_PARAM_BUFFER} : uint32_t{TG_PARAM_VAR}, dtypes[p], p == 0 ? 1u : 0u, 0, names[p]});
  std::vector<tg_kir_inst> insts;
  std::vector<int32_t> pool;
  const auto add = [&](uint16_t op, uint8_t dtype, std::vector<int32_t> srcs, int64_t arg) {
    tg_kir_inst in{};
    in.op = op, in.dtype = dtype, in.vcount = 1, in.nsrc = static_cast<uint8_t>(srcs.size());
    in.src_start = static_cast<uint32_t>(pool.size()), in.arg.i = arg;
    pool.insert(pool.end(), srcs.begin(), srcs.end());
    insts.push_back(in);
    return static_cast<int32_t>(insts.size() - 1);
  };
  int32_t sum = -1;
  const int32_t out = add(TG_KIR_PARAM, TG_DTYPE_FLOAT32, {}, 0);
  for (int p = 1; p < 5; ++p) {
    const int32_t v = add(TG_KIR_PARAM, static_cast<uint8_t>(dtypes[p]), {}, p);
    const int32_t wide = add(TG_KIR_CAST, TG_DTYPE_INT64, {v}, 0);
    sum = sum < 0 ? wide : add(TG_KIR_ADD, TG_DTYPE_INT64, {sum, wide}, 0);
  }
  const int32_t value = add(TG_KIR_CAST, TG_DTYPE_FLOAT32, {sum}, 0);
  add(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, add(TG_KIR_CONST, TG_DTYPE_INT32, {}, 0), value}, 0);
  const tg_kir_kernel kernel{sizeof(tg_kir_kernel),
                             "mixed_args",
                             insts.data(),
                             static_cast<uint32_t>(insts.size()),
                             static_cast<uint32_t>(pool.size()),
                             pool.data(),
                             params.data(),
                             5,
                             0,
                             nullptr,
                             0,
                             0};
  const char* source = nullptr;
  ASSERT_EQ(take_message(api->renderer_render(renderer, &kernel, &source)), "");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_EQ(take_message(api->compiler_compile(compiler, source, kernel.name, &blob, &size)), "") << source;
  const std::vector<unsigned char> bytes(static_cast<unsigned char*>(blob), static_cast<unsigned char*>(blob) + size);
  api->blob_free(blob);
  std::string error;
  const amdgpu::CodeObject co = amdgpu::read_code_object(bytes, "mixed_args", error);
  ASSERT_EQ(error, "") << source;
  EXPECT_EQ(co.descriptor->kernarg_size, 32u) << source;
  EXPECT_EQ(co.descriptor->group_segment_fixed_size, 0u);
  EXPECT_EQ(co.descriptor->kernel_code_properties & amdgpu::kEnableWavefrontSize32, 0) << "gfx942 runs wave64";
  api->compiler_destroy(compiler);
  api->renderer_destroy(renderer);
}

// A broken source is a compile error that carries clang's diagnostics (file, line, what); a bad arch is refused with
// a message naming it; an unknown renderer target names the ones there are.
TEST(AmdCompile, BadInputIsOneClearError) {
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  setenv("AMD_ARCH", "gfx1100", 1);
  tg_compiler compiler = nullptr;
  ASSERT_EQ(take_message(api->compiler_create(nullptr, &compiler)), "");
  void* blob = nullptr;
  size_t size = 0;
  tg_status_t status =
      api->compiler_compile(compiler, "extern \"C\" void broken( { nonsense; }", "broken", &blob, &size);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->code, TG_ERR_COMPILE);
  const std::string message = take_message(status);
  EXPECT_NE(message.find("clang cannot compile kernel broken for gfx1100"), std::string::npos) << message;
  EXPECT_NE(message.find("broken.hip.cpp:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("error:"), std::string::npos) << message;
  // a kernel that calls what no device library provides fails at the link, naming the symbol
  status = api->compiler_compile(
      compiler,
      "extern \"C\" float sinf(float);\n"
      "extern \"C\" __attribute__((amdgpu_kernel)) void needs_libm(float* p) { p[0] = sinf(p[0]); }\n",
      "needs_libm", &blob, &size);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->code, TG_ERR_COMPILE);
  const std::string link_message = take_message(status);
  EXPECT_NE(link_message.find("sinf"), std::string::npos) << link_message;
  api->compiler_destroy(compiler);

  setenv("AMD_ARCH", "sm_90", 1);
  const std::string bad_arch = take_message(api->compiler_create(nullptr, &compiler));
  EXPECT_NE(bad_arch.find("AMD_ARCH=sm_90 is not an AMDGPU arch"), std::string::npos) << bad_arch;
  setenv("AMD_ARCH", "gfx1100", 1);
  tg_renderer renderer = nullptr;
  const std::string bad_target = take_message(api->renderer_create(nullptr, "CUDA", &renderer));
  EXPECT_NE(bad_target.find("no renderer 'CUDA' on AMD; it has HIP, LLVM"), std::string::npos) << bad_target;
  for (const char* target : {"HIP", "LLVM", "llvm", "HIP:gfx942"}) {
    ASSERT_EQ(take_message(api->renderer_create(nullptr, target, &renderer)), "") << target;
    api->renderer_destroy(renderer);
  }
}

// Without ROCm or a GPU the plugin still loads and says there are no devices; device_open says why in one line.
TEST(AmdCompile, LoadsWithoutAGpuAndCountsDevices) {
  const tg_plugin_api* api = tg::test::api();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->device_name, "AMD");
  uint32_t count = 99;
  ASSERT_EQ(take_message(api->device_count(&count)), "");
  if (count > 0) GTEST_SKIP() << count << " AMD device(s) present";
  tg_device device = nullptr;
  const std::string why = take_message(api->device_open(0, &device));
  EXPECT_NE(why.find("amd device_open"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << "one line: " << why;
  std::cout << "no AMD device: " << why << "\n";
}

}  // namespace
