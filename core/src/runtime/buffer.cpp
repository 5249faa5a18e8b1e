// Buffer allocation and host copies through the plugin allocator.
#include "runtime/buffer.hpp"

#include "runtime/stats.hpp"
#include "tg/error.hpp"

namespace tg::rt {

Buffer::~Buffer() {
  if (allocated_) device_->api()->allocator_free(device_->handle(), &desc_);
  --device_->live_buffers;
}

void Buffer::adopt_host_memory(const void* data, std::shared_ptr<const void> owner) {
  if (!device_->is_host())
    throw Error("tg: " + device_->name() + " buffers are not host memory; copy the data in instead");
  if (allocated_ || host_owner_) throw Error("tg: adopt_host_memory on a buffer that already has memory");
  desc_ = tg_buffer_desc{reinterpret_cast<uint64_t>(data), nbytes(), nullptr};
  host_owner_ = owner ? std::move(owner) : std::make_shared<int>(0);
}

const tg_buffer_desc& Buffer::desc() {
  if (!allocated_ && !host_owner_) {
    device_->check(device_->api()->allocator_alloc(device_->handle(), nbytes(), &desc_),
                   "allocate " + std::to_string(nbytes()) + " bytes");
    allocated_ = true;
  }
  return desc_;
}

void Buffer::copy_in(const void* src, uint64_t n) {
  if (host_owner_) throw Error("tg: copy_in into read-only host memory adopted by a tensor");
  if (n != nbytes())
    throw Error("tg: copy_in of " + std::to_string(n) + " bytes into a buffer of " + std::to_string(nbytes()));
  const auto& d = desc();
  device_->synchronize();
  if (n) device_->check(device_->api()->allocator_copy_in(device_->handle(), &d, 0, src, n), "copy in");
}

void Buffer::copy_out(void* dst, uint64_t n) {
  // a prefix is fine: a tensor with a symbolic dim lives at the start of a buffer sized for its max
  if (n > nbytes())
    throw Error("tg: copy_out of " + std::to_string(n) + " bytes from a buffer of " + std::to_string(nbytes()));
  const auto& d = desc();
  device_->synchronize();
  if (n) device_->check(device_->api()->allocator_copy_out(device_->handle(), dst, &d, 0, n), "copy out");
}

void copy_between(Buffer& dst, Buffer& src) {
  if (dst.nbytes() != src.nbytes())
    throw Error("tg: copy of " + std::to_string(src.nbytes()) + " bytes into a buffer of " +
                std::to_string(dst.nbytes()));
  ++mutable_schedule_stats().copies_run;
  // two devices of one plugin with a peer copy (ABI 1.7): device to device, no host in between
  const tg_plugin_api* api = dst.device().api();
  if (&dst.device() != &src.device() && api == src.device().api() && api->allocator_copy_peer &&
      !dst.is_adopted_host_memory()) {
    const auto& d = dst.desc();
    const auto& s = src.desc();
    dst.device().synchronize();
    src.device().synchronize();
    if (dst.nbytes())
      dst.device().check(
          api->allocator_copy_peer(dst.device().handle(), &d, 0, src.device().handle(), &s, 0, dst.nbytes()),
          "copy " + std::to_string(dst.nbytes()) + " bytes from " + src.device().name());
    ++mutable_schedule_stats().peer_copies;
    return;
  }
  if (dst.device().is_host() && !dst.is_adopted_host_memory()) {  // straight into the destination: one pass, no staging
    const uint64_t addr = dst.desc().addr;
    dst.device().synchronize();
    src.copy_out(reinterpret_cast<void*>(addr), src.nbytes());
    return;
  }
  std::vector<uint8_t> host(src.nbytes());
  src.copy_out(host.data(), host.size());
  dst.copy_in(host.data(), host.size());
}

ir::UOpPtr buffer_node(const std::shared_ptr<Buffer>& buf, const ir::Shape& shape,
                       const std::vector<ir::UOpPtr>& sym_shape) {
  return ir::UOp::make(ir::Op::BUFFER, buf->dtype(), {}, std::static_pointer_cast<ir::Payload>(buf), shape, sym_shape);
}

}  // namespace tg::rt
