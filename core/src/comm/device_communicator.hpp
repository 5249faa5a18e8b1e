// A communicator whose collectives run on one device's buffers through its plugin's device-collectives extension
// (tg/plugin_collectives.h: NCCL in the NV plugin), bootstrapped over another communicator (MPI). Calls on host
// memory go to the bootstrap; tensor collectives on the device pass their buffers as they are (comm layer's
// tensor_collectives.cpp asks for allreduce_buffers).
#pragma once

#include <tg/plugin_collectives.h>

#include "runtime/buffer.hpp"
#include "tg/comm.hpp"

namespace tg {

class DeviceCommunicator final : public Communicator {
 public:
  DeviceCommunicator(Communicator& bootstrap, const std::string& device);
  ~DeviceCommunicator() override;

  const std::string& device() const { return device_->name(); }
  // dst = src combined over the ranks, both buffers of device() (dst == src: in place).
  void allreduce_buffers(rt::Buffer& dst, rt::Buffer& src, CollectiveOp op);

  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  std::string describe() const override;
  void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) override {
    bootstrap_.allreduce(data, count, dtype, op);
  }
  void allgather(const void* send, void* recv, size_t bytes) override { bootstrap_.allgather(send, recv, bytes); }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) override {
    bootstrap_.reduce_scatter(send, recv, count, dtype, op);
  }
  void send(const void* data, size_t bytes, int to) override { bootstrap_.send(data, bytes, to); }
  void recv(void* data, size_t bytes, int from) override { bootstrap_.recv(data, bytes, from); }
  void barrier() override { bootstrap_.barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override { return bootstrap_.split(color, key); }
  void abort(const std::string& why) override { bootstrap_.abort(why); }

 private:
  Communicator& bootstrap_;
  rt::Device* device_;
  const tg_collectives_v1* ext_;
  void* comm_ = nullptr;
};

}  // namespace tg
