// The QCOM plugin's HWQueue: commands (exec, copy, signal, timestamp) are recorded, then enqueued in order on an
// in-order cl_command_queue at submit; a signal or timestamp is a marker event, so waiting and timing read events.
#include "qcom_plugin.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <deque>
#include <set>
#include <thread>
#include <utility>
#include <variant>

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

namespace {

struct ExecCommand {
  std::shared_ptr<Program> program;  // keeps the kernel alive even if program_destroy comes before submit
  std::vector<unsigned char> args;
  size_t global[3], local[3];
  cl_uint dims;
  bool has_local;  // false: the driver picks the work-group size
};
struct CopyCommand {
  cl_mem dst, src;
  uint64_t dst_offset, src_offset, size;
};
struct SignalCommand {
  uint64_t value;
};
struct TimestampCommand {
  uint64_t slot;
};
using Command = std::variant<ExecCommand, CopyCommand, SignalCommand, TimestampCommand>;

// An event reference released with its owner.
struct Event {
  cl_event event = nullptr;
  Event() = default;
  explicit Event(cl_event e) : event(e) {}
  Event(Event&& other) noexcept : event(std::exchange(other.event, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event, other.event);
    return *this;
  }
  ~Event() {
    if (event != nullptr) cl().clReleaseEvent(event);
  }
};

cl_int event_status(cl_event event) {
  cl_int status = CL_QUEUED;
  check_cl(cl().clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
           "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
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
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", program.kernel_name, ": clSetKernelArg(", p,
                                               ") failed: ", cl_error_name(err)));
  }
}

}  // namespace
}  // namespace tg::qcom

struct tg_hwqueue_s;

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
void finish_live_queues();

}  // namespace
}  // namespace tg::qcom

struct tg_hwqueue_s {
  std::shared_ptr<tg::qcom::Device> device;
  cl_command_queue queue = nullptr;
  std::mutex mutex;  // guards everything below, and keeps one submit's commands together on the queue
  std::vector<tg::qcom::Command> recorded;  // not yet submitted
  uint64_t signal = 0;                      // highest signal value known to be reached
  uint64_t recorded_max = 0;                // highest value a recorded signal command will set
  std::deque<std::pair<uint64_t, tg::qcom::Event>> pending;  // submitted signals, in increasing value
  std::vector<tg::qcom::Event> timestamps;  // per slot: its marker event once submitted

  ~tg_hwqueue_s() {
    {
      std::lock_guard lock(tg::qcom::live_mutex);
      tg::qcom::live_queues().erase(this);
    }
    if (queue == nullptr || tg::qcom::process_exiting()) return;
    tg::qcom::cl().clFinish(queue);  // commands still reference kernels and buffers
    tg::qcom::release_queue_images(*device, queue);
    pending.clear();
    timestamps.clear();
    tg::qcom::cl().clReleaseCommandQueue(queue);
  }
};

namespace tg::qcom {
namespace {

void finish_live_queues() {
  set_process_exiting();
  std::lock_guard lock(live_mutex);
  for (tg_hwqueue_s* queue : live_queues())
    if (queue->queue != nullptr) cl().clFinish(queue->queue);
}

}  // namespace

tg_status_t QueueSlots::create(tg_device device, tg_hwqueue* out_queue) noexcept {
  return sdk::guard("qcom hwqueue_create", [&] {
    sdk::require(out_queue, "out_queue");
    auto queue = std::make_unique<tg_hwqueue_s>();
    queue->device = device_of(device);
    cl_int err = CL_SUCCESS;
    queue->queue = cl().clCreateCommandQueue(queue->device->context, queue->device->id, CL_QUEUE_PROFILING_ENABLE,
                                             &err);
    check_cl(err, "clCreateCommandQueue");
    static const bool registered = std::atexit(finish_live_queues) == 0;
    (void)registered;
    std::lock_guard lock(live_mutex);
    live_queues().insert(queue.get());
    *out_queue = queue.release();
  });
}

void QueueSlots::destroy(tg_hwqueue queue) noexcept {
  sdk::guard_void("qcom hwqueue_destroy", [&] { delete queue; });
}

tg_status_t QueueSlots::exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                         const tg_launch_dims* dims) noexcept {
  return sdk::guard("qcom hwqueue_exec", [&] {
    sdk::require(queue, "queue");
    sdk::require(dims, "dims");
    std::shared_ptr<Program> prog = ProgramSlots::of(program);
    if (args_size != prog->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) sdk::require(args, "args");
    ExecCommand command{std::move(prog), {}, {}, {}, 1, false};
    // tg's global counts work-groups (plugin_abi.h); OpenCL's global size counts work-items.
    for (int d = 0; d < 3; ++d) {
      command.local[d] = std::max<uint32_t>(dims->local[d], 1);
      command.global[d] = size_t{dims->global[d]} * command.local[d];
      if (dims->global[d] > 1 || dims->local[d] > 1) command.dims = static_cast<cl_uint>(d + 1);
      command.has_local |= dims->local[d] > 1;
    }
    const auto* bytes = static_cast<const unsigned char*>(args);
    command.args.assign(bytes, bytes + args_size);
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(std::move(command));
  });
}

tg_status_t QueueSlots::copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                         uint64_t src_offset, uint64_t size) noexcept {
  return sdk::guard("qcom hwqueue_copy", [&] {
    sdk::require(queue, "queue");
    check_range(*sdk::require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*sdk::require(src, "src"), src_offset, size, "copy source");
    CopyCommand command{static_cast<cl_mem>(dst->handle), static_cast<cl_mem>(src->handle), dst_offset, src_offset,
                        size};
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(command);
  });
}

tg_status_t QueueSlots::signal(tg_hwqueue queue, uint64_t value) noexcept {
  return sdk::guard("qcom hwqueue_signal", [&] {
    sdk::require(queue, "queue");
    std::lock_guard lock(queue->mutex);
    const uint64_t floor = std::max({queue->signal, queue->recorded_max,
                                     queue->pending.empty() ? uint64_t{0} : queue->pending.back().first});
    if (value < floor)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("signal value ", value, " is below ", floor, ", and signals only grow"));
    queue->recorded.emplace_back(SignalCommand{value});
    queue->recorded_max = value;
  });
}

tg_status_t QueueSlots::timestamp(tg_hwqueue queue, uint64_t* out_slot) noexcept {
  return sdk::guard("qcom hwqueue_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_slot, "out_slot");
    std::lock_guard lock(queue->mutex);
    const uint64_t slot = queue->timestamps.size();
    queue->timestamps.emplace_back();
    queue->recorded.emplace_back(TimestampCommand{slot});
    *out_slot = slot;
  });
}

// Enqueues every recorded command. A command the driver refuses ends the submit with its error; the commands
// before it are already on the queue and run.
tg_status_t QueueSlots::submit(tg_hwqueue queue) noexcept {
  return sdk::guard("qcom hwqueue_submit", [&] {
    sdk::require(queue, "queue");
    const ClApi& api = cl();
    std::lock_guard lock(queue->mutex);
    std::vector<Command> commands;
    commands.swap(queue->recorded);
    for (Command& command : commands) {
      if (auto* exec = std::get_if<ExecCommand>(&command)) {
        if (exec->global[0] == 0 || exec->global[1] == 0 || exec->global[2] == 0) continue;  // no work-items
        Program& program = *exec->program;
        std::lock_guard args_lock(program.arg_mutex);
        set_args(program, exec->args.data(), queue->queue);
        const cl_int err = api.clEnqueueNDRangeKernel(queue->queue, program.kernel, exec->dims, nullptr, exec->global,
                                                      exec->has_local ? exec->local : nullptr, 0, nullptr, nullptr);
        if (err != CL_SUCCESS)
          throw Error(err == CL_OUT_OF_RESOURCES ? TG_ERR_OUT_OF_MEMORY : TG_ERR_INVALID_ARGUMENT,
                      cat("kernel ", program.kernel_name, ": clEnqueueNDRangeKernel failed: ", cl_error_name(err)));
      } else if (auto* copy = std::get_if<CopyCommand>(&command)) {
        if (copy->size == 0) continue;
        check_cl(api.clEnqueueCopyBuffer(queue->queue, copy->src, copy->dst, copy->src_offset, copy->dst_offset,
                                         copy->size, 0, nullptr, nullptr),
                 "clEnqueueCopyBuffer");
      } else if (auto* signal = std::get_if<SignalCommand>(&command)) {
        cl_event event = nullptr;
        check_cl(api.clEnqueueMarkerWithWaitList(queue->queue, 0, nullptr, &event), "clEnqueueMarkerWithWaitList");
        queue->pending.emplace_back(signal->value, Event(event));
      } else if (auto* stamp = std::get_if<TimestampCommand>(&command)) {
        cl_event event = nullptr;
        check_cl(api.clEnqueueMarkerWithWaitList(queue->queue, 0, nullptr, &event), "clEnqueueMarkerWithWaitList");
        queue->timestamps[stamp->slot] = Event(event);
      }
    }
    check_cl(api.clFlush(queue->queue), "clFlush");
  });
}

// Waits on the marker of the first submitted signal that reaches `value`. A value that no submitted signal
// reaches is an error now rather than a hang.
tg_status_t QueueSlots::wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) noexcept {
  return sdk::guard("qcom hwqueue_wait", [&] {
    sdk::require(queue, "queue");
    std::lock_guard lock(queue->mutex);
    if (queue->signal >= value) return;
    auto it = std::find_if(queue->pending.begin(), queue->pending.end(),
                           [&](const auto& entry) { return entry.first >= value; });
    if (it == queue->pending.end())
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("waiting for signal value ", value, " would never end: the signal is ", queue->signal,
                      queue->recorded_max >= value ? " and the command that raises it is not submitted"
                                                   : " and no recorded command raises it that far"));
    const cl_event event = it->second.event;
    if (timeout_ns == 0) {
      const cl_int err = cl().clWaitForEvents(1, &event);
      if (err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) check_cl(err, "clWaitForEvents");
    } else {
      // OpenCL has no timed wait: poll the marker's status.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::min<uint64_t>(
                                                                  timeout_ns, uint64_t{INT64_MAX} / 2));
      while (event_status(event) > CL_COMPLETE) {
        if (std::chrono::steady_clock::now() >= deadline)
          throw Error(TG_ERR_UNAVAILABLE, cat("timed out after ", timeout_ns, " ns waiting for signal value ", value,
                                              " (it is ", queue->signal, ")"));
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
    const cl_int status = event_status(event);
    if (status < 0)
      throw Error(TG_ERR_INTERNAL, cat("a command before signal value ", value, " failed: ", cl_error_name(status)));
    // In-order queue: every earlier marker has completed too.
    queue->signal = it->first;
    queue->pending.erase(queue->pending.begin(), std::next(it));
  });
}

tg_status_t QueueSlots::read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) noexcept {
  return sdk::guard("qcom hwqueue_read_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_ns, "out_ns");
    std::lock_guard lock(queue->mutex);
    if (slot >= queue->timestamps.size())
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("no timestamp slot ", slot, " (", queue->timestamps.size(), " recorded)"));
    const cl_event event = queue->timestamps[slot].event;
    if (event == nullptr || event_status(event) != CL_COMPLETE)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("timestamp slot ", slot, " has not run yet; submit and wait first"));
    cl_ulong ns = 0;
    check_cl(cl().clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof ns, &ns, nullptr),
             "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)");
    *out_ns = ns;
  });
}

}  // namespace tg::qcom
