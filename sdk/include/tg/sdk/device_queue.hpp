// tg::sdk::DeviceQueue: the HWQueue of an asynchronous GPU API (CUDA, HIP, OpenCL): commands (exec, copy, signal,
// timestamp) are recorded, then issued in order on one stream at submit; a signal or a timestamp is an event the
// stream records, so waiting and timing read events. The "signals only grow" contract is kept here once: a signal
// below one already recorded or submitted is refused, and waiting for a value no recorded command reaches is an
// error rather than a hang. (HostQueue, host_queue.hpp, keeps the same contract for queues that run on the host.)
//
// The plugin supplies a Backend, the stream's owner:
//   struct Backend {
//     using Program = ...;   // what exec launches (a shared_ptr to the plugin's program, say)
//     using Event = ...;     // movable, releases itself; default-constructible as "none", false when none
//     void bind();                                        // makes the device current on this thread
//     void launch(const Program&, std::vector<unsigned char>& args, const uint32_t grid[3], const uint32_t block[3]);
//     void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
//               uint64_t size);                           // device to device, on the stream (size > 0)
//     Event record(bool timing);                          // an event recorded on the stream now
//     bool done(const Event&);                            // whether it completed (throws on a failed query, or
//                                                         // when a command before it failed)
//     void synchronize(const Event&);                     // blocks until it completed (throws likewise)
//     double elapsed_ms(const Event& from, const Event& to);
//     // optional:
//     void flush();              // after a submit issued its commands (OpenCL's clFlush)
//     void finish() noexcept;    // the queue's destructor: waits for the stream's commands, then drops its events,
//     void close() noexcept;     // then releases the stream
//   };
// The queue's methods throw tg::sdk::Error. DeviceQueueSlots<Queue> (below) are the table's nine hwqueue slots for a
// plugin whose tg_hwqueue_s is a DeviceQueue; it asks the Backend a few more things, listed there.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/device_allocator.hpp>
#include <tg/sdk/status.hpp>

#include <memory>
#include <string_view>
#include <type_traits>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace tg::sdk {

template <class BackendT>
class DeviceQueue {
 public:
  using Backend = BackendT;
  using Program = typename Backend::Program;
  using Event = typename Backend::Event;

  explicit DeviceQueue(Backend backend) : backend_(std::move(backend)) {
    try {
      origin_ = backend_.record(true);
    } catch (...) {
      if constexpr (requires { backend_.close(); }) backend_.close();  // the destructor will not run
      throw;
    }
  }
  ~DeviceQueue() {
    if constexpr (requires { backend_.close(); }) {
      backend_.finish();  // commands still reference programs and memory
      release_events();   // before the stream goes
      backend_.close();
    }
  }
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;
  Backend& backend() { return backend_; }

  // Records a launch: `grid` work-groups of `block` work-items, the packed arguments copied.
  void exec(Program program, const void* args, size_t args_size, const uint32_t grid[3], const uint32_t block[3]) {
    const auto* bytes = static_cast<const unsigned char*>(args);
    ExecCommand command{std::move(program), std::vector<unsigned char>(bytes, bytes + args_size), {}, {}};
    for (int d = 0; d < 3; ++d) command.grid[d] = grid[d], command.block[d] = block[d];
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(std::move(command));
  }

  // Records a copy of `size` bytes between two of the device's buffers (ranges checked by the caller).
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size) {
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(CopyCommand{dst, src, dst_offset, src_offset, size});
  }

  void signal(uint64_t value) {
    std::lock_guard lock(mutex_);
    const uint64_t floor = std::max({signal_, recorded_max_, pending_.empty() ? uint64_t{0} : pending_.back().first});
    if (value < floor)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("signal value ", value, " is below ", floor, ", and signals only grow"));
    recorded_.emplace_back(SignalCommand{value});
    recorded_max_ = value;
  }

  uint64_t timestamp() {
    std::lock_guard lock(mutex_);
    const uint64_t slot = timestamps_.size();
    timestamps_.emplace_back();
    recorded_.emplace_back(TimestampCommand{slot});
    return slot;
  }

  void submit() {
    std::lock_guard lock(mutex_);
    backend_.bind();
    std::vector<Command> commands;
    commands.swap(recorded_);
    for (Command& command : commands) {
      if (auto* exec = std::get_if<ExecCommand>(&command)) {
        backend_.launch(exec->program, exec->args, exec->grid, exec->block);
      } else if (auto* copy = std::get_if<CopyCommand>(&command)) {
        if (copy->size != 0) backend_.copy(copy->dst, copy->dst_offset, copy->src, copy->src_offset, copy->size);
      } else if (auto* signal = std::get_if<SignalCommand>(&command)) {
        pending_.emplace_back(signal->value, backend_.record(false));
      } else if (auto* stamp = std::get_if<TimestampCommand>(&command)) {
        timestamps_[stamp->slot] = backend_.record(true);
      }
    }
    if constexpr (requires { backend_.flush(); }) backend_.flush();
  }

  // Blocks until the signal reaches `value` (timeout_ns = 0: forever).
  void wait(uint64_t value, uint64_t timeout_ns) {
    std::lock_guard lock(mutex_);
    if (signal_ >= value) return;
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& entry) { return entry.first >= value; });
    if (it == pending_.end())
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("waiting for signal value ", value, " would never end: the signal is ", signal_,
                      recorded_max_ >= value ? " and the command that raises it is not submitted"
                                             : " and no recorded command raises it that far"));
    backend_.bind();
    if (timeout_ns == 0) {
      backend_.synchronize(it->second);
    } else {
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t{INT64_MAX} / 2));
      while (!backend_.done(it->second)) {
        if (std::chrono::steady_clock::now() >= deadline)
          throw Error(TG_ERR_UNAVAILABLE, cat("timed out after ", timeout_ns, " ns waiting for signal value ", value,
                                              " (it is ", signal_, ")"));
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
    signal_ = it->first;
    pending_.erase(pending_.begin(), std::next(it));
  }

  // Nanoseconds from the queue's creation to time stamp `slot`, once it ran.
  uint64_t read_timestamp(uint64_t slot) {
    std::lock_guard lock(mutex_);
    if (slot >= timestamps_.size())
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("no timestamp slot ", slot, " (", timestamps_.size(), " recorded)"));
    const Event& event = timestamps_[slot];
    backend_.bind();
    if (!event || !backend_.done(event))
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("timestamp slot ", slot, " has not run yet; submit and wait first"));
    return static_cast<uint64_t>(backend_.elapsed_ms(origin_, event) * 1e6);
  }

  // Drops the events (before the backend's stream goes): the destructor calls it after the backend's finish().
  void release_events() {
    pending_.clear();
    timestamps_.clear();
    origin_ = Event();
  }

 private:
  struct ExecCommand {
    Program program;
    std::vector<unsigned char> args;  // operator new memory: aligned for every naturally aligned parameter
    uint32_t grid[3], block[3];
  };
  struct CopyCommand {
    tg_buffer_desc dst, src;
    uint64_t dst_offset, src_offset, size;
  };
  struct SignalCommand {
    uint64_t value;
  };
  struct TimestampCommand {
    uint64_t slot;
  };
  using Command = std::variant<ExecCommand, CopyCommand, SignalCommand, TimestampCommand>;

  Backend backend_;
  std::mutex mutex_;
  std::vector<Command> recorded_;
  uint64_t signal_ = 0, recorded_max_ = 0;
  std::deque<std::pair<uint64_t, Event>> pending_;  // submitted signals, increasing
  Event origin_;                                    // time zero of the timestamps
  std::vector<Event> timestamps_;
};

// tg's launch dims as a CUDA/HIP-style launch: `grid` work-groups of `block` work-items per dim (at least 1 each).
// A one-dim launch with local size 1 leaves the group to the plugin: `default_block` work-items, the grid rounded
// up (the kernel uses only global ids, which bound-check). Returns false when a dim has no work-items (nothing is
// launched); grid and block are filled either way, so the plugin can check its limits on them.
inline bool gpu_launch_shape(const tg_launch_dims& dims, uint32_t default_block, uint32_t grid[3], uint32_t block[3]) {
  for (int d = 0; d < 3; ++d) grid[d] = std::max(dims.global[d], 1u), block[d] = std::max(dims.local[d], 1u);
  if (dims.global[0] == 0 || dims.global[1] == 0 || dims.global[2] == 0) return false;
  if (block[0] == 1 && block[1] == 1 && block[2] == 1 && grid[1] == 1 && grid[2] == 1) {
    block[0] = default_block;
    grid[0] = static_cast<uint32_t>((uint64_t{grid[0]} + default_block - 1) / default_block);
  }
  return true;
}

namespace device_queue_detail {

inline constexpr std::string_view kCreate = "hwqueue_create", kDestroy = "hwqueue_destroy", kExec = "hwqueue_exec",
                                  kCopy = "hwqueue_copy", kSignal = "hwqueue_signal", kTimestamp = "hwqueue_timestamp",
                                  kSubmit = "hwqueue_submit", kWait = "hwqueue_wait",
                                  kReadTimestamp = "hwqueue_read_timestamp";

}  // namespace device_queue_detail

// The nine hwqueue slots of a plugin table whose queue handle `Queue` (the plugin's tg_hwqueue_s) derives from
// DeviceQueue<Backend>, constructible from a Backend (both named, so that Queue may still be incomplete here).
// Besides the stream, the Backend says (static members):
//   static constexpr std::string_view plugin = "nv";        // messages read "nv hwqueue_exec: ..."
//   static Backend open(tg_device device);                   // a new stream on the device (throws on NULL)
//   // optional: the program behind a handle (default: the handle's `program` member, as sdk::ProgramSlots makes
//   // it); it has ->kernel_name and ->args_size. Throws on NULL.
//   static Program program_of(tg_program program);
//   // optional: a copy's range check (default: check_device_range, tg/sdk/device_allocator.hpp)
//   static void check_range(const tg_buffer_desc&, uint64_t offset, uint64_t size, const char* what);
//   // The launch shape of tg's dims (global counts work-groups): false when there is nothing to run; throws
//   // TG_ERR_INVALID_ARGUMENT naming the kernel where the device cannot launch it.
//   static bool launch_shape(const Program&, const tg_launch_dims&, uint32_t grid[3], uint32_t block[3]);
//
// The slots are defined out of the class, so that a plugin's header can name them (`extern template struct
// DeviceQueueSlots<tg_hwqueue_s, QueueBackend>;`) while its hwqueue.cpp, where both are complete, compiles them
// (`template struct ...;`).
template <class Queue, class Backend>
struct DeviceQueueSlots {
  static_assert(std::is_same_v<Queue*, tg_hwqueue>, "Queue must be the plugin's tg_hwqueue_s");
  static tg_status_t create(tg_device device, Queue** out_queue) noexcept;
  static void destroy(Queue* queue) noexcept;
  static tg_status_t exec(Queue* queue, tg_program program, const void* args, size_t args_size,
                          const tg_launch_dims* dims) noexcept;
  static tg_status_t copy(Queue* queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                          uint64_t src_offset, uint64_t size) noexcept;
  static tg_status_t signal(Queue* queue, uint64_t value) noexcept;
  static tg_status_t timestamp(Queue* queue, uint64_t* out_slot) noexcept;
  static tg_status_t submit(Queue* queue) noexcept;
  static tg_status_t wait(Queue* queue, uint64_t value, uint64_t timeout_ns) noexcept;
  static tg_status_t read_timestamp(Queue* queue, uint64_t slot, uint64_t* out_ns) noexcept;
};

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::create(tg_device device, Queue** out_queue) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kCreate>, [&] {
    require(out_queue, "out_queue");
    *out_queue = new Queue(Backend::open(device));
  });
}

template <class Queue, class Backend>
void DeviceQueueSlots<Queue, Backend>::destroy(Queue* queue) noexcept {
  guard_void(slot_where<Backend::plugin, device_queue_detail::kDestroy>, [&] { delete queue; });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::exec(Queue* queue, tg_program program, const void* args, size_t args_size,
                                                   const tg_launch_dims* dims) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kExec>, [&] {
    require(queue, "queue");
    require(dims, "dims");
    typename Backend::Program prog = [&] {
      if constexpr (requires { Backend::program_of(program); })
        return Backend::program_of(program);
      else
        return typename Backend::Program([](auto* handle) { return require(handle, "program")->program; }(program));
    }();
    if (args_size != prog->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) require(args, "args");
    uint32_t grid[3], block[3];
    if (!Backend::launch_shape(prog, *dims, grid, block)) return;  // no work-items
    queue->exec(std::move(prog), args, args_size, grid, block);
  });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::copy(Queue* queue, const tg_buffer_desc* dst, uint64_t dst_offset,
                                                   const tg_buffer_desc* src, uint64_t src_offset,
                                                   uint64_t size) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kCopy>, [&] {
    require(queue, "queue");
    const auto check = [](const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
      if constexpr (requires { Backend::check_range(buffer, offset, size, what); })
        Backend::check_range(buffer, offset, size, what);
      else
        check_device_range(buffer, offset, size, what);
    };
    check(*require(dst, "dst"), dst_offset, size, "copy destination");
    check(*require(src, "src"), src_offset, size, "copy source");
    queue->copy(*dst, dst_offset, *src, src_offset, size);
  });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::signal(Queue* queue, uint64_t value) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kSignal>,
               [&] { require(queue, "queue")->signal(value); });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::timestamp(Queue* queue, uint64_t* out_slot) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kTimestamp>, [&] {
    require(queue, "queue");
    *require(out_slot, "out_slot") = queue->timestamp();
  });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::submit(Queue* queue) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kSubmit>, [&] { require(queue, "queue")->submit(); });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::wait(Queue* queue, uint64_t value, uint64_t timeout_ns) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kWait>,
               [&] { require(queue, "queue")->wait(value, timeout_ns); });
}

template <class Queue, class Backend>
tg_status_t DeviceQueueSlots<Queue, Backend>::read_timestamp(Queue* queue, uint64_t slot, uint64_t* out_ns) noexcept {
  return guard(slot_where<Backend::plugin, device_queue_detail::kReadTimestamp>, [&] {
    require(queue, "queue");
    *require(out_ns, "out_ns") = queue->read_timestamp(slot);
  });
}

}  // namespace tg::sdk
