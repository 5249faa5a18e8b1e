// The NV plugin's runtime path (device, allocator, program, queue) against a stand-in libcuda.so.1 that runs nothing
// but records each launch (mock_cuda.cpp; ctest puts its directory first on LD_LIBRARY_PATH). Checks what the plugin
// hands the CUDA driver: the device's arch and description, a CUBIN compiled by NVRTC for it (skipped without
// NVRTC), kernelParams pointing into the packed argument blob at the signature's offsets with the bytes intact, the
// grid the plugin blocks a local-1 launch into, the stream and event calls of the queue (a non-blocking stream,
// timing events for the origin and time stamps, non-timing ones for signals), and the queue's signal and timestamp
// contract. Kernel results need a real GPU.
#include <tg/plugin_abi.h>
#include "../plugin_api.hpp"

#include "../mixed_args_kernel.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return TG_NV_PLUGIN_PATH; }

namespace {

using tg::test::api;
using tg::test::take_message;

template <class Fn>
Fn mock(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
}

struct Launch {
  std::string name;
  unsigned grid[3], block[3];
  std::vector<size_t> offsets;
  std::vector<unsigned char> args;
};
Launch launch(size_t i) {
  using Fn = const char* (*)(size_t, unsigned*, unsigned*, const size_t**, size_t*, const unsigned char**, size_t*);
  Launch l;
  const size_t* offsets = nullptr;
  const unsigned char* args = nullptr;
  size_t noffsets = 0, size = 0;
  l.name = mock<Fn>("mock_cuda_launch")(i, l.grid, l.block, &offsets, &noffsets, &args, &size);
  l.offsets.assign(offsets, offsets + noffsets);
  l.args.assign(args, args + size);
  return l;
}
std::string calls() { return mock<const char* (*)()>("mock_cuda_calls")(); }

TEST(NvRuntimeMock, DeviceBuffersProgramsAndQueue) {
  const tg_plugin_api* a = api();
  ASSERT_NE(a, nullptr) << dlerror();
  uint32_t count = 0;
  ASSERT_EQ(take_message(a->device_count(&count)), "");
  ASSERT_EQ(count, 1u) << "LD_LIBRARY_PATH should lead to the mock libcuda.so.1";
  ASSERT_NE(mock<void*>("mock_cuda_calls"), nullptr) << "the plugin loaded another libcuda.so.1";
  tg_device dev = nullptr;
  ASSERT_EQ(take_message(a->device_open(0, &dev)), "");
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(take_message(a->device_get_info(dev, &info)), "");
  EXPECT_STREQ(info.name, "NV");
  EXPECT_STREQ(info.arch, "sm_90");
  EXPECT_STREQ(info.description, "NVIDIA Mock GPU, 132 SMs, sm_90");
  EXPECT_EQ(info.memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(info.is_host, 0u);
  tg_device none = nullptr;
  EXPECT_NE(take_message(a->device_open(1, &none)).find("no NV device 1; the CUDA driver reports 1"),
            std::string::npos);

  // memory round trip
  tg_buffer_desc buf{};
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &buf)), "");
  const char text[] = "tg nv mock";
  ASSERT_EQ(take_message(a->allocator_copy_in(dev, &buf, 8, text, sizeof text)), "");
  char back[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, back, &buf, 8, sizeof back)), "");
  EXPECT_STREQ(back, text);
  EXPECT_NE(take_message(a->allocator_copy_in(dev, &buf, 60, text, 8))
                .find("nv allocator_copy_in: copy_in: offset 60 + size 8 is past the end of a 64-byte buffer"),
            std::string::npos);
  EXPECT_NE(take_message(a->allocator_alloc(dev, uint64_t{1} << 31, &buf)).find("cannot allocate"), std::string::npos);

  // program_create: the signature is checked by the SDK's slot, images are refused, a non-CUBIN is the driver's error
  tg_program program = nullptr;
  const tg_kir_param image{TG_PARAM_IMAGE, TG_DTYPE_FLOAT32, 0, 4, "img"};
  EXPECT_NE(take_message(a->program_create(dev, "x", 1, "k", &image, 1, &program))
                .find("nv program_create: kernel k: parameter 0 has kind"),
            std::string::npos);
  const std::string not_cubin = take_message(a->program_create(dev, "garbage!", 8, "x", nullptr, 0, &program));
  EXPECT_NE(not_cubin.find("cuModuleLoadData(x) failed: CUDA_ERROR_INVALID_IMAGE (200)"), std::string::npos)
      << not_cubin;
  EXPECT_NE(take_message(a->program_create(dev, "x", 0, "x", nullptr, 0, &program)).find("empty blob for kernel x"),
            std::string::npos);

  // a real CUBIN for the device's arch, when NVRTC is here
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take_message(a->renderer_create(dev, nullptr, &renderer)), "");
  tg_compiler compiler = nullptr;
  const std::string made = take_message(a->compiler_create(dev, &compiler));
  if (made.find("cannot load NVRTC") != std::string::npos) GTEST_SKIP() << made;
  ASSERT_EQ(made, "");
  MixedKernel mk;
  const char* source = nullptr;
  ASSERT_EQ(take_message(a->renderer_render(renderer, &mk.kernel, &source)), "");
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_EQ(take_message(a->compiler_compile(compiler, source, "mixed_args", &blob, &size)), "") << source;
  const std::string wrong_name =
      take_message(a->program_create(dev, blob, size, "no_such_kernel", mk.kernel.params, mk.kernel.nparams, &program));
  EXPECT_NE(wrong_name.find("cuModuleGetFunction(no_such_kernel) failed: CUDA_ERROR_NOT_FOUND"), std::string::npos)
      << wrong_name;
  ASSERT_EQ(
      take_message(a->program_create(dev, blob, size, "mixed_args", mk.kernel.params, mk.kernel.nparams, &program)),
      "");
  a->blob_free(blob);

  // the launch: one pointer per parameter into the blob at its offset, a local-1 grid of 1000 blocked into 4 x 256
  unsigned char args[32] = {};
  std::memcpy(args, &buf.addr, 8);
  args[8] = 0x7f;
  const int64_t b = int64_t{1} << 40;
  std::memcpy(args + 16, &b, 8);
  const int16_t c = -3;
  std::memcpy(args + 24, &c, 2);
  const int32_t d = 123456;
  std::memcpy(args + 28, &d, 4);
  mock<void (*)(size_t, size_t)>("mock_cuda_set_params")(5, sizeof args);
  tg_hwqueue queue = nullptr;
  ASSERT_EQ(take_message(a->hwqueue_create(dev, &queue)), "");
  EXPECT_NE(calls().find("cuStreamCreate(1) cuEventCreate(0) cuEventRecord"), std::string::npos)
      << "a non-blocking stream, then the timing origin: " << calls();
  const tg_launch_dims dims{{1000, 1, 1}, {1, 1, 1}};
  EXPECT_NE(take_message(a->hwqueue_exec(queue, program, args, 8, &dims))
                .find("kernel mixed_args takes 32 bytes of arguments, got 8"),
            std::string::npos);
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &dims)), "");
  const tg_launch_dims two_d{{3, 2, 1}, {16, 4, 1}};
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &two_d)), "");
  tg_buffer_desc other{};
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &other)), "");
  ASSERT_EQ(take_message(a->hwqueue_copy(queue, &other, 0, &buf, 8, sizeof text)), "");
  uint64_t slot = 0;
  ASSERT_EQ(take_message(a->hwqueue_timestamp(queue, &slot)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 7)), "");
  EXPECT_NE(take_message(a->hwqueue_signal(queue, 6)).find("signal value 6 is below 7, and signals only grow"),
            std::string::npos);
  EXPECT_NE(take_message(a->hwqueue_wait(queue, 7, 0)).find("the command that raises it is not submitted"),
            std::string::npos);
  EXPECT_EQ(mock<size_t (*)()>("mock_cuda_launch_count")(), 0u) << "nothing runs before submit";
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 7, 0)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 5, 1000)), "") << "a value already reached";
  EXPECT_NE(take_message(a->hwqueue_wait(queue, 8, 1000)).find("no recorded command raises it that far"),
            std::string::npos);
  EXPECT_NE(calls().find("cuLaunchKernel cuLaunchKernel cuMemcpyDtoDAsync cuEventCreate(0) cuEventRecord "
                         "cuEventCreate(2) cuEventRecord cuEventSynchronize"),
            std::string::npos)
      << "in order on the stream: launches, the copy, a timing event for the stamp, a non-timing one for the signal: "
      << calls();
  uint64_t ns = 0;
  ASSERT_EQ(take_message(a->hwqueue_read_timestamp(queue, slot, &ns)), "");
  EXPECT_EQ(ns, 1000000u) << "the mock's clock ticks 1 ms per recorded event: origin, then the timestamp";
  EXPECT_NE(take_message(a->hwqueue_read_timestamp(queue, 5, &ns)).find("no timestamp slot 5 (1 recorded)"),
            std::string::npos);
  char copied[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, copied, &other, 0, sizeof copied)), "");
  EXPECT_STREQ(copied, text);
  // ABI 1.7's peer copy, here between two buffers of the one mock GPU: cuMemcpyPeer between the contexts, bounds
  // checked first
  ASSERT_NE(a->allocator_copy_peer, nullptr);
  tg_buffer_desc peer{};
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &peer)), "");
  ASSERT_EQ(take_message(a->allocator_copy_peer(dev, &peer, 16, dev, &other, 0, sizeof text)), "");
  char peered[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, peered, &peer, 16, sizeof peered)), "");
  EXPECT_STREQ(peered, text);
  EXPECT_NE(calls().find("cuMemcpyPeer"), std::string::npos) << calls();
  EXPECT_NE(take_message(a->allocator_copy_peer(dev, &peer, 60, dev, &other, 0, 8)), "")
      << "8 bytes at 60 of a 64-byte buffer";
  a->allocator_free(dev, &peer);

  ASSERT_EQ(mock<size_t (*)()>("mock_cuda_launch_count")(), 2u);
  const Launch l = launch(0);
  EXPECT_EQ(l.name, "mixed_args");
  EXPECT_EQ(l.grid[0], 4u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.offsets, (std::vector<size_t>{0, 8, 16, 24, 28})) << "tg_param_layout's offsets";
  EXPECT_EQ(l.args, std::vector<unsigned char>(args, args + sizeof args));
  const Launch l2 = launch(1);
  EXPECT_EQ((std::vector<unsigned>{l2.grid[0], l2.grid[1], l2.grid[2], l2.block[0], l2.block[1], l2.block[2]}),
            (std::vector<unsigned>{3, 2, 1, 16, 4, 1}))
      << "launched as asked when the core sets the local size";

  const tg_launch_dims too_big{{1, 1, 1}, {32, 32, 2}};
  EXPECT_NE(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &too_big))
                .find("exceed CUDA's 1024 threads per block"),
            std::string::npos);
  const tg_launch_dims deep{{1, 1, 1}, {1, 1, 65}};
  EXPECT_NE(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &deep)).find("(64 in z)"),
            std::string::npos);

  a->hwqueue_destroy(queue);
  EXPECT_NE(calls().find("cuStreamSynchronize cuStreamDestroy"), std::string::npos)
      << "the stream drains before it goes: " << calls();
  a->program_destroy(program);
  a->allocator_free(dev, &buf);
  a->allocator_free(dev, &other);
  a->compiler_destroy(compiler);
  a->renderer_destroy(renderer);
  a->device_close(dev);
}

}  // namespace
