// tg::sdk::HostQueue: the HWQueue of a device whose kernels run on the host. Commands (exec, copy, signal,
// timestamp) are recorded, then run in order on the submitting thread; the plugin supplies how one exec runs.
//
// A plugin describes itself to the queue in a hooks struct:
//
//   struct QueueHooks {
//     using Device = my::Device;
//     using Program = my::Program;  // has `kernel_name` and `args_size` (bytes of the packed argument blob)
//     static constexpr std::string_view plugin = "mydev";  // starts every message: "mydev hwqueue_exec: ..."
//     static constexpr std::string_view device_label = "MYDEV";  // "kernel k: MYDEV runs one global dim and ..."
//     static std::shared_ptr<Device> device_of(tg_device device);      // throws on NULL
//     static std::shared_ptr<Program> program_of(tg_program program);  // throws on NULL
//     // Runs work-items [0, count) of global dim 0; what it throws ends the submit with that error.
//     static void run(Device& device, const Program& program, const unsigned char* args, uint64_t count);
//   };
//
// makes its queue handle one, and fills the table's hwqueue slots from HostQueueSlots:
//
//   struct tg_hwqueue_s : tg::sdk::HostQueue<my::QueueHooks> { using HostQueue::HostQueue; };
//   .hwqueue_exec = tg::sdk::HostQueueSlots<tg_hwqueue_s>::exec,  (and so on for all nine)
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tg::sdk {

// Throws TG_ERR_INVALID_ARGUMENT unless [offset, offset+size) lies inside a host buffer that has an address.
inline void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  check_extent(buffer, offset, size, what);
  if (size != 0 && buffer.addr == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": buffer has no address"));
}

// The queue behind a plugin's tg_hwqueue_s; HooksT is the plugin's hooks struct (see the top of this file).
template <class HooksT>
class HostQueue {
 public:
  using Hooks = HooksT;
  using Device = typename Hooks::Device;
  using Program = typename Hooks::Program;

  explicit HostQueue(std::shared_ptr<Device> device) : device_(std::move(device)) {}

  // Records a launch of `program` over global[0] work-items, with a copy of its packed arguments.
  void record_exec(std::shared_ptr<Program> program, const void* args, size_t args_size, const tg_launch_dims& dims) {
    if (args_size != program->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", program->kernel_name, " takes ", program->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) require(args, "args");
    if (dims.global[1] > 1 || dims.global[2] > 1 || dims.local[0] > 1 || dims.local[1] > 1 || dims.local[2] > 1)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", program->kernel_name, ": ", Hooks::device_label,
                      " runs one global dim and no local dims, got global [", dims.global[0], ",", dims.global[1], ",",
                      dims.global[2], "] local [", dims.local[0], ",", dims.local[1], ",", dims.local[2], "]"));
    const auto* bytes = static_cast<const unsigned char*>(args);
    ExecCommand command{std::move(program), std::vector<unsigned char>(bytes, bytes + args_size), dims.global[0]};
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(std::move(command));
  }

  // Records a copy of `size` bytes between two host buffers (they may overlap).
  void record_copy(const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src, uint64_t src_offset,
                   uint64_t size) {
    check_range(*require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*require(src, "src"), src_offset, size, "copy source");
    CopyCommand command{reinterpret_cast<char*>(dst->addr) + dst_offset,
                        reinterpret_cast<const char*>(src->addr) + src_offset, size};
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(command);
  }

  // Records setting the queue's signal to `value`, which may not be below any value it has or will have.
  void record_signal(uint64_t value) {
    std::lock_guard lock(mutex_);
    const uint64_t floor = std::max({signal_, recorded_max_, running_max_});
    if (value < floor)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("signal value ", value, " is below ", floor, ", and signals only grow"));
    recorded_.emplace_back(SignalCommand{value});
    recorded_max_ = value;
  }

  // Records a time stamp; returns its slot for read_timestamp().
  uint64_t record_timestamp() {
    std::lock_guard lock(mutex_);
    const uint64_t slot = timestamps_.size();
    timestamps_.push_back(kNotRun);
    recorded_.emplace_back(TimestampCommand{slot});
    return slot;
  }

  // Runs every recorded command in order on this thread. A command that throws ends the submit with its error;
  // the commands after it do not run, and a wait for a signal they would have set reports that instead of hanging.
  void submit() {
    std::lock_guard submitting(submit_mutex_);
    std::vector<Command> commands;
    {
      std::lock_guard lock(mutex_);
      commands.swap(recorded_);
      running_max_ = recorded_max_;
    }
    // However the loop ends, no command of this submit is still coming: waiters must not count on one.
    struct EndOfSubmit {
      HostQueue* queue;
      ~EndOfSubmit() {
        std::lock_guard lock(queue->mutex_);
        queue->running_max_ = queue->signal_;
        queue->signal_changed_.notify_all();
      }
    } end_of_submit{this};
    // this->: clang takes a dependent call in a generic lambda for one that needs no `this` (-Wunused-lambda-capture)
    for (Command& command : commands) std::visit([this](auto& c) { this->run(c); }, command);
  }

  // Blocks until the signal reaches `value` (timeout_ns 0: no limit). Only a submitted command can raise the
  // signal while we wait, so a value that neither the signal nor a running submit reaches is an error now rather
  // than a hang.
  void wait(uint64_t value, uint64_t timeout_ns) {
    std::unique_lock lock(mutex_);
    const auto reached = [&] { return signal_ >= value; };
    if (reached()) return;
    if (running_max_ < value)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("waiting for signal value ", value, " would never end: the signal is ", signal_,
                      recorded_max_ >= value ? " and the command that raises it is not submitted"
                                             : " and no recorded command raises it that far"));
    // Woken by every signal and by the end of the submit; give up if the submit ended short of the value.
    const auto done = [&] { return reached() || running_max_ < value; };
    const bool forever = timeout_ns == 0 || timeout_ns > uint64_t{INT64_MAX} / 2;  // also: no signed overflow
    if (forever)
      signal_changed_.wait(lock, done);
    else if (!signal_changed_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), done))
      throw Error(TG_ERR_UNAVAILABLE, cat("timed out after ", timeout_ns, " ns waiting for signal value ", value,
                                          " (it is ", signal_, ")"));
    if (!reached())
      throw Error(TG_ERR_INTERNAL, cat("the submit ended before signal value ", value, " (it is ", signal_, ")"));
  }

  // The steady-clock time, in ns, at which the timestamp command of `slot` ran.
  uint64_t read_timestamp(uint64_t slot) {
    std::lock_guard lock(mutex_);
    if (slot >= timestamps_.size())
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("no timestamp slot ", slot, " (", timestamps_.size(), " recorded)"));
    if (timestamps_[slot] == kNotRun)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("timestamp slot ", slot, " has not run yet; submit the queue first"));
    return timestamps_[slot];
  }

 private:
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

  static constexpr uint64_t kNotRun = UINT64_MAX;  // a timestamp slot whose command has not run

  void run(const ExecCommand& exec) { Hooks::run(*device_, *exec.program, exec.args.data(), exec.count); }
  void run(const CopyCommand& copy) {
    if (copy.size != 0) std::memmove(copy.dst, copy.src, copy.size);
  }
  void run(const SignalCommand& signal) {
    std::lock_guard lock(mutex_);
    signal_ = signal.value;
    signal_changed_.notify_all();
  }
  void run(const TimestampCommand& stamp) {
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    std::lock_guard lock(mutex_);
    timestamps_[stamp.slot] = ns;
  }

  std::shared_ptr<Device> device_;
  std::mutex submit_mutex_;  // one submit at a time, so commands run in the order they were recorded
  std::mutex mutex_;         // guards everything below
  std::condition_variable signal_changed_;
  std::vector<Command> recorded_;     // not yet submitted
  uint64_t signal_ = 0;               // the queue's signal value
  uint64_t recorded_max_ = 0;         // highest value a recorded signal command will set
  uint64_t running_max_ = 0;          // highest value a submit now running will set
  std::vector<uint64_t> timestamps_;  // ns per slot
};

namespace host_queue_detail {

inline constexpr std::string_view kCreate = "hwqueue_create", kDestroy = "hwqueue_destroy", kExec = "hwqueue_exec",
                                  kCopy = "hwqueue_copy", kSignal = "hwqueue_signal", kTimestamp = "hwqueue_timestamp",
                                  kSubmit = "hwqueue_submit", kWait = "hwqueue_wait",
                                  kReadTimestamp = "hwqueue_read_timestamp", kDeviceSynchronize = "device_synchronize";

}  // namespace host_queue_detail

// The nine hwqueue slots of a plugin table whose queue handle `Queue` (the plugin's tg_hwqueue_s) is a HostQueue.
template <class Queue>
struct HostQueueSlots {
  static_assert(std::is_same_v<Queue*, tg_hwqueue>, "Queue must be the plugin's tg_hwqueue_s");
  using Hooks = typename Queue::Hooks;
  // The slots take Queue* (the same type as tg_hwqueue, asserted above) so that it is complete where they are used.

  template <const std::string_view& Slot>
  static constexpr const char* where = slot_where<Hooks::plugin, Slot>;

  static tg_status_t create(tg_device device, Queue** out_queue) noexcept {
    return guard(where<host_queue_detail::kCreate>, [&] {
      require(out_queue, "out_queue");
      *out_queue = new Queue(Hooks::device_of(device));
    });
  }

  static void destroy(Queue* queue) noexcept {
    guard_void(where<host_queue_detail::kDestroy>, [&] { delete queue; });
  }

  // ABI 1.1's device_synchronize: a host queue runs its commands inside submit, so once every submit returned
  // nothing is pending; only the handle is checked.
  static tg_status_t device_synchronize(tg_device device) noexcept {
    return guard(where<host_queue_detail::kDeviceSynchronize>, [&] { Hooks::device_of(device); });
  }

  static tg_status_t exec(Queue* queue, tg_program program, const void* args, size_t args_size,
                          const tg_launch_dims* dims) noexcept {
    return guard(where<host_queue_detail::kExec>, [&] {
      require(queue, "queue");
      require(dims, "dims");
      queue->record_exec(Hooks::program_of(program), args, args_size, *dims);
    });
  }

  static tg_status_t copy(Queue* queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                          uint64_t src_offset, uint64_t size) noexcept {
    return guard(where<host_queue_detail::kCopy>,
                 [&] { require(queue, "queue")->record_copy(dst, dst_offset, src, src_offset, size); });
  }

  static tg_status_t signal(Queue* queue, uint64_t value) noexcept {
    return guard(where<host_queue_detail::kSignal>, [&] { require(queue, "queue")->record_signal(value); });
  }

  static tg_status_t timestamp(Queue* queue, uint64_t* out_slot) noexcept {
    return guard(where<host_queue_detail::kTimestamp>, [&] {
      require(queue, "queue");
      require(out_slot, "out_slot");
      *out_slot = queue->record_timestamp();
    });
  }

  static tg_status_t submit(Queue* queue) noexcept {
    return guard(where<host_queue_detail::kSubmit>, [&] { require(queue, "queue")->submit(); });
  }

  static tg_status_t wait(Queue* queue, uint64_t value, uint64_t timeout_ns) noexcept {
    return guard(where<host_queue_detail::kWait>, [&] { require(queue, "queue")->wait(value, timeout_ns); });
  }

  static tg_status_t read_timestamp(Queue* queue, uint64_t slot, uint64_t* out_ns) noexcept {
    return guard(where<host_queue_detail::kReadTimestamp>, [&] {
      require(queue, "queue");
      require(out_ns, "out_ns");
      *out_ns = queue->read_timestamp(slot);
    });
  }
};

}  // namespace tg::sdk
