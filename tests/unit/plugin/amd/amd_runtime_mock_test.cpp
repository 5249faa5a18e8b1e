// The AMD plugin's runtime path (device, allocator, program, queue) against libamd_mock_hip.so, a stand-in for the HIP
// runtime that runs nothing but records each launch (mock_hip.cpp; AMD_HIP_LIBRARY is set by ctest). Checks what the
// plugin hands HIP: the device's arch without its features, the packed argument blob passed through
// HIP_LAUNCH_PARAM_BUFFER_POINTER byte for byte, the grid the plugin blocks a local-1 launch into, a code object
// compiled for the device's arch, and the queue's signal and timestamp contract. Kernel results need a real GPU.
#include "code_object.hpp"

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const tg_plugin_api* api() {
  static const tg_plugin_api* table = [] {
    void* handle = dlopen(TG_AMD_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    auto get = handle ? reinterpret_cast<tg_plugin_get_api_fn>(dlsym(handle, TG_ABI_ENTRY_POINT)) : nullptr;
    tg_status_t status = nullptr;
    return get ? get(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &status) : nullptr;
  }();
  return table;
}

std::string take(tg_status_t status) {
  if (status == nullptr) return "";
  std::string out = status->message ? status->message : "(no message)";
  api()->status_free(status);
  return out;
}

// The mock's record of launch i.
struct Launch {
  std::string name;
  unsigned grid[3], block[3];
  std::vector<unsigned char> args;
};
Launch launch(size_t i) {
  void* mock = dlopen(TG_AMD_MOCK_HIP_PATH, RTLD_NOW | RTLD_NOLOAD);
  using Fn = const char* (*)(size_t, unsigned*, unsigned*, const unsigned char**, size_t*);
  auto fn = mock ? reinterpret_cast<Fn>(dlsym(mock, "mock_hip_launch")) : nullptr;
  if (fn == nullptr) return {};
  Launch l;
  const unsigned char* args = nullptr;
  size_t size = 0;
  l.name = fn(i, l.grid, l.block, &args, &size);
  l.args.assign(args, args + size);
  return l;
}

// data0[0] = (float)(a + b + c + d) with a int8, b int64, c int16, d int32: a 32-byte blob (0, 8, 16, 24, 28)
struct MixedKernel {
  std::vector<tg_kir_param> params;
  std::vector<tg_kir_inst> insts;
  std::vector<int32_t> pool;
  tg_kir_kernel kernel{};
  MixedKernel() {
    const char* names[] = {"data0", "a", "b", "c", "d"};
    const uint32_t dtypes[] = {TG_DTYPE_FLOAT32, TG_DTYPE_INT8, TG_DTYPE_INT64, TG_DTYPE_INT16, TG_DTYPE_INT32};
    for (int p = 0; p < 5; ++p)
      params.push_back({p == 0 ? uint32_t{TG_PARAM_BUFFER} : uint32_t{TG_PARAM_VAR}, dtypes[p], p == 0 ? 1u : 0u, 0, names[p]});
    int32_t sum = -1;
    const int32_t out = add(TG_KIR_PARAM, TG_DTYPE_FLOAT32, {}, 0);
    for (int p = 1; p < 5; ++p) {
      const int32_t wide = add(TG_KIR_CAST, TG_DTYPE_INT64, {add(TG_KIR_PARAM, static_cast<uint8_t>(dtypes[p]), {}, p)}, 0);
      sum = sum < 0 ? wide : add(TG_KIR_ADD, TG_DTYPE_INT64, {sum, wide}, 0);
    }
    add(TG_KIR_STORE, TG_DTYPE_FLOAT32, {out, add(TG_KIR_CONST, TG_DTYPE_INT32, {}, 0), add(TG_KIR_CAST, TG_DTYPE_FLOAT32, {sum}, 0)}, 0);
    kernel = {sizeof(tg_kir_kernel), "mixed_args", insts.data(), static_cast<uint32_t>(insts.size()),
              static_cast<uint32_t>(pool.size()), pool.data(), params.data(), 5, 0, nullptr, 0, 0};
  }
  int32_t add(uint16_t op, uint8_t dtype, std::vector<int32_t> srcs, int64_t arg) {
    tg_kir_inst in{};
    in.op = op, in.dtype = dtype, in.vcount = 1, in.nsrc = static_cast<uint8_t>(srcs.size());
    in.src_start = static_cast<uint32_t>(pool.size()), in.arg.i = arg;
    pool.insert(pool.end(), srcs.begin(), srcs.end());
    insts.push_back(in);
    return static_cast<int32_t>(insts.size() - 1);
  }
};

TEST(AmdRuntimeMock, DeviceBuffersProgramsAndQueue) {
  const tg_plugin_api* a = api();
  ASSERT_NE(a, nullptr) << dlerror();
  uint32_t count = 0;
  ASSERT_EQ(take(a->device_count(&count)), "");
  ASSERT_EQ(count, 1u) << "AMD_HIP_LIBRARY should name the mock";
  tg_device dev = nullptr;
  ASSERT_EQ(take(a->device_open(0, &dev)), "");
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(take(a->device_get_info(dev, &info)), "");
  EXPECT_STREQ(info.name, "AMD");
  EXPECT_STREQ(info.arch, "gfx942") << "the gcnArchName without its target features";
  EXPECT_STREQ(info.description, "AMD Mock GPU, 48 CUs, gfx942");
  EXPECT_EQ(info.memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(info.is_host, 0u);

  // the device's arch decides the caps (MFMA on gfx942) and the code object's target
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take(a->renderer_create(dev, nullptr, &renderer)), "");
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_EQ(take(a->renderer_get_caps(renderer, &caps)), "");
  EXPECT_EQ(caps.ntensor_cores, 2u);
  EXPECT_EQ(caps.tensor_cores[0].threads, 64u);
  tg_compiler compiler = nullptr;
  ASSERT_EQ(take(a->compiler_create(dev, &compiler)), "");
  MixedKernel mk;
  const char* source = nullptr;
  ASSERT_EQ(take(a->renderer_render(renderer, &mk.kernel, &source)), "");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_EQ(take(a->compiler_compile(compiler, source, "mixed_args", &blob, &size)), "") << source;
  std::string error;
  const auto co = tg::test::amdgpu::read_code_object(
      std::vector<unsigned char>(static_cast<unsigned char*>(blob), static_cast<unsigned char*>(blob) + size), "mixed_args", error);
  EXPECT_EQ(co.flags & tg::test::amdgpu::kEfAmdgpuMachMask, tg::test::amdgpu::kMachGfx942);

  tg_program program = nullptr;
  const std::string wrong_name = take(a->program_create(dev, blob, size, "no_such_kernel", mk.params.data(), 5, &program));
  EXPECT_NE(wrong_name.find("hipModuleGetFunction(no_such_kernel) failed"), std::string::npos) << wrong_name;
  ASSERT_EQ(take(a->program_create(dev, blob, size, "mixed_args", mk.params.data(), 5, &program)), "");
  a->blob_free(blob);
  const std::string not_elf = take(a->program_create(dev, "garbage!", 8, "x", nullptr, 0, &program));
  EXPECT_NE(not_elf.find("is not an AMDGPU code object"), std::string::npos) << not_elf;

  // memory round trip
  tg_buffer_desc buf{};
  ASSERT_EQ(take(a->allocator_alloc(dev, 64, &buf)), "");
  const char text[] = "tg amd mock";
  ASSERT_EQ(take(a->allocator_copy_in(dev, &buf, 8, text, sizeof text)), "");
  char back[sizeof text] = {};
  ASSERT_EQ(take(a->allocator_copy_out(dev, back, &buf, 8, sizeof back)), "");
  EXPECT_STREQ(back, text);
  EXPECT_NE(take(a->allocator_copy_in(dev, &buf, 60, text, 8)).find("past the end of a 64-byte buffer"), std::string::npos);

  // the launch: the blob as it is, a local-1 grid of 1000 blocked into 4 groups of 256
  unsigned char args[32] = {};
  std::memcpy(args, &buf.addr, 8);
  args[8] = 0x7f;
  const int64_t b = int64_t{1} << 40;
  std::memcpy(args + 16, &b, 8);
  const int16_t c = -3;
  std::memcpy(args + 24, &c, 2);
  const int32_t d = 123456;
  std::memcpy(args + 28, &d, 4);
  tg_hwqueue queue = nullptr;
  ASSERT_EQ(take(a->hwqueue_create(dev, &queue)), "");
  const tg_launch_dims dims{{1000, 1, 1}, {1, 1, 1}};
  EXPECT_NE(take(a->hwqueue_exec(queue, program, args, 8, &dims)).find("takes 32 bytes of arguments, got 8"), std::string::npos);
  ASSERT_EQ(take(a->hwqueue_exec(queue, program, args, sizeof args, &dims)), "");
  uint64_t slot = 0;
  ASSERT_EQ(take(a->hwqueue_timestamp(queue, &slot)), "");
  ASSERT_EQ(take(a->hwqueue_signal(queue, 7)), "");
  EXPECT_NE(take(a->hwqueue_signal(queue, 6)).find("signals only grow"), std::string::npos);
  ASSERT_EQ(take(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take(a->hwqueue_wait(queue, 7, 0)), "");
  uint64_t ns = 0;
  ASSERT_EQ(take(a->hwqueue_read_timestamp(queue, slot, &ns)), "");
  EXPECT_EQ(ns, 1000000u) << "the mock's clock ticks 1 ms per recorded event: origin, then the timestamp";
  const Launch l = launch(0);
  EXPECT_EQ(l.name, "mixed_args");
  EXPECT_EQ(l.grid[0], 4u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.args, std::vector<unsigned char>(args, args + sizeof args));
  const tg_launch_dims too_big{{1, 1, 1}, {32, 32, 2}};
  EXPECT_NE(take(a->hwqueue_exec(queue, program, args, sizeof args, &too_big)).find("exceed the 1024 work-items"), std::string::npos);
  ASSERT_EQ(take(a->device_synchronize(dev)), "");

  a->hwqueue_destroy(queue);
  a->program_destroy(program);
  a->allocator_free(dev, &buf);
  a->compiler_destroy(compiler);
  a->renderer_destroy(renderer);
  a->device_close(dev);
}

}  // namespace
