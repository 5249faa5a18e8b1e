// tg::sdk::DeviceQueue: the HWQueue of an asynchronous GPU API (CUDA, HIP): commands (exec, copy, signal,
// timestamp) are recorded, then issued in order on one stream at submit; a signal or a timestamp is an event the
// stream records, so waiting and timing read events. The "signals only grow" contract is kept here once: a signal
// below one already recorded or submitted is refused, and waiting for a value no recorded command reaches is an
// error rather than a hang.
//
// The plugin supplies a Backend, the stream's owner:
//   struct Backend {
//     using Program = ...;   // what exec launches (a shared_ptr to the plugin's program, say)
//     using Event = ...;     // movable, releases itself; default-constructible as "none", false when none
//     void bind();                                        // makes the device current on this thread
//     void launch(const Program&, std::vector<unsigned char>& args, const uint32_t grid[3], const uint32_t block[3]);
//     void copy(uint64_t dst, uint64_t src, uint64_t size);  // device to device, on the stream
//     Event record(bool timing);                          // an event recorded on the stream now
//     bool done(const Event&);                            // whether it completed (throws on a failed query)
//     void synchronize(const Event&);                     // blocks until it completed
//     double elapsed_ms(const Event& from, const Event& to);
//   };
// The queue's methods throw tg::sdk::Error; the plugin's slots wrap them in guard().
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

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

template <class Backend>
class DeviceQueue {
 public:
  using Program = typename Backend::Program;
  using Event = typename Backend::Event;

  explicit DeviceQueue(Backend backend) : backend_(std::move(backend)) { origin_ = backend_.record(true); }
  Backend& backend() { return backend_; }

  // Records a launch: `grid` work-groups of `block` work-items, the packed arguments copied.
  void exec(Program program, const void* args, size_t args_size, const uint32_t grid[3], const uint32_t block[3]) {
    const auto* bytes = static_cast<const unsigned char*>(args);
    ExecCommand command{std::move(program), std::vector<unsigned char>(bytes, bytes + args_size), {}, {}};
    for (int d = 0; d < 3; ++d) command.grid[d] = grid[d], command.block[d] = block[d];
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(std::move(command));
  }

  void copy(uint64_t dst, uint64_t src, uint64_t size) {
    std::lock_guard lock(mutex_);
    recorded_.emplace_back(CopyCommand{dst, src, size});
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
        if (copy->size != 0) backend_.copy(copy->dst, copy->src, copy->size);
      } else if (auto* signal = std::get_if<SignalCommand>(&command)) {
        pending_.emplace_back(signal->value, backend_.record(false));
      } else if (auto* stamp = std::get_if<TimestampCommand>(&command)) {
        timestamps_[stamp->slot] = backend_.record(true);
      }
    }
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
          throw Error(TG_ERR_UNAVAILABLE,
                      cat("timed out after ", timeout_ns, " ns waiting for signal value ", value, " (it is ", signal_, ")"));
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

  // Drops the events (before the backend's stream goes): the destructor of the plugin's queue calls it after
  // synchronizing the stream.
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
    uint64_t dst, src, size;
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

}  // namespace tg::sdk
