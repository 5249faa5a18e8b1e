// The MPI communicator: every call is MPI's own blocking collective (MPI_Allreduce, MPI_Allgather, ...: the
// implementation's tuned algorithms; its non-blocking forms measured 2-4x slower here), made under a watchdog: a
// call still waiting after TG_COMM_TIMEOUT_S means a rank died, is stuck or skipped it, so the watchdog prints one
// line naming the call and the rank and ends the job with MPI_Abort instead of letting it hang.
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "tg/comm_mpi.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

// What a call in progress is, for the watchdog's message: "allreduce of 1024 float32", "recv of 8 bytes from rank 1".
struct Call {
  const char* op = "";
  size_t n = 0;
  const char* unit = "";
  int peer = -1;
  std::string str() const {
    std::string s = std::string(op) + (*unit ? " of " + std::to_string(n) + " " + unit : "");
    return peer < 0 ? s : s + (std::string(op) == "send" ? " to rank " : " from rank ") + std::to_string(peer);
  }
};

// One thread per process watches the call in progress. Arming costs a lock and a few stores, no wake-up: the
// watchdog looks every 100 ms (a hang is measured in seconds).
class Watchdog {
 public:
  Watchdog() : limit_(comm_timeout_seconds()), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void arm(int rank, int size, MPI_Comm comm, Call call) {
    std::lock_guard lock(mu_);
    rank_ = rank, size_ = size, comm_ = comm, call_ = call, since_ = std::chrono::steady_clock::now(), armed_ = true;
  }
  void disarm() {
    std::lock_guard lock(mu_);
    armed_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  double limit_;
  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  Call call_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;

  void watch() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (!armed_ || std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count() <= limit_)
        continue;
      std::fprintf(
          stderr,
          "tg: MPI rank %d of %d: %s got no answer from the other ranks in %g s (TG_COMM_TIMEOUT_S): a rank died, "
          "is stuck, or skipped this call; ending the job\n",
          rank_, size_, call_.str().c_str(), limit_);
      std::fflush(stderr);
      MPI_Abort(comm_, 1);
    }
  }
};

// Initializes MPI once and finalizes it at exit (after the watchdog has stopped).
struct MpiSession {
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      owns = true;
    }
    watchdog = std::make_unique<Watchdog>();
  }
  ~MpiSession() {
    watchdog.reset();
    int done = 0;
    MPI_Finalized(&done);
    if (owns && !done) MPI_Finalize();
  }
  bool owns = false;
  std::unique_ptr<Watchdog> watchdog;
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
    default:
      throw Error(std::string("tg: MPI ") + what + " of " + d.name() +
                  " is not supported (MPI has no such type); cast to float32");
  }
}

// The element type's name as a static string (the watchdog keeps the pointer).
const char* element_name(DType d) {
  switch (d.scalar) {
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    default: return "elements";
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
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return "MPI rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

  void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) override {
    const MPI_Datatype type = mpi_type(dtype, "allreduce");
    Watched w(*this, {"allreduce", count, element_name(dtype)});
    check(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), type, mpi_op(op), comm_), "allreduce");
  }
  void allgather(const void* send, void* recv, size_t bytes) override {
    Watched w(*this, {"allgather", bytes, "bytes"});
    check(MPI_Allgather(send, as_int(bytes), MPI_BYTE, recv, as_int(bytes), MPI_BYTE, comm_), "allgather");
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) override {
    const MPI_Datatype type = mpi_type(dtype, "reduce_scatter");
    Watched w(*this, {"reduce_scatter", count, element_name(dtype)});
    check(MPI_Reduce_scatter_block(send, recv, as_int(count), type, mpi_op(op), comm_), "reduce_scatter");
  }
  void send(const void* data, size_t bytes, int to) override {
    check_peer(to, "send");
    Watched w(*this, {"send", bytes, "bytes", to});
    check(MPI_Send(data, as_int(bytes), MPI_BYTE, to, kTag, comm_), "send");
  }
  void recv(void* data, size_t bytes, int from) override {
    check_peer(from, "recv");
    MPI_Status status;
    {
      Watched w(*this, {"recv", bytes, "bytes", from});
      check(MPI_Recv(data, as_int(bytes), MPI_BYTE, from, kTag, comm_, &status), "recv");
    }
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (static_cast<size_t>(got) != bytes)
      throw Error("tg: " + describe() + ": recv expected " + std::to_string(bytes) + " bytes from rank " +
                  std::to_string(from) + ", got " + std::to_string(got));
  }
  void barrier() override {
    Watched w(*this, {"barrier"});
    check(MPI_Barrier(comm_), "barrier");
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    {
      Watched w(*this, {"split"});
      check(MPI_Comm_split(comm_, color, key, &sub), "split");
    }
    return std::make_unique<MpiCommunicator>(sub);
  }
  void abort(const std::string& why) override {
    std::fprintf(stderr, "tg: MPI rank %d of %d failed: %s; ending the job\n", rank_, size_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(comm_, 1);
  }

 private:
  static constexpr int kTag = 7001;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;

  // The watchdog armed for the duration of one call.
  struct Watched {
    Watched(const MpiCommunicator& c, Call call) { session().watchdog->arm(c.rank_, c.size_, c.comm_, call); }
    ~Watched() { session().watchdog->disarm(); }
    Watched(const Watched&) = delete;
    Watched& operator=(const Watched&) = delete;
  };

  static int as_int(size_t n) {
    if (n > static_cast<size_t>(INT32_MAX))
      throw Error("tg: MPI message of " + std::to_string(n) + " elements exceeds MPI's int count");
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
      throw std::invalid_argument("tg: " + describe() + ": " + what + " with rank " + std::to_string(peer) +
                                  " (ranks 0.." + std::to_string(size_ - 1) + ", not this one)");
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
