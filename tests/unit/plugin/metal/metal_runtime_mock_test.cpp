// The METAL plugin's runtime path (device, allocator, compiler, program, queue) against mock_metal.cpp, a stand-in
// for libobjc and Metal.framework that runs no MSL but logs every message the plugin sends (ctest points
// TG_METAL_OBJC_LIB and TG_METAL_FRAMEWORK at it). Checks what the plugin hands Metal: the device's description and
// memory, shared-storage buffers copied round trip through `contents`, MSL compiled with MSL 3.1 and fast math off
// (a compile error carries NSError's text), each argument bound at the [[buffer(i)]] the renderer declares (buffers
// by object, variables by value at their size), the dispatch sizes of the KIR launch dims, one command buffer per
// submit, a failed command buffer's error as the wait's TG_ERR_*, nil buffers as TG_ERR_OUT_OF_MEMORY, and that
// nothing leaks. MetalRuntimeMissing runs with no framework: zero devices, and the reason. Results need a real Mac.
#include <tg/plugin_abi.h>
#include "../plugin_api.hpp"

#include "../mixed_args_kernel.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

const char* tg::test::plugin_path() { return TG_METAL_PLUGIN_PATH; }

namespace {

using tg::test::api;
using tg::test::take_message;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class Fn>
Fn mock(const char* name) {
  void* lib = dlopen(TG_METAL_MOCK_PATH, RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
}
std::string log() { return mock<const char* (*)()>("mock_metal_log")(); }
void clear_log() { mock<void (*)()>("mock_metal_clear_log")(); }
size_t live(const char* kind) { return mock<size_t (*)(const char*)>("mock_metal_live")(kind); }
size_t count(const std::string& text, const std::string& line) {
  size_t n = 0;
  for (size_t at = text.find(line + "\n"); at != std::string::npos; at = text.find(line + "\n", at + 1))
    n += at == 0 || text[at - 1] == '\n';
  return n;
}

TEST(MetalRuntimeMock, DeviceBuffersProgramsAndQueue) {
  const tg_plugin_api* a = api();
  ASSERT_NE(a, nullptr) << dlerror();
  uint32_t n = 0;
  ASSERT_EQ(take_message(a->device_count(&n)), "");
  ASSERT_EQ(n, 1u) << "TG_METAL_OBJC_LIB / TG_METAL_FRAMEWORK should name the mock";
  ASSERT_NE(mock<void*>("mock_metal_log"), nullptr) << "the plugin loaded another library";
  tg_device dev = nullptr;
  ASSERT_EQ(take_message(a->device_open(0, &dev)), "");
  tg_device_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(take_message(a->device_get_info(dev, &info)), "");
  EXPECT_STREQ(info.name, "METAL");
  EXPECT_STREQ(info.description, "Apple Mock GPU, Metal (MSL 3.1)");
  EXPECT_EQ(info.memory_bytes, uint64_t{8} << 30) << "recommendedMaxWorkingSetSize";
  EXPECT_EQ(info.is_host, 0u);
  int32_t code = 0;
  tg_device none = nullptr;
  EXPECT_TRUE(contains(take_message(a->device_open(1, &none), &code), "no METAL device 1; there is one, METAL:0"));
  EXPECT_EQ(code, TG_ERR_INVALID_ARGUMENT);

  // buffers: shared storage, copied through `contents`; nil from Metal and past maxBufferLength are out of memory
  tg_buffer_desc buf{}, other{};
  clear_log();
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &buf)), "");
  ASSERT_EQ(take_message(a->allocator_alloc(dev, 64, &other)), "");
  EXPECT_EQ(log(), "newBufferWithLength:64 options:0\nnewBufferWithLength:64 options:0\n");
  const char text[] = "tg metal mock";
  ASSERT_EQ(take_message(a->allocator_copy_in(dev, &buf, 8, text, sizeof text)), "");
  char back[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, back, &buf, 8, sizeof back)), "");
  EXPECT_STREQ(back, text);
  EXPECT_TRUE(contains(take_message(a->allocator_copy_in(dev, &buf, 60, text, 8), &code),
                       "metal allocator_copy_in: copy_in: offset 60 + size 8 is past the end of a 64-byte buffer"));
  tg_buffer_desc failed{};
  const std::string nil = take_message(a->allocator_alloc(dev, uint64_t{3} << 29, &failed), &code);
  EXPECT_EQ(code, TG_ERR_OUT_OF_MEMORY) << nil;
  EXPECT_TRUE(contains(nil, "cannot allocate 1610612736 bytes: newBufferWithLength:options: returned nil")) << nil;
  EXPECT_TRUE(
      contains(take_message(a->allocator_alloc(dev, uint64_t{3} << 30, &failed), &code), "at most 2147483648 bytes"));
  EXPECT_EQ(code, TG_ERR_OUT_OF_MEMORY);

  // compile: the blob is the source, checked by Metal; Metal's diagnostic reaches the error
  tg_renderer renderer = nullptr;
  ASSERT_EQ(take_message(a->renderer_create(dev, nullptr, &renderer)), "");
  tg_compiler compiler = nullptr;
  ASSERT_EQ(take_message(a->compiler_create(dev, &compiler)), "");
  MixedKernel mk(/*buffer_among_scalars=*/true);
  const char* rendered = nullptr;
  ASSERT_EQ(take_message(a->renderer_render(renderer, &mk.kernel, &rendered)), "");
  const std::string source = rendered;
  void* blob = nullptr;
  size_t size = 0;
  ASSERT_EQ(take_message(a->compiler_compile(compiler, source.c_str(), "mixed_args", &blob, &size)), "") << source;
  EXPECT_EQ(std::string(static_cast<const char*>(blob), size), source);
  const std::string broken = source + "\nMOCK_COMPILE_ERROR\n";
  void* no_blob = nullptr;
  const std::string error =
      take_message(a->compiler_compile(compiler, broken.c_str(), "mixed_args", &no_blob, &size), &code);
  EXPECT_EQ(code, TG_ERR_COMPILE);
  EXPECT_TRUE(contains(error,
                       "metal compiler_compile: Metal cannot compile kernel mixed_args:\n"
                       "program_source:3:5: error: use of undeclared identifier 'MOCK_COMPILE_ERROR'"))
      << error;
  tg_compiler deviceless = nullptr;
  ASSERT_EQ(take_message(a->compiler_create(nullptr, &deviceless)), "") << "the system default device compiles";
  a->compiler_destroy(deviceless);

  // programs: the kernel by name, images refused
  tg_program program = nullptr;
  size = source.size();
  EXPECT_TRUE(contains(
      take_message(a->program_create(dev, blob, size, "no_such", mk.kernel.params, mk.kernel.nparams, &program), &code),
      "the Metal library has no kernel no_such"));
  const tg_kir_param image{TG_PARAM_IMAGE, TG_DTYPE_FLOAT32, 0, 4, "img"};
  EXPECT_TRUE(contains(take_message(a->program_create(dev, blob, size, "k", &image, 1, &program)),
                       "kernel k: parameter 0 has kind"));
  ASSERT_EQ(
      take_message(a->program_create(dev, blob, size, "mixed_args", mk.kernel.params, mk.kernel.nparams, &program)),
      "");
  mock<void (*)(uint64_t)>("mock_metal_set_max_threads")(64);
  tg_program small = nullptr;
  ASSERT_EQ(take_message(a->program_create(dev, blob, size, "mixed_args", mk.kernel.params, mk.kernel.nparams, &small)),
            "");
  a->blob_free(blob);

  // the queue: the origin is one empty committed command buffer
  clear_log();
  tg_hwqueue queue = nullptr;
  ASSERT_EQ(take_message(a->hwqueue_create(dev, &queue)), "");
  EXPECT_EQ(log(), "newCommandQueue\ncommandBuffer\ncommit\n");
  unsigned char args[40] = {};
  std::memcpy(args, &buf.addr, 8);
  args[8] = 0x7f;
  const int64_t b = int64_t{1} << 40;
  std::memcpy(args + 16, &b, 8);
  std::memcpy(args + 24, &other.addr, 8);
  const int16_t c = -3;
  std::memcpy(args + 32, &c, 2);
  const int32_t d = 123456;
  std::memcpy(args + 36, &d, 4);
  EXPECT_TRUE(contains(take_message(a->hwqueue_exec(queue, program, args, 32, nullptr)), "dims"));
  const tg_launch_dims one_d{{1000, 1, 1}, {1, 1, 1}}, two_d{{3, 2, 1}, {16, 4, 1}};
  EXPECT_TRUE(
      contains(take_message(a->hwqueue_exec(queue, program, args, 32, &one_d)), "takes 40 bytes of arguments, got 32"));
  clear_log();
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &one_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &two_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_copy(queue, &other, 0, &buf, 8, sizeof text)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 7)), "");
  EXPECT_EQ(log(), "") << "nothing reaches Metal before submit";
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 7, 0)), "");
  const std::string bind =
      "setComputePipelineState:mixed_args\nsetBuffer:" + std::to_string(buf.addr) +
      " offset:0 atIndex:0\nsetBytes:7f length:1 atIndex:1\n"
      "setBytes:0000000000010000 length:8 atIndex:2\nsetBuffer:" +
      std::to_string(other.addr) +
      " offset:0 atIndex:3\nsetBytes:fdff length:2 atIndex:4\nsetBytes:40e20100 length:4 atIndex:5\n";
  EXPECT_EQ(log(), "commandBuffer\ncomputeCommandEncoder\n" + bind + "dispatch:4,1,1 threads:256,1,1\n" + bind +
                       "dispatch:3,2,1 threads:16,4,1\nendEncoding\nblitCommandEncoder\ncopy:14\nendEncoding\ncommit\n"
                       "waitUntilCompleted\n")
      << "one command buffer: both launches with each argument at its [[buffer(i)]], the copy, one commit";
  char copied[sizeof text] = {};
  ASSERT_EQ(take_message(a->allocator_copy_out(dev, copied, &other, 0, sizeof copied)), "");
  EXPECT_STREQ(copied, text);

  // a time stamp ends its command buffer: its GPUEndTime is the stamp (the mock's clock: 1 ms per commit)
  clear_log();
  uint64_t slot = 0;
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &two_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_timestamp(queue, &slot)), "");
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &two_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 8)), "");
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 8, 1000000000)), "");
  EXPECT_EQ(count(log(), "commandBuffer"), 2u) << log();
  EXPECT_EQ(count(log(), "commit"), 2u) << log();
  uint64_t ns = 0;
  ASSERT_EQ(take_message(a->hwqueue_read_timestamp(queue, slot, &ns)), "");
  EXPECT_NEAR(static_cast<double>(ns), 2e6, 10) << "origin, the first submit, then the stamp's command buffer";

  // the pipeline's maxTotalThreadsPerThreadgroup bounds work-groups, and the group of a local-1 launch
  clear_log();
  const tg_launch_dims wide{{1, 1, 1}, {16, 8, 1}};
  const std::string limit = take_message(a->hwqueue_exec(queue, small, args, sizeof args, &wide), &code);
  EXPECT_EQ(code, TG_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(limit, "kernel mixed_args: work-groups of 16x8x1 are 128 threads; its pipeline takes at most 64"))
      << limit;
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, small, args, sizeof args, &one_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 9)), "");
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  ASSERT_EQ(take_message(a->hwqueue_wait(queue, 9, 0)), "");
  EXPECT_TRUE(contains(log(), "dispatch:16,1,1 threads:64,1,1\n")) << log();

  // a command buffer Metal fails: its error is the wait's
  mock<void (*)(int64_t, const char*)>("mock_metal_fail_next_commit")(
      7, "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)");
  ASSERT_EQ(take_message(a->hwqueue_exec(queue, program, args, sizeof args, &two_d)), "");
  ASSERT_EQ(take_message(a->hwqueue_signal(queue, 10)), "");
  ASSERT_EQ(take_message(a->hwqueue_submit(queue)), "");
  const std::string failure = take_message(a->hwqueue_wait(queue, 10, 1000000000), &code);
  EXPECT_EQ(code, TG_ERR_OUT_OF_MEMORY) << failure;
  EXPECT_TRUE(contains(failure,
                       "metal hwqueue_wait: a Metal command buffer failed (MTLCommandBufferError 7): "
                       "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"))
      << failure;

  a->hwqueue_destroy(queue);
  a->program_destroy(program);
  a->program_destroy(small);
  a->allocator_free(dev, &buf);
  a->allocator_free(dev, &other);
  a->compiler_destroy(compiler);
  a->renderer_destroy(renderer);
  a->device_close(dev);
  EXPECT_EQ(live(""), 1u) << "only the system device stays (the plugin keeps it for the process); buffers "
                          << live("buffer") << ", command buffers " << live("cb") << ", strings " << live("string");
  EXPECT_EQ(mock<int (*)()>("mock_metal_autoreleased_without_pool")(), 0)
      << "every autoreleased object was made inside a pool";
}

// Run with TG_METAL_FRAMEWORK naming no file: zero devices, and each slot that needs Metal says which is missing.
TEST(MetalRuntimeMissing, ZeroDevicesAndTheReason) {
  const tg_plugin_api* a = api();
  ASSERT_NE(a, nullptr) << dlerror();
  uint32_t n = 99;
  ASSERT_EQ(take_message(a->device_count(&n)), "");
  EXPECT_EQ(n, 0u);
  int32_t code = 0;
  tg_device dev = nullptr;
  const std::string open = take_message(a->device_open(0, &dev), &code);
  EXPECT_EQ(code, TG_ERR_UNAVAILABLE);
  EXPECT_TRUE(
      contains(open, "metal device_open: no METAL device 0: no Metal framework: /nonexistent/Metal.framework/Metal: "))
      << open;
  EXPECT_EQ(open.find('\n'), std::string::npos) << open;
  tg_compiler compiler = nullptr;
  const std::string compile = take_message(a->compiler_create(nullptr, &compiler), &code);
  EXPECT_EQ(code, TG_ERR_UNAVAILABLE);
  EXPECT_TRUE(contains(compile, "metal compiler_create: no Metal framework: /nonexistent/Metal.framework/Metal"))
      << compile;
}

}  // namespace
