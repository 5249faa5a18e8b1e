// The QCOM plugin's private declarations: the OpenCL entry points it loads at run time, the objects behind the
// ABI's opaque handles that more than one file needs (device, program), and the slot functions of each file.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <tg/plugin_abi.h>
#include <tg/sdk/device_queue.hpp>
#include <tg/sdk/plugin_handles.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

struct tg_program_s;

namespace tg::qcom {

// The OpenCL calls the plugin makes. The headers give only their types: libOpenCL.so.1 (the ICD loader) is opened
// with dlopen on first use, so the plugin builds and loads where no OpenCL runtime is installed.
struct ClApi {
  // clang-format off: the X-macro list as written (clang-format lays it out as a call chain)
#define TG_QCOM_CL_FUNCTIONS(X)                                                                                  \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)               \
  X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer) X(clReleaseMemObject)   \
  X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clEnqueueCopyBuffer) X(clCreateProgramWithSource)             \
  X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clReleaseProgram) \
  X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clEnqueueMarkerWithWaitList) \
  X(clFlush) X(clFinish) X(clWaitForEvents) X(clGetEventInfo) X(clGetEventProfilingInfo) X(clReleaseEvent)      \
  X(clCreateImage) X(clEnqueueCopyBufferToImage) X(clGetMemObjectInfo)
  // clang-format on
#define TG_QCOM_CL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TG_QCOM_CL_FUNCTIONS(TG_QCOM_CL_MEMBER)
#undef TG_QCOM_CL_MEMBER
};

// The loaded OpenCL API; throws TG_ERR_UNAVAILABLE naming the library and why it could not be used.
const ClApi& cl();

// Held while a program is built, loaded or released. PoCL 3.1 keeps a program's build files in a kernel-cache
// directory named by the program's hash; building and unpacking programs from several threads at once (the core
// compiles in parallel) produced a binary without its bitcode, which then aborted PoCL on load (an assert in
// pocl_binary_get_kernels_metadata). One build at a time costs parallel compile speed, not correctness.
std::mutex& build_mutex();

// True once the process has begun to exit (set by the queue's exit handler). From then on the plugin releases no
// OpenCL object: the core frees its last programs and buffers from static destructors, which run after those of
// the LLVM inside PoCL, and PoCL crashed when called then. The process is ending; its memory goes with it.
bool process_exiting();
void set_process_exiting();
// At exit the live queues are finished before the driver tears itself down (hwqueue.cpp). Exit handlers run in the
// reverse order of their registration, and PoCL registers teardown of the LLVM state it creates at its first build
// and first program load, so the queues' handler is registered again after each of those: a program that exits with
// kernels still queued (tg render on a fresh cache) crashed in PoCL's LLVM, finishing them after that teardown.
void finish_queues_after_driver_state(bool program_load);

// "CL_INVALID_KERNEL_ARGS" for -52; "CL error -9999" for a code it does not know.
std::string cl_error_name(cl_int err);
// Throws unless err is CL_SUCCESS: "<call> failed: <name> (<code>)", with a tg status code that fits the error.
void check_cl(cl_int err, const char* call);

// One opened OpenCL device. Shared (shared_ptr) by its handle and by every renderer, compiler, queue, buffer
// user and program made from it, so closing the device early never leaves them dangling.
struct Device {
  std::string name = "QCOM";
  std::string description;  // "pthread-skylake-avx512 (Portable Computing Language, OpenCL C 1.2 PoCL)"
  std::string arch;         // the device and driver a program binary is valid for
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue copy_queue = nullptr;  // the allocator's blocking copies
  uint64_t memory_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  size_t max_param_bytes = 1024;
  size_t max_work_group_size = 1;                      // work-items per group, all dims together
  std::array<size_t, 3> max_work_item_sizes{1, 1, 1};  // per dim
  uint64_t local_mem_bytes = 0;
  bool has_fp16 = false;                               // cl_khr_fp16: half arithmetic; without it half is storage only
  bool has_fp64 = false;                               // cl_khr_fp64
  bool has_int64 = true;                               // false on an embedded-profile device without cles_khr_int64
  bool correctly_rounded_sqrt = false;                 // -cl-fp32-correctly-rounded-divide-sqrt is allowed
  uint32_t image_max_width = 0, image_max_height = 0;  // CL_DEVICE_IMAGE2D_MAX_*; 0: no image support
  bool image_from_buffer = false;  // cl_khr_image2d_from_buffer: an image can alias a buffer's memory

  // Image views of buffers read as TG_PARAM_IMAGE (images.cpp), by (buffer, width in texels, queue): an alias is
  // shared (queue NULL); a copy belongs to the queue that refreshes it, so two queues never write one image.
  struct ImageView {
    cl_mem image = nullptr;
    bool aliases = false;  // a view of the buffer's memory; else a copy refreshed before every kernel
  };
  std::mutex image_mutex;
  std::map<std::tuple<cl_mem, uint32_t, cl_command_queue>, ImageView> image_views;

  ~Device();
};

// A loaded kernel and a copy of its signature. Shared by the program handle and by queues that recorded an exec of
// it. clSetKernelArg changes the kernel object, so setting arguments and enqueueing is done under arg_mutex.
struct Program {
  std::shared_ptr<Device> device;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  std::mutex arg_mutex;
  std::string kernel_name;
  sdk::Signature signature;  // kinds and dtypes say how to set each argument, offsets where it is in the blob
  size_t args_size = 0;

  ~Program();
};

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the OpenCL devices; its DeviceHooks (tg/sdk/plugin_slots.hpp) sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> OpenCL C) and compiler.cpp (-> the driver's binary): each keeps its hooks and handle to itself
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;  // the table's renderer_* slots
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;  // the table's compiler_* slots and blob_free
// The options every build of this device uses (compile and load must agree).
std::string build_options(const Device& device);

// allocator.cpp: cl_mem buffers
struct AllocatorSlots {
  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept;
  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept;
  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept;
  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept;
};
// Throws TG_ERR_INVALID_ARGUMENT unless [offset, offset+size) lies inside the buffer and it has a cl_mem.
void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what);

// program.cpp: the driver's binary built for the device, and its one kernel
struct ProgramHooks {
  using Program = qcom::Program;
  static constexpr std::string_view plugin = "qcom";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;  // the table's program_* slots

// images.cpp: an RGBA float32 image2d `width` texels wide with `buffer`'s contents as of when the next command on
// `queue` runs (an alias of its memory where the device can, else a copy enqueued on `queue`); and dropping a
// buffer's views when it is freed.
cl_mem image_of_buffer(Device& device, cl_command_queue queue, cl_mem buffer, uint32_t width);
void release_image_views(Device& device, cl_mem buffer);
void release_queue_images(Device& device, cl_command_queue queue);  // the copies a destroyed queue refreshed

// hwqueue.cpp: tg::sdk::DeviceQueue over an in-order OpenCL command queue, marker events as signals and timestamps
struct QueueBackend;
using QueueSlots = sdk::DeviceQueueSlots<tg_hwqueue_s, QueueBackend>;  // the table's hwqueue_* slots

}  // namespace tg::qcom

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::qcom::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::qcom::CompilerHooks>;
// Compiled where tg_hwqueue_s and the backend are complete (hwqueue.cpp).
extern template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::qcom::QueueBackend>;

// The opaque handles, as this plugin defines them.
struct tg_device_s : tg::sdk::DeviceHandle<tg::qcom::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::qcom::Program> {};
