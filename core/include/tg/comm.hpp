// Communicators: a group of processes (ranks) exchanging data, for work that outgrows one process. tg does not
// move bytes between processes itself: a backend wraps an existing engine (MPI: tg/comm_mpi.hpp; NCCL in the NV
// plugin where GPUs are). Every call is collective over the group except send/recv, and every wait is bounded:
// a call that a rank died in, is stuck before or skipped is reported after TG_COMM_TIMEOUT_S seconds (default
// 300) with one line naming the call and the rank, and the job ends; it is never waited for forever.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tg/dtype.hpp"
#include "tg/tensor.hpp"

namespace tg {

enum class CollectiveOp { Sum, Max, Min };

class Communicator {
 public:
  virtual ~Communicator() = default;
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
};

// Tensor collectives over a communicator: the tensor is realized, combined through host memory, and the result
// comes back on the tensor's device. Shapes and dtypes must agree on every rank (checked: a mismatch is an error
// on every rank, not a hang or a garbled sum).
Tensor allreduce(const Tensor& t, Communicator& comm, CollectiveOp op = CollectiveOp::Sum);
Tensor allgather(const Tensor& t, Communicator& comm, int64_t axis = 0);  // the ranks' tensors concatenated along axis

// Seconds a collective may wait for the other ranks (TG_COMM_TIMEOUT_S, default 300).
double comm_timeout_seconds();

}  // namespace tg
