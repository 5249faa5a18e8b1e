// Buffer allocation and host copies through the plugin allocator.
#include "runtime/buffer.hpp"

#include "tg/error.hpp"

namespace tg::rt {

Buffer::~Buffer() {
  if (allocated_) device_->api()->allocator_free(device_->handle(), &desc_);
  --device_->live_buffers;
}

const tg_buffer_desc& Buffer::desc() {
  if (!allocated_) {
    device_->check(device_->api()->allocator_alloc(device_->handle(), nbytes(), &desc_),
                   "allocate " + std::to_string(nbytes()) + " bytes");
    allocated_ = true;
  }
  return desc_;
}

void Buffer::copy_in(const void* src, uint64_t n) {
  if (n != nbytes()) throw Error("tg: copy_in of " + std::to_string(n) + " bytes into a buffer of " + std::to_string(nbytes()));
  const auto& d = desc();
  device_->synchronize();
  if (n) device_->check(device_->api()->allocator_copy_in(device_->handle(), &d, 0, src, n), "copy in");
}

void Buffer::copy_out(void* dst, uint64_t n) {
  // a prefix is fine: a tensor with a symbolic dim lives at the start of a buffer sized for its max
  if (n > nbytes()) throw Error("tg: copy_out of " + std::to_string(n) + " bytes from a buffer of " + std::to_string(nbytes()));
  const auto& d = desc();
  device_->synchronize();
  if (n) device_->check(device_->api()->allocator_copy_out(device_->handle(), dst, &d, 0, n), "copy out");
}

}  // namespace tg::rt
