// The AMD plugin's runtime path (device, allocator, program, queue) against libamd_mock_hip.so, a stand-in for the HIP
// runtime that runs nothing but records each launch (mock_hip.cpp; AMD_HIP_LIBRARY is set by ctest). Checks what the
// plugin hands HIP: the device's arch without its features, the packed argument blob passed through
// HIP_LAUNCH_PARAM_BUFFER_POINTER byte for byte, the grid the plugin blocks a local-1 launch into, a code object
// compiled for the device's arch, and the queue's signal and timestamp contract. Kernel results need a real GPU.
#include "../plugin_api.hpp"
#include "code_object.hpp"

#include <tg/plugin_abi.h>

#include "../mixed_args_kernel.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return TG_AMD_PLUGIN_PATH; }

namespace {

using tg::test::api;
using tg::test::take_message;

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

TEST(AmdRuntimeMock, DeviceBuffersProgramsAndQueue) {
  const tg_plugin_api* a = api();
  ASSERT_NE(a, nullptr) << dlerror();
  uint32_t count = 0;
  ASSERT_EQ(take_message(a->device_count(&count)), "");
  ASSERT_EQ(count, 1u) << "AMD_HIP_LIBRARY should name the mock";
  tg_device dev = nullptr;
  ASSERT_EQ(take_message(a->device_open(0, &dev)), "");
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(take_message(a->device_get_info(dev, &info)), "");
  EXPECT_STREQ(info.name, "AMD");
  EXPECT_STREQ(info.arch, "gfx942") << "the gcnArchName without its target features";
  EXPECT_STREQ(info.description, "AMD Mock GPU, 48 CUs, gfx942");
  EXPECT_EQ(info.memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(info.is_host, 0u);

  // the device's arch decides the caps (MFMA on gfx942) and the code object's target
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take_message(a->renderer_create(dev, nullptr, &renderer)), "");
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_EQ(take_message(a->renderer_get_caps(renderer, &caps)), "");
  EXPECT_EQ(caps.ntensor_cores, 2u);
  EXPECT_EQ(caps.tensor_cores[0].threads, 64u);
  tg_compiler compiler = nullptr;
  ASSERT_EQ(take_message(a->compiler_create(dev, &compiler)), "");
  MixedKernel mk;
  const char* source = nullptr;
  ASSERT_EQ(take_message(a->renderer_render(renderer, &mk.kernel, &source)), "");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_EQ(take_message(a->compiler_compile(compiler, source, "mixed_args", &blob, &size)), "") << source;
  std::string error;
  const auto co = tg::test::amdgpu::read_code_object(
      std::vector<unsigned char>(static_cast<unsigned char*>(blob), static_cast<unsigned char*>(blob) + size),
      "mixed_args", error);
  EXPECT_EQ(co.flags & tg::test::amdgpu::kEfAmdgpuMachMask, tg::test::amdgpu::kMachGfx942);

  tg_program program = nullptr;
  const std::string wrong_name =
      take_message(a->program_create(dev, blob, size, "no_such_kernel", mk.kernel.params, mk.kernel.nparams, &program));
  EXPECT_NE(wrong_name.find("hipModuleGetFunction(no_such_kernel) failed"), std::string::npos) << wrong_name;
  ASSERT_EQ(
      take_message(a->program_create(dev, blob, size, "mixed_args", mk.kernel.params, mk.kernel.nparams, &program)),
      "");
  a->blob_free(blob);
  const std::string not_elf = take_message(a->program_create(dev, "garbage!", 8, "x", nullptr, 0, &program));
  EXPECT_NE(not_elf.find("is not an AMDGPU code object"), std::string::npos) << not_elf;

  // memory round trip
  tg_buffer_desc buf{};
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &buf)), "");
  const char text[] = "tg amd mock";
  ASSERT_EQ(take_message(a->allocator_copy_in(dev, &buf, 8, text, sizeof text)), "");
  char back[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, back, &buf, 8, sizeof back)), "");
  EXPECT_STREQ(back, text);
  EXPECT_NE(take_message(a->allocator_copy_in(dev, &buf, 60, text, 8)).find("past the end of a 64-byte buffer"),
            std::string::npos);

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
  ASSERT_EQ(take_message(a->hwqueue_create(dev, &queue)), "");
  const tg_launch_dims dims{{1000, 1, 1}, {1, 1, 1}};
  EXPECT_NE(take_message(a->hwqueue_exec(queue, program, args, 8, &dims)).find("takes 32 bytes of arguments, got 8"),
            std::string::npos);
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &dims)), "");
  uint64_t slot = 0;
  ASSERT_EQ(take_message(a->hwqueue_timestamp(queue, &slot)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 7)), "");
  EXPECT_NE(take_message(a->hwqueue_signal(queue, 6)).find("signals only grow"), std::string::npos);
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 7, 0)), "");
  uint64_t ns = 0;
  ASSERT_EQ(take_message(a->hwqueue_read_timestamp(queue, slot, &ns)), "");
  EXPECT_EQ(ns, 1000000u) << "the mock's clock ticks 1 ms per recorded event: origin, then the timestamp";
  const Launch l = launch(0);
  EXPECT_EQ(l.name, "mixed_args");
  EXPECT_EQ(l.grid[0], 4u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.args, std::vector<unsigned char>(args, args + sizeof args));
  const tg_launch_dims too_big{{1, 1, 1}, {32, 32, 2}};
  EXPECT_NE(
      take_message(a->hwqueue_exec(queue, program, args, sizeof args, &too_big)).find("exceed the 1024 work-items"),
      std::string::npos);
  ASSERT_EQ(take_message(a->device_synchronize(dev)), "");

  a->hwqueue_destroy(queue);
  a->program_destroy(program);
  a->allocator_free(dev, &buf);
  a->compiler_destroy(compiler);
  a->renderer_destroy(renderer);
  a->device_close(dev);
}

}  // namespace
