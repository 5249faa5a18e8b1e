// The NV plugin's HWQueue: commands (exec, copy, signal, timestamp) are recorded, then issued in order on one CUDA
// stream at submit; a signal or timestamp is a CUDA event, so waiting and timing read events.
#include "nv_plugin.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>
#include <utility>
#include <variant>

namespace tg::nv {

using sdk::cat;
using sdk::Error;

namespace {

constexpr uint32_t kBlock = 256;  // threads per block when the core leaves the local size to the plugin

struct ExecCommand {
  std::shared_ptr<Program> program;
  std::vector<unsigned char> args;  // operator new memory: aligned for every naturally aligned parameter
  uint32_t grid[3], block[3];       // cuLaunchKernel's: blocks per dim, threads per block
};
struct CopyCommand {
  CUdeviceptr dst, src;
  uint64_t size;
};
struct SignalCommand {
  uint64_t value;
};
struct TimestampCommand {
  uint64_t slot;
};
using Command = std::variant<ExecCommand, CopyCommand, SignalCommand, TimestampCommand>;

struct Event {
  CUevent event = nullptr;
  Event() = default;
  explicit Event(CUevent e) : event(e) {}
  Event(Event&& other) noexcept : event(std::exchange(other.event, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event, other.event);
    return *this;
  }
  ~Event() {
    if (event != nullptr) cuda().cuEventDestroy(event);
  }
};

Event new_event(unsigned flags) {
  CUevent event = nullptr;
  check_cu(cuda().cuEventCreate(&event, flags), "cuEventCreate");
  return Event(event);
}

}  // namespace
}  // namespace tg::nv

struct tg_hwqueue_s {
  std::shared_ptr<tg::nv::Device> device;
  tg::nv::CUstream stream = nullptr;
  std::mutex mutex;
  std::vector<tg::nv::Command> recorded;
  uint64_t signal = 0, recorded_max = 0;
  std::deque<std::pair<uint64_t, tg::nv::Event>> pending;  // submitted signals, increasing
  tg::nv::Event origin;                                    // time zero of the timestamps
  std::vector<tg::nv::Event> timestamps;

  ~tg_hwqueue_s() {
    if (stream == nullptr) return;
    tg::nv::cuda().cuCtxSetCurrent(device->context);
    tg::nv::cuda().cuStreamSynchronize(stream);  // commands still reference modules and memory
    pending.clear();
    timestamps.clear();
    origin = tg::nv::Event();
    tg::nv::cuda().cuStreamDestroy(stream);
  }
};

namespace tg::nv {

tg_status_t hwqueue_create(tg_device device, tg_hwqueue* out_queue) {
  return sdk::guard("nv hwqueue_create", [&] {
    sdk::require(out_queue, "out_queue");
    auto queue = std::make_unique<tg_hwqueue_s>();
    queue->device = device_of(device);
    queue->device->bind();
    check_cu(cuda().cuStreamCreate(&queue->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    queue->origin = new_event(CU_EVENT_DEFAULT);
    check_cu(cuda().cuEventRecord(queue->origin.event, queue->stream), "cuEventRecord");
    *out_queue = queue.release();
  });
}

void hwqueue_destroy(tg_hwqueue queue) {
  sdk::guard_void("nv hwqueue_destroy", [&] { delete queue; });
}

tg_status_t hwqueue_exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                         const tg_launch_dims* dims) {
  return sdk::guard("nv hwqueue_exec", [&] {
    sdk::require(queue, "queue");
    sdk::require(dims, "dims");
    std::shared_ptr<Program> prog = program_of(program);
    if (args_size != prog->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) sdk::require(args, "args");
    const uint64_t threads = uint64_t{std::max(dims->local[0], 1u)} * std::max(dims->local[1], 1u) * std::max(dims->local[2], 1u);
    if (threads > 1024 || dims->local[2] > 64)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", prog->kernel_name, ": work-groups of ", dims->local[0], "x", dims->local[1], "x",
                      dims->local[2], " exceed CUDA's 1024 threads per block (64 in z)"));
    if (dims->global[0] == 0 || dims->global[1] == 0 || dims->global[2] == 0) return;  // no work-items
    const auto* bytes = static_cast<const unsigned char*>(args);
    ExecCommand command{std::move(prog), std::vector<unsigned char>(bytes, bytes + args_size), {}, {}};
    for (int d = 0; d < 3; ++d) command.grid[d] = std::max(dims->global[d], 1u), command.block[d] = std::max(dims->local[d], 1u);
    // a one-dim launch with local 1 leaves the block to us: the kernel uses only global ids, which bound-check
    if (threads == 1 && command.grid[1] == 1 && command.grid[2] == 1) {
      command.block[0] = kBlock;
      command.grid[0] = static_cast<uint32_t>((uint64_t{command.grid[0]} + kBlock - 1) / kBlock);
    }
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(std::move(command));
  });
}

tg_status_t hwqueue_copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                         uint64_t src_offset, uint64_t size) {
  return sdk::guard("nv hwqueue_copy", [&] {
    sdk::require(queue, "queue");
    check_range(*sdk::require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*sdk::require(src, "src"), src_offset, size, "copy source");
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(CopyCommand{dst->addr + dst_offset, src->addr + src_offset, size});
  });
}

tg_status_t hwqueue_signal(tg_hwqueue queue, uint64_t value) {
  return sdk::guard("nv hwqueue_signal", [&] {
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

tg_status_t hwqueue_timestamp(tg_hwqueue queue, uint64_t* out_slot) {
  return sdk::guard("nv hwqueue_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_slot, "out_slot");
    std::lock_guard lock(queue->mutex);
    *out_slot = queue->timestamps.size();
    queue->timestamps.emplace_back();
    queue->recorded.emplace_back(TimestampCommand{*out_slot});
  });
}

tg_status_t hwqueue_submit(tg_hwqueue queue) {
  return sdk::guard("nv hwqueue_submit", [&] {
    sdk::require(queue, "queue");
    const CudaApi& cu = cuda();
    std::lock_guard lock(queue->mutex);
    queue->device->bind();
    std::vector<Command> commands;
    commands.swap(queue->recorded);
    for (Command& command : commands) {
      if (auto* exec = std::get_if<ExecCommand>(&command)) {
        if (exec->grid[0] == 0) continue;
        const Program& program = *exec->program;
        // cuLaunchKernel copies each parameter from its pointer: the blob already holds them at their offsets.
        std::vector<void*> params;
        for (size_t offset : program.offsets) params.push_back(exec->args.data() + offset);
        check_cu(cu.cuLaunchKernel(program.function, exec->grid[0], exec->grid[1], exec->grid[2], exec->block[0],
                                   exec->block[1], exec->block[2], 0, queue->stream,
                                   params.empty() ? nullptr : params.data(), nullptr),
                 cat("cuLaunchKernel(", program.kernel_name, ")").c_str());
      } else if (auto* copy = std::get_if<CopyCommand>(&command)) {
        if (copy->size != 0)
          check_cu(cu.cuMemcpyDtoDAsync(copy->dst, copy->src, copy->size, queue->stream), "cuMemcpyDtoDAsync");
      } else if (auto* signal = std::get_if<SignalCommand>(&command)) {
        Event event = new_event(CU_EVENT_DISABLE_TIMING);
        check_cu(cu.cuEventRecord(event.event, queue->stream), "cuEventRecord");
        queue->pending.emplace_back(signal->value, std::move(event));
      } else if (auto* stamp = std::get_if<TimestampCommand>(&command)) {
        Event event = new_event(CU_EVENT_DEFAULT);
        check_cu(cu.cuEventRecord(event.event, queue->stream), "cuEventRecord");
        queue->timestamps[stamp->slot] = std::move(event);
      }
    }
  });
}

tg_status_t hwqueue_wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) {
  return sdk::guard("nv hwqueue_wait", [&] {
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
    queue->device->bind();
    if (timeout_ns == 0) {
      check_cu(cuda().cuEventSynchronize(it->second.event), "cuEventSynchronize");
    } else {
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t{INT64_MAX} / 2));
      CUresult r;
      while ((r = cuda().cuEventQuery(it->second.event)) == CUDA_ERROR_NOT_READY) {
        if (std::chrono::steady_clock::now() >= deadline)
          throw Error(TG_ERR_UNAVAILABLE, cat("timed out after ", timeout_ns, " ns waiting for signal value ", value,
                                              " (it is ", queue->signal, ")"));
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      check_cu(r, "cuEventQuery");
    }
    queue->signal = it->first;
    queue->pending.erase(queue->pending.begin(), std::next(it));
  });
}

tg_status_t hwqueue_read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) {
  return sdk::guard("nv hwqueue_read_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_ns, "out_ns");
    std::lock_guard lock(queue->mutex);
    if (slot >= queue->timestamps.size())
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("no timestamp slot ", slot, " (", queue->timestamps.size(), " recorded)"));
    const CUevent event = queue->timestamps[slot].event;
    queue->device->bind();
    if (event == nullptr || cuda().cuEventQuery(event) != CUDA_SUCCESS)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("timestamp slot ", slot, " has not run yet; submit and wait first"));
    float ms = 0;
    check_cu(cuda().cuEventElapsedTime(&ms, queue->origin.event, event), "cuEventElapsedTime");
    *out_ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  });
}

}  // namespace tg::nv
