// The MPI communicator: every collective is MPI's own non-blocking call (MPI_Iallreduce, MPI_Iallgather, ...),
// waited for by polling MPI_Test against a deadline, so a rank that died or never joined the call is reported
// instead of hanging this one. After such a timeout MPI's state is undefined: the process reports, skips
// MPI_Finalize, and mpirun ends the job.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "tg/comm_mpi.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

std::atomic<bool> g_broken{false};  // a call timed out: MPI must not be finalized (it would wait for it)

// Initializes MPI once and finalizes it at exit unless a call timed out.
struct MpiSession {
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      owns = true;
    }
  }
  ~MpiSession() {
    int done = 0;
    MPI_Finalized(&done);
    if (owns && !done && !g_broken) MPI_Finalize();
  }
  bool owns = false;
};
MpiSession& session() {
  static MpiSession s;
  return s;
}

MPI_Datatype mpi_type(DType d, const char* what) {
  if (d.count != 1) throw Error(std::string("tg: MPI ") + what + " of vector dtype " + d.name());
  switch (d.scalar) {
    case ScalarType::Float32: return MPI_FLOAT;
    case ScalarType::Float64: return MPI_DOUBLE;
    case ScalarType::Int8: return MPI_INT8_T;
    case ScalarType::Int16: return MPI_INT16_T;
    case ScalarType::Int32: return MPI_INT32_T;
    case ScalarType::Int64: return MPI_INT64_T;
    case ScalarType::UInt8: return MPI_UINT8_T;
    case ScalarType::UInt16: return MPI_UINT16_T;
    case ScalarType::UInt32: return MPI_UINT32_T;
    case ScalarType::UInt64: return MPI_UINT64_T;
    default: throw Error(std::string("tg: MPI ") + what + " of " + d.name() + " is not supported (MPI has no such type); cast to float32");
  }
}

MPI_Op mpi_op(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::Sum: return MPI_SUM;
    case CollectiveOp::Max: return MPI_MAX;
    case CollectiveOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (!g_broken) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return "MPI rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

  void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) override {
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, as_int(count), mpi_type(dtype, "allreduce"), mpi_op(op), comm_, &r), "allreduce");
    wait(r, "allreduce of " + std::to_string(count) + " " + dtype.name());
  }
  void allgather(const void* send, void* recv, size_t bytes) override {
    MPI_Request r;
    check(MPI_Iallgather(send, as_int(bytes), MPI_BYTE, recv, as_int(bytes), MPI_BYTE, comm_, &r), "allgather");
    wait(r, "allgather of " + std::to_string(bytes) + " bytes");
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) override {
    MPI_Request r;
    check(MPI_Ireduce_scatter_block(send, recv, as_int(count), mpi_type(dtype, "reduce_scatter"), mpi_op(op), comm_, &r),
          "reduce_scatter");
    wait(r, "reduce_scatter of " + std::to_string(count) + " " + dtype.name() + " per rank");
  }
  void send(const void* data, size_t bytes, int to) override {
    check_peer(to, "send");
    MPI_Request r;
    check(MPI_Isend(data, as_int(bytes), MPI_BYTE, to, kTag, comm_, &r), "send");
    wait(r, "send of " + std::to_string(bytes) + " bytes to rank " + std::to_string(to));
  }
  void recv(void* data, size_t bytes, int from) override {
    check_peer(from, "recv");
    MPI_Request r;
    check(MPI_Irecv(data, as_int(bytes), MPI_BYTE, from, kTag, comm_, &r), "recv");
    MPI_Status status;
    wait(r, "recv of " + std::to_string(bytes) + " bytes from rank " + std::to_string(from), &status);
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (static_cast<size_t>(got) != bytes)
      throw Error("tg: " + describe() + ": recv expected " + std::to_string(bytes) + " bytes from rank " + std::to_string(from) +
                  ", got " + std::to_string(got));
  }
  void barrier() override {
    MPI_Request r;
    check(MPI_Ibarrier(comm_, &r), "barrier");
    wait(r, "barrier");
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;  // MPI_Comm_split is blocking; a barrier first bounds the wait for ranks that never come
    barrier();
    check(MPI_Comm_split(comm_, color, key, &sub), "split");
    return std::make_unique<MpiCommunicator>(sub);
  }

 private:
  static constexpr int kTag = 7001;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;

  static int as_int(size_t n) {
    if (n > static_cast<size_t>(INT32_MAX)) throw Error("tg: MPI message of " + std::to_string(n) + " elements exceeds MPI's int count");
    return static_cast<int>(n);
  }
  void check(int rc, const char* what) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error("tg: " + describe() + ": MPI " + what + " failed: " + std::string(text, static_cast<size_t>(len)));
  }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size_ || peer == rank_)
      throw std::invalid_argument("tg: " + describe() + ": " + what + " with rank " + std::to_string(peer) + " (ranks 0.." +
                                  std::to_string(size_ - 1) + ", not this one)");
  }
  // Busy-polls for the first 2 ms (small messages finish in microseconds), then sleeps between tests.
  void wait(MPI_Request& r, const std::string& what, MPI_Status* status = MPI_STATUS_IGNORE) const {
    const double limit = comm_timeout_seconds();
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      int done = 0;
      check(MPI_Test(&r, &done, status), "test");
      if (done) return;
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > limit) {
        g_broken = true;
        throw Error("tg: " + describe() + ": " + what + " got no answer from the other ranks in " + std::to_string(static_cast<int>(limit)) +
                    " s (TG_COMM_TIMEOUT_S): a rank died, is stuck, or skipped this call");
      }
      if (waited > 2e-3) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

}  // namespace

std::unique_ptr<Communicator> mpi_world() {
  session();
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  return std::make_unique<MpiCommunicator>(world);
}

}  // namespace tg
