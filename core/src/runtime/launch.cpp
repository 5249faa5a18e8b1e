// Argument packing, recording into command buffers, and the JIT's capture.
#include "runtime/launch.hpp"

#include <cstring>

namespace tg::rt {

namespace {
thread_local std::vector<CapturedLaunch>* t_capture = nullptr;
}  // namespace

// Buffers as 64-bit addresses, then variables at their own width (little endian: the low bytes of the value).
std::vector<uint8_t> pack_args(const Program& p, const std::vector<std::shared_ptr<Buffer>>& bufs,
                               const std::vector<int64_t>& var_vals) {
  std::vector<uint8_t> args(p.signature.args_size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    uint64_t addr = bufs[i]->desc().addr;
    std::memcpy(args.data() + p.signature.offsets()[i], &addr, sizeof(addr));
  }
  for (size_t j = 0; j < var_vals.size(); ++j) {
    size_t i = bufs.size() + j;
    std::memcpy(args.data() + p.signature.offsets()[i], &var_vals[j], tg_param_size(&p.signature.params()[i]));
  }
  return args;
}

void Recorder::record(Device& device, const Program& program, std::vector<uint8_t> args, const tg_launch_dims& dims) {
  cmds_[&device].push_back({&program, &args_.emplace_back(std::move(args)), dims});
}

void Recorder::submit(bool sync) {
  for (auto& [device, cmds] : cmds_) device->launch_batch(cmds, sync);
  cmds_.clear(), args_.clear();
}

void set_capture(std::vector<CapturedLaunch>* sink) { t_capture = sink; }

bool capturing() { return t_capture != nullptr; }

void capture(CapturedLaunch launch) {
  if (t_capture) t_capture->push_back(std::move(launch));
}

}  // namespace tg::rt
