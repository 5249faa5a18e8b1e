// Running a model tensor-parallel: the same function on every rank of a group, each rank holding its share of the
// model (model/tensor_parallel.hpp). In one process the ranks are threads, one per device (tg-llm --devices
// CPU:0,CPU:1), meeting through an in-process communicator; across processes each MPI rank is one process on its
// own default device (mpirun -np 2 tg-llm --tensor-parallel). Every rank runs the same steps on the same tokens;
// only the leader (rank 0) prints.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor_parallel.hpp"

namespace tg::llm {

// A communicator that times its collectives (the benchmark's "time in collectives"), passing every call on.
class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner) {}
  double seconds() const { return seconds_; }  // in allreduce, allgather and reduce_scatter so far
  int64_t calls() const { return calls_; }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string describe() const override { return inner_.describe(); }
  void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) override;
  void allgather(const void* send, void* recv, size_t bytes) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) override;
  void send(const void* data, size_t bytes, int to) override { inner_.send(data, bytes, to); }
  void recv(void* data, size_t bytes, int from) override { inner_.recv(data, bytes, from); }
  void barrier() override { inner_.barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_.split(color, key); }
  void abort(const std::string& why) override { inner_.abort(why); }

 private:
  template <typename F>
  void timed(F&& f);
  Communicator& inner_;
  double seconds_ = 0;
  int64_t calls_ = 0;
};

struct Rank {
  TensorParallel tp;                          // world 1: the whole model
  std::string device;                         // "" = the default device
  const TimedCommunicator* timing = nullptr;  // tp.comm's times (world > 1)
  bool leader() const { return tp.rank == 0; }
};

// "CPU:0,CPU:1" -> its devices, canonical; an empty name, an unknown device or one named twice ("CPU,CPU:0") is an
// error.
std::vector<std::string> parse_device_list(const std::string& list);
// fn on one thread per device, rank i on devices[i]. A rank that throws ends the others' waits (abort), and the
// first error is rethrown here once every thread has stopped.
void run_local_ranks(const std::vector<std::string>& devices, const std::function<void(const Rank&)>& fn);
// fn as this process's MPI rank (MPI_COMM_WORLD) on the default device. A rank that throws ends the job with its
// message (MPI_Abort): the other processes cannot be told to stop waiting any other way. Without MPI in the build:
// a tg::Error.
void run_mpi_rank(const std::function<void(const Rank&)>& fn);

}  // namespace tg::llm
