// The INTERP plugin's HWQueue: commands (exec, copy, signal, timestamp) are recorded, then run in order on the
// submitting thread. An exec interprets its program once per work-item of global dim 0.
#include "interp_plugin.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <variant>

namespace tg::interp {

using sdk::cat;
using sdk::Error;

namespace {

struct ExecCommand {
  std::shared_ptr<Program> program;  // keeps the code alive even if program_destroy comes before submit
  std::vector<unsigned char> args;   // operator new memory: aligned enough for every naturally aligned param
  uint64_t count;                    // global[0] work-items
};
struct CopyCommand {
  void* dst;
  const void* src;
  uint64_t size;
};
struct SignalCommand {
  uint64_t value;
};
struct TimestampCommand {
  uint64_t slot;
};
using Command = std::variant<ExecCommand, CopyCommand, SignalCommand, TimestampCommand>;

constexpr uint64_t kNotRun = UINT64_MAX;  // a timestamp slot whose command has not run

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace
}  // namespace tg::interp

struct tg_hwqueue_s {
  std::shared_ptr<tg::interp::Device> device;
  std::mutex submit_mutex;  // one submit at a time, so commands run in the order they were recorded
  std::mutex mutex;         // guards everything below
  std::condition_variable signal_changed;
  std::vector<tg::interp::Command> recorded;  // not yet submitted
  uint64_t signal = 0;                        // the queue's signal value
  uint64_t recorded_max = 0;                  // highest value a recorded signal command will set
  uint64_t running_max = 0;                   // highest value a submit now running will set
  std::vector<uint64_t> timestamps;           // ns per slot
};

namespace tg::interp {

tg_status_t hwqueue_create(tg_device device, tg_hwqueue* out_queue) {
  return sdk::guard("interp hwqueue_create", [&] {
    sdk::require(out_queue, "out_queue");
    auto queue = std::make_unique<tg_hwqueue_s>();
    queue->device = device_of(device);
    *out_queue = queue.release();
  });
}

void hwqueue_destroy(tg_hwqueue queue) {
  sdk::guard_void("interp hwqueue_destroy", [&] { delete queue; });
}

tg_status_t hwqueue_exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                         const tg_launch_dims* dims) {
  return sdk::guard("interp hwqueue_exec", [&] {
    sdk::require(queue, "queue");
    sdk::require(dims, "dims");
    std::shared_ptr<Program> prog = program_of(program);
    if (args_size != prog->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) sdk::require(args, "args");
    if (dims->global[1] > 1 || dims->global[2] > 1 || dims->local[0] > 1 || dims->local[1] > 1 || dims->local[2] > 1)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", prog->kernel_name, ": INTERP runs one global dim and no local dims, got global [",
                      dims->global[0], ",", dims->global[1], ",", dims->global[2], "] local [", dims->local[0], ",",
                      dims->local[1], ",", dims->local[2], "]"));
    const auto* bytes = static_cast<const unsigned char*>(args);
    ExecCommand command{std::move(prog), std::vector<unsigned char>(bytes, bytes + args_size), dims->global[0]};
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(std::move(command));
  });
}

tg_status_t hwqueue_copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                         uint64_t src_offset, uint64_t size) {
  return sdk::guard("interp hwqueue_copy", [&] {
    sdk::require(queue, "queue");
    check_range(*sdk::require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*sdk::require(src, "src"), src_offset, size, "copy source");
    CopyCommand command{reinterpret_cast<char*>(dst->addr) + dst_offset,
                        reinterpret_cast<const char*>(src->addr) + src_offset, size};
    std::lock_guard lock(queue->mutex);
    queue->recorded.emplace_back(command);
  });
}

tg_status_t hwqueue_signal(tg_hwqueue queue, uint64_t value) {
  return sdk::guard("interp hwqueue_signal", [&] {
    sdk::require(queue, "queue");
    std::lock_guard lock(queue->mutex);
    const uint64_t floor = std::max({queue->signal, queue->recorded_max, queue->running_max});
    if (value < floor)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("signal value ", value, " is below ", floor, ", and signals only grow"));
    queue->recorded.emplace_back(SignalCommand{value});
    queue->recorded_max = value;
  });
}

tg_status_t hwqueue_timestamp(tg_hwqueue queue, uint64_t* out_slot) {
  return sdk::guard("interp hwqueue_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_slot, "out_slot");
    std::lock_guard lock(queue->mutex);
    const uint64_t slot = queue->timestamps.size();
    queue->timestamps.push_back(kNotRun);
    queue->recorded.emplace_back(TimestampCommand{slot});
    *out_slot = slot;
  });
}

// A command that fails (an out-of-bounds access) ends the submit with its error; the commands after it do not
// run, and a wait for a signal they would have set reports that instead of hanging.
tg_status_t hwqueue_submit(tg_hwqueue queue) {
  return sdk::guard("interp hwqueue_submit", [&] {
    sdk::require(queue, "queue");
    std::lock_guard submitting(queue->submit_mutex);
    std::vector<Command> commands;
    {
      std::lock_guard lock(queue->mutex);
      commands.swap(queue->recorded);
      queue->running_max = queue->recorded_max;
    }
    struct EndOfSubmit {
      tg_hwqueue_s* queue;
      ~EndOfSubmit() {
        std::lock_guard lock(queue->mutex);
        queue->running_max = queue->signal;
        queue->signal_changed.notify_all();
      }
    } end_of_submit{queue};
    for (Command& command : commands) {
      if (auto* exec = std::get_if<ExecCommand>(&command)) {
        execute(*exec->program->code, *queue->device, exec->args.data(), exec->count);
      } else if (auto* copy = std::get_if<CopyCommand>(&command)) {
        if (copy->size != 0) std::memmove(copy->dst, copy->src, copy->size);
      } else if (auto* signal = std::get_if<SignalCommand>(&command)) {
        std::lock_guard lock(queue->mutex);
        queue->signal = signal->value;
        queue->signal_changed.notify_all();
      } else if (auto* stamp = std::get_if<TimestampCommand>(&command)) {
        const uint64_t ns = now_ns();
        std::lock_guard lock(queue->mutex);
        queue->timestamps[stamp->slot] = ns;
      }
    }
  });
}

// Only a submitted command can raise the signal while we wait, so a value that neither the signal nor a running
// submit reaches is an error now rather than a hang.
tg_status_t hwqueue_wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) {
  return sdk::guard("interp hwqueue_wait", [&] {
    sdk::require(queue, "queue");
    std::unique_lock lock(queue->mutex);
    const auto reached = [&] { return queue->signal >= value; };
    if (reached()) return;
    if (queue->running_max < value)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("waiting for signal value ", value, " would never end: the signal is ", queue->signal,
                      queue->recorded_max >= value ? " and the command that raises it is not submitted"
                                                   : " and no recorded command raises it that far"));
    const auto done = [&] { return reached() || queue->running_max < value; };
    const bool forever = timeout_ns == 0 || timeout_ns > uint64_t{INT64_MAX} / 2;  // also: no signed overflow
    if (forever)
      queue->signal_changed.wait(lock, done);
    else if (!queue->signal_changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns), done))
      throw Error(TG_ERR_UNAVAILABLE, cat("timed out after ", timeout_ns, " ns waiting for signal value ", value,
                                          " (it is ", queue->signal, ")"));
    if (!reached())
      throw Error(TG_ERR_INTERNAL, cat("the submit ended before signal value ", value, " (it is ", queue->signal, ")"));
  });
}

tg_status_t hwqueue_read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) {
  return sdk::guard("interp hwqueue_read_timestamp", [&] {
    sdk::require(queue, "queue");
    sdk::require(out_ns, "out_ns");
    std::lock_guard lock(queue->mutex);
    if (slot >= queue->timestamps.size())
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("no timestamp slot ", slot, " (", queue->timestamps.size(), " recorded)"));
    if (queue->timestamps[slot] == kNotRun)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("timestamp slot ", slot, " has not run yet; submit the queue first"));
    *out_ns = queue->timestamps[slot];
  });
}

}  // namespace tg::interp
