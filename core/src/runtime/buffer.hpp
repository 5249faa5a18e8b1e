// Device memory owned by tg: allocated lazily through the device's plugin allocator.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/uop.hpp"
#include "runtime/device.hpp"

namespace tg::rt {

class Buffer : public ir::Payload {
 public:
  Buffer(Device& device, DType dtype, int64_t numel) : device_(&device), dtype_(dtype), numel_(numel) {
    ++device.live_buffers;
  }
  ~Buffer() override;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device& device() const { return *device_; }
  DType dtype() const override { return dtype_; }
  int64_t numel() const override { return numel_; }
  const std::string& device_name() const override { return device_->name(); }
  uint64_t nbytes() const { return static_cast<uint64_t>(numel_) * dtype_.itemsize(); }

  // Host devices only: the buffer is `data` itself (not allocated, never freed; `owner` keeps it alive).
  void adopt_host_memory(const void* data, std::shared_ptr<const void> owner);
  bool is_adopted_host_memory() const { return host_owner_ != nullptr; }

  // Allocates on first use.
  const tg_buffer_desc& desc();
  void copy_in(const void* src, uint64_t nbytes);
  void copy_out(void* dst, uint64_t nbytes);  // the first nbytes

 private:
  Device* device_;
  DType dtype_;
  int64_t numel_;
  tg_buffer_desc desc_{};
  bool allocated_ = false;
  std::shared_ptr<const void> host_owner_;  // set for adopted host memory
};

// dst = src, between any two devices: by the plugin's peer copy between two of its devices (ABI 1.7), else through
// the host (straight into a host destination); counted in ScheduleStats::copies_run (and peer_copies). What was
// submitted on either device is finished first.
void copy_between(Buffer& dst, Buffer& src);

// A BUFFER node for a realized tensor of this shape (the front end swaps a realized tensor's graph for it).
// A symbolic shape (sym_shape) keeps its dims: the buffer holds the max, the data its bound extent.
ir::UOpPtr buffer_node(const std::shared_ptr<Buffer>& buf, const ir::Shape& shape,
                       const std::vector<ir::UOpPtr>& sym_shape = {});

// The realized buffer a BUFFER node carries.
inline std::shared_ptr<Buffer> buffer_of(const ir::UOp& node) {
  return std::static_pointer_cast<Buffer>(node.payload());
}

}  // namespace tg::rt
