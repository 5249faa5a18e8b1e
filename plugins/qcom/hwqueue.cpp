// The QCOM plugin's HWQueue: tg::sdk::DeviceQueue (commands recorded, then enqueued in order on an in-order
// cl_command_queue at submit) over an OpenCL backend whose events are markers, so waiting and timing read marker
// events; the slots are the SDK's DeviceQueueSlots. Live queues are finished at process exit (see below).
#include "qcom_plugin.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

namespace {

cl_int event_status(cl_event event) {
  cl_int status = CL_QUEUED;
  check_cl(cl().clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
           "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
  return status;
}

// A marker's status, throwing when a command before it failed (in an in-order queue the marker then fails too).
cl_int checked_status(cl_event event) {
  const cl_int status = event_status(event);
  if (status < 0)
    throw Error(TG_ERR_INTERNAL, cat("a command before this signal or time stamp failed: ", cl_error_name(status)));
  return status;
}

// Arguments from the packed blob: a buffer's 8 bytes are its cl_mem (an image parameter's, its image view's, made
// current on `queue`); a variable is passed at its own size.
void set_args(const Program& program, const unsigned char* args, cl_command_queue queue) {
  for (size_t p = 0; p < program.signature.size(); ++p) {
    const tg_kir_param& param = program.signature.params()[p];
    const unsigned char* at = args + program.signature.offsets()[p];
    cl_int err;
    if (param.kind != TG_PARAM_VAR) {
      uint64_t addr = 0;
      std::memcpy(&addr, at, sizeof addr);
      cl_mem mem = reinterpret_cast<cl_mem>(addr);
      if (param.kind == TG_PARAM_IMAGE) mem = image_of_buffer(*program.device, queue, mem, param.reserved);
      err = cl().clSetKernelArg(program.kernel, static_cast<cl_uint>(p), sizeof mem, &mem);
    } else {
      err = cl().clSetKernelArg(program.kernel, static_cast<cl_uint>(p), tg_param_size(&param), at);
    }
    if (err != CL_SUCCESS)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", program.kernel_name, ": clSetKernelArg(", p, ") failed: ", cl_error_name(err)));
  }
}

}  // namespace

// At process exit the driver is going away: nothing more is released (see process_exiting()).
struct EventRelease {
  void operator()(cl_event event) const {
    if (!process_exiting()) cl().clReleaseEvent(event);
  }
};

struct QueueBackend {
  using Program = std::shared_ptr<qcom::Program>;
  using Event = std::unique_ptr<std::remove_pointer_t<cl_event>, EventRelease>;
  static constexpr std::string_view plugin = "qcom";
  std::shared_ptr<Device> device;
  cl_command_queue queue = nullptr;

  static QueueBackend open(tg_device device);
  static void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
    qcom::check_range(buffer, offset, size, what);
  }
  static bool launch_shape(const Program& program, const tg_launch_dims& dims, uint32_t grid[3], uint32_t block[3]);
  void bind() {}  // OpenCL calls name their queue
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3],
              const uint32_t block[3]);
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size);
  Event record(bool timing);
  bool done(const Event& event) { return checked_status(event.get()) <= CL_COMPLETE; }
  void synchronize(const Event& event);
  double elapsed_ms(const Event& from, const Event& to);
  void flush() { check_cl(cl().clFlush(queue), "clFlush"); }
  void finish() noexcept;
  void close() noexcept;
};

QueueBackend QueueBackend::open(tg_device device) {
  std::shared_ptr<Device> dev = device_of(device);
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = cl().clCreateCommandQueue(dev->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
  check_cl(err, "clCreateCommandQueue");
  return QueueBackend{std::move(dev), queue};
}

// tg's global counts work-groups (plugin_abi.h): grid and block are kept as tg's, and launch() multiplies.
bool QueueBackend::launch_shape(const Program& /*program*/, const tg_launch_dims& dims, uint32_t grid[3],
                                uint32_t block[3]) {
  for (int d = 0; d < 3; ++d) grid[d] = dims.global[d], block[d] = std::max(dims.local[d], 1u);
  return dims.global[0] != 0 && dims.global[1] != 0 && dims.global[2] != 0;  // else no work-items
}

void QueueBackend::launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3],
                          const uint32_t block[3]) {
  // OpenCL's global size counts work-items; without a local size > 1 the driver picks the work-group size.
  size_t global[3], local[3];
  cl_uint dims = 1;
  bool has_local = false;
  for (int d = 0; d < 3; ++d) {
    local[d] = block[d];
    global[d] = size_t{grid[d]} * block[d];
    if (grid[d] > 1 || block[d] > 1) dims = static_cast<cl_uint>(d + 1);
    has_local |= block[d] > 1;
  }
  std::lock_guard args_lock(program->arg_mutex);
  set_args(*program, args.data(), queue);
  const cl_int err = cl().clEnqueueNDRangeKernel(queue, program->kernel, dims, nullptr, global,
                                                 has_local ? local : nullptr, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    throw Error(err == CL_OUT_OF_RESOURCES ? TG_ERR_OUT_OF_MEMORY : TG_ERR_INVALID_ARGUMENT,
                cat("kernel ", program->kernel_name, ": clEnqueueNDRangeKernel failed: ", cl_error_name(err)));
}

void QueueBackend::copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
                        uint64_t size) {
  check_cl(cl().clEnqueueCopyBuffer(queue, static_cast<cl_mem>(src.handle), static_cast<cl_mem>(dst.handle), src_offset,
                                    dst_offset, size, 0, nullptr, nullptr),
           "clEnqueueCopyBuffer");
}

QueueBackend::Event QueueBackend::record(bool /*timing*/) {
  cl_event event = nullptr;
  check_cl(cl().clEnqueueMarkerWithWaitList(queue, 0, nullptr, &event), "clEnqueueMarkerWithWaitList");
  return Event(event);
}

void QueueBackend::synchronize(const Event& event) {
  const cl_event e = event.get();
  const cl_int err = cl().clWaitForEvents(1, &e);
  if (err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) check_cl(err, "clWaitForEvents");
  checked_status(e);
}

// The markers' end times on the device's profiling clock (ns).
double QueueBackend::elapsed_ms(const Event& from, const Event& to) {
  cl_ulong from_ns = 0, to_ns = 0;
  check_cl(cl().clGetEventProfilingInfo(from.get(), CL_PROFILING_COMMAND_END, sizeof from_ns, &from_ns, nullptr),
           "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)");
  check_cl(cl().clGetEventProfilingInfo(to.get(), CL_PROFILING_COMMAND_END, sizeof to_ns, &to_ns, nullptr),
           "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)");
  return to_ns >= from_ns ? static_cast<double>(to_ns - from_ns) / 1e6 : 0.0;
}

void QueueBackend::finish() noexcept {
  if (process_exiting()) return;
  cl().clFinish(queue);  // commands still reference kernels and buffers
  release_queue_images(*device, queue);
}
void QueueBackend::close() noexcept {
  if (!process_exiting()) cl().clReleaseCommandQueue(queue);
}

}  // namespace tg::qcom

// A live queue is known to the process-exit handler, which finishes it before the driver unloads.
struct tg_hwqueue_s : tg::sdk::DeviceQueue<tg::qcom::QueueBackend> {
  explicit tg_hwqueue_s(tg::qcom::QueueBackend backend);
  ~tg_hwqueue_s();
};

namespace tg::qcom {
namespace {

// Live queues, finished at process exit, which also stops every later OpenCL call (see process_exiting()).
// Without this a test run on PoCL aborted after every test passed ("Failed to create kernel compiler pass
// inline-kernels", or a segfault). The handler is registered after the driver loaded, so it runs before the
// static destructors of the driver and its LLVM.
std::mutex live_mutex;
std::set<tg_hwqueue_s*>& live_queues() {
  static auto* queues = new std::set<tg_hwqueue_s*>();  // never destroyed: used by the exit handler
  return *queues;
}
void finish_live_queues() {
  if (process_exiting()) return;  // registered more than once (finish_queues_after_driver_state); the first does it
  set_process_exiting();
  std::lock_guard lock(live_mutex);
  for (tg_hwqueue_s* queue : live_queues()) cl().clFinish(queue->backend().queue);
}

}  // namespace

void finish_queues_after_driver_state(bool program_load) {
  static std::once_flag after_build, after_load;
  std::call_once(program_load ? after_load : after_build, [] { std::atexit(finish_live_queues); });
}

}  // namespace tg::qcom

tg_hwqueue_s::tg_hwqueue_s(tg::qcom::QueueBackend backend) : DeviceQueue(std::move(backend)) {
  static const bool registered = std::atexit(tg::qcom::finish_live_queues) == 0;
  (void)registered;
  std::lock_guard lock(tg::qcom::live_mutex);
  tg::qcom::live_queues().insert(this);
}

tg_hwqueue_s::~tg_hwqueue_s() {
  std::lock_guard lock(tg::qcom::live_mutex);
  tg::qcom::live_queues().erase(this);
}

template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::qcom::QueueBackend>;
