// Launching kernels: arguments packed as a program's signature lays them out, launches recorded into one command
// buffer per device and submitted together, and the JIT's capture of every launch a thread makes.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/buffer.hpp"
#include "runtime/device.hpp"

namespace tg::rt {

// The packed argument blob of a launch (buffers as 64-bit addresses, then the variables' values).
std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals);

// Launches recorded per device, in order, until submit() hands each device its command buffer.
class Recorder {
 public:
  void record(Device& device, const Program& program, std::vector<uint8_t> args, const tg_launch_dims& dims);
  void submit(bool sync);  // sync: wait until every device has run them
 private:
  std::map<Device*, std::vector<Device::LaunchCmd>> cmds_;
  std::deque<std::vector<uint8_t>> args_;  // stable addresses until the submit
};

// One launch (or copy, or collective) as the JIT records it.
struct CapturedLaunch {
  std::shared_ptr<Program> program;           // null for a copy or a collective
  std::vector<std::shared_ptr<Buffer>> bufs;  // kernel params; copies and collectives: {dst, src}
  std::vector<std::string> var_names;         // kernel variables, in parameter order
  std::vector<int64_t> var_vals;
  tg_launch_dims dims{};
  uint64_t kir_hash = 0;
  std::string collective;  // a collective's registered name (runtime/collectives.hpp)
};

// While set (per thread), every launch and copy the runtime makes is appended to *sink; nullptr stops capturing.
void set_capture(std::vector<CapturedLaunch>* sink);
bool capturing();
void capture(CapturedLaunch launch);

}  // namespace tg::rt
