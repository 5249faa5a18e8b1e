// The device communicator: rank 0 makes the group id, the bootstrap hands it to every rank (an allgather of rank
// 0's id with a flag, so a rank 0 that could not make one stops every rank with a message instead of a hang), and
// each rank joins with its device.
#include "comm/device_communicator.hpp"

#include <vector>

#include "runtime/device.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

const tg_collectives_v1* collectives_of(const rt::Device& d) {
  const tg_plugin_api* api = d.api();
  const void* ext = api->get_extension ? api->get_extension(TG_EXT_COLLECTIVES_V1) : nullptr;
  if (ext == nullptr)
    throw Error("tg: " + d.name() +
                "'s plugin has no device collectives (" TG_EXT_COLLECTIVES_V1
                "): combine its tensors with the bootstrap "
                "communicator itself, through host memory");
  const auto* t = static_cast<const tg_collectives_v1*>(ext);
  if (t->struct_size < sizeof(tg_collectives_v1) || t->id_bytes == 0 || t->id_bytes > 4096)
    throw Error("tg: " + d.name() + "'s plugin serves a malformed " TG_EXT_COLLECTIVES_V1 " table (struct_size " +
                std::to_string(t->struct_size) + ", id_bytes " + std::to_string(t->id_bytes) + ")");
  return t;
}

}  // namespace

DeviceCommunicator::DeviceCommunicator(Communicator& bootstrap, const std::string& device)
    : bootstrap_(bootstrap), device_(&rt::Device::get(device)), ext_(collectives_of(*device_)) {
  const std::string lib = ext_->library ? ext_->library : "the plugin's collectives";
  std::vector<uint8_t> mine(1 + ext_->id_bytes, 0), all(mine.size() * static_cast<size_t>(bootstrap.size()));
  std::string failed;
  if (bootstrap.rank() == 0) {
    try {
      device_->check(ext_->group_id(mine.data() + 1), lib + " group id");
      mine[0] = 1;
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }
  bootstrap.allgather(mine.data(), all.data(), mine.size());
  if (all[0] != 1)
    throw Error(bootstrap.rank() == 0 ? failed
                                      : "tg: " + describe() + ": rank 0 could not make a " + lib + " group id");
  device_->check(ext_->comm_create(device_->handle(), all.data() + 1, static_cast<uint32_t>(bootstrap.size()),
                                   static_cast<uint32_t>(bootstrap.rank()), &comm_),
                 "join a " + lib + " group as rank " + std::to_string(bootstrap.rank()) + " of " +
                     std::to_string(bootstrap.size()));
}

DeviceCommunicator::~DeviceCommunicator() {
  if (comm_) ext_->comm_destroy(comm_);
}

std::string DeviceCommunicator::describe() const {
  return std::string(ext_->library ? ext_->library : "device") + " on " + device_->name() + ", " +
         bootstrap_.describe();
}

void DeviceCommunicator::allreduce_buffers(rt::Buffer& dst, rt::Buffer& src, CollectiveOp op) {
  device_->check(ext_->allreduce(comm_, &dst.desc(), &src.desc(), static_cast<uint64_t>(dst.numel()),
                                 static_cast<uint32_t>(dst.dtype().scalar), static_cast<uint32_t>(op)),
                 "allreduce of " + std::to_string(dst.numel()) + " " + dst.dtype().name());
}

std::unique_ptr<Communicator> device_communicator(Communicator& bootstrap, const std::string& device) {
  return std::make_unique<DeviceCommunicator>(bootstrap, device);
}

}  // namespace tg
