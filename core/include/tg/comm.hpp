// Communicators: a group of processes (ranks) exchanging data, for work that outgrows one process. tg does not
// move bytes between processes itself: a backend wraps an existing engine (MPI: tg/comm_mpi.hpp; NCCL in the NV
// plugin where GPUs are). Every call is collective over the group except send/recv, and every wait is bounded:
// a call that a rank died in, is stuck before or skipped is reported after TG_COMM_TIMEOUT_S seconds (default
// 300) with one line naming the call and the rank, and the job ends; it is never waited for forever.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tg/dtype.hpp"
#include "tg/tensor.hpp"

namespace tg {

enum class CollectiveOp { Sum, Max, Min };

class Communicator {
 public:
  virtual ~Communicator();  // graphs and Jits that still name its collectives fail clearly after this
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string describe() const = 0;  // "MPI rank 0 of 2"

  // `count` elements of `dtype` at `data`, combined over the ranks in place.
  virtual void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) = 0;
  // Each rank's `bytes` from `send`; `recv` gets size() * bytes, in rank order.
  virtual void allgather(const void* send, void* recv, size_t bytes) = 0;
  // `send` holds size() blocks of `count` elements; rank r gets block r combined over the ranks in `recv`.
  virtual void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) = 0;
  virtual void send(const void* data, size_t bytes, int to) = 0;
  virtual void recv(void* data, size_t bytes, int from) = 0;
  virtual void barrier() = 0;
  // Sub-groups: ranks with the same color form one, ordered by key (then by rank).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // This rank cannot go on (it failed while the others may wait for it): ends the group's waits with `why`
  // (MPI: one line and MPI_Abort; in process: every waiting rank throws it).
  virtual void abort(const std::string& why) = 0;
};

// `n` communicators over the threads of this process, element i for the thread that is rank i: tensor
// parallelism over several devices of one process (tg-llm --devices). The values meet in host memory.
std::vector<std::unique_ptr<Communicator>> local_communicators(int n);

// A communicator whose collectives combine tensors on `device` in device memory, without the host, through the
// device plugin's collectives extension (tg.collectives.v1: NCCL in the NV plugin), bootstrapped over `bootstrap`
// (an MPI communicator: rank r there is rank r here). Its calls on host memory go to `bootstrap`, which must
// outlive it. Errors name the device and what it lacks (a plugin without the extension, no library, no GPU).
std::unique_ptr<Communicator> device_communicator(Communicator& bootstrap, const std::string& device);

// Tensor collectives over a communicator. Shapes and dtypes must agree on every rank (checked when the call is
// made: a mismatch is an error on every rank, not a hang or a garbled sum).
// allreduce is lazy: a COLLECTIVE node of the graph, run as its own schedule item when the tensor is realized
// (through host memory, in place on host devices) and captured by a tg::Jit like a kernel; the communicator must
// outlive the graph and any Jit that captured it.
Tensor allreduce(const Tensor& t, Communicator& comm, CollectiveOp op = CollectiveOp::Sum);
// allgather runs at once.
Tensor allgather(const Tensor& t, Communicator& comm, int64_t axis = 0);  // the ranks' tensors concatenated along axis

// Seconds a collective may wait for the other ranks (TG_COMM_TIMEOUT_S, default 300).
double comm_timeout_seconds();

}  // namespace tg
