// The in-process communicator: the ranks are threads of this process, so a collective is a rendezvous in host
// memory. Each call publishes the rank's pointers and waits for the group (a generation-counted barrier, bounded
// by TG_COMM_TIMEOUT_S); reductions then split the work: rank r combines block r of every rank's values and
// writes it into every rank's buffer, so all ranks end with the same bits and no rank copies the whole array.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "tg/comm.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

// One group of n ranks: what each has published for the call in progress, and the messages in flight.
struct Group {
  explicit Group(int n)
      : n(n), data(static_cast<size_t>(n)), cdata(static_cast<size_t>(n)), count(static_cast<size_t>(n)) {}
  const int n;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> generation{0};  // written under mu; read without it while spinning
  int arrived = 0;
  std::string failed;  // set by abort(): every wait throws it
  std::vector<void*> data;
  std::vector<const void*> cdata;
  std::vector<std::pair<size_t, DType>> count;
  std::map<std::pair<int, int>, std::deque<std::vector<uint8_t>>> mail;  // (from, to) -> messages in order
  std::map<std::pair<uint64_t, int>, std::shared_ptr<Group>> splits;     // (split number, color) -> sub-group
};

// The op is a template parameter so that each loop is a plain vectorizable reduction.
template <typename T, typename Op>
void combine_with(void* const* bufs, int n, size_t begin, size_t end, Op op, void* out0) {
  for (size_t i = begin; i < end; ++i) {
    T acc = static_cast<const T*>(bufs[0])[i];
    for (int r = 1; r < n; ++r) acc = op(acc, static_cast<const T*>(bufs[r])[i]);
    if (out0)
      static_cast<T*>(out0)[i - begin] = acc;
    else
      for (int r = 0; r < n; ++r) static_cast<T*>(bufs[r])[i] = acc;
  }
}

template <typename T>
void combine(void* const* bufs, int n, size_t begin, size_t end, CollectiveOp op, void* out0 = nullptr) {
  if (op == CollectiveOp::Sum) return combine_with<T>(bufs, n, begin, end, [](T a, T b) { return a + b; }, out0);
  if (op == CollectiveOp::Max)
    return combine_with<T>(bufs, n, begin, end, [](T a, T b) { return std::max(a, b); }, out0);
  combine_with<T>(bufs, n, begin, end, [](T a, T b) { return std::min(a, b); }, out0);
}

// Elements [begin, end) of the n arrays combined: into every array (out == nullptr) or into out.
void combine_range(void* const* bufs, int n, size_t begin, size_t end, DType d, CollectiveOp op, void* out = nullptr) {
  if (d == dtypes::float32) return combine<float>(bufs, n, begin, end, op, out);
  if (d == dtypes::float64) return combine<double>(bufs, n, begin, end, op, out);
  if (d == dtypes::int32) return combine<int32_t>(bufs, n, begin, end, op, out);
  if (d == dtypes::int64) return combine<int64_t>(bufs, n, begin, end, op, out);
  throw Error("tg: in-process reduction of " + d.name() + " values (float32, float64, int32 and int64 are supported)");
}

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<Group> g, int rank) : g_(std::move(g)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_->n; }
  std::string describe() const override {
    return "in-process rank " + std::to_string(rank_) + " of " + std::to_string(g_->n);
  }

  void allreduce(void* data, size_t count, DType dtype, CollectiveOp op) override {
    std::unique_lock lock = publish("allreduce", data, nullptr, {count, dtype});
    check_same_count("allreduce");
    lock.unlock();
    const auto [b, e] = block(count);
    combine_range(g_->data.data(), g_->n, b, e, dtype, op);
    lock.lock();
    wait_all(lock, "allreduce");
  }
  void allgather(const void* send, void* recv, size_t bytes) override {
    std::unique_lock lock = publish("allgather", nullptr, send, {bytes, dtypes::uint8});
    check_same_count("allgather");
    lock.unlock();
    for (int r = 0; r < g_->n; ++r)
      std::memcpy(static_cast<uint8_t*>(recv) + bytes * static_cast<size_t>(r), g_->cdata[static_cast<size_t>(r)],
                  bytes);
    lock.lock();
    wait_all(lock, "allgather");
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) override {
    std::unique_lock lock = publish("reduce_scatter", const_cast<void*>(send), nullptr, {count, dtype});
    check_same_count("reduce_scatter");
    lock.unlock();
    const size_t first = count * static_cast<size_t>(rank_);
    combine_range(g_->data.data(), g_->n, first, first + count, dtype, op, recv);
    lock.lock();
    wait_all(lock, "reduce_scatter");
  }
  void send(const void* data, size_t bytes, int to) override {
    check_peer(to, "send");
    std::lock_guard lock(g_->mu);
    const auto* p = static_cast<const uint8_t*>(data);
    g_->mail[{rank_, to}].emplace_back(p, p + bytes);
    g_->cv.notify_all();
  }
  void recv(void* data, size_t bytes, int from) override {
    check_peer(from, "recv");
    std::unique_lock lock(g_->mu);
    auto& box = g_->mail[{from, rank_}];
    wait(lock, "recv from rank " + std::to_string(from), [&] { return !box.empty(); });
    if (box.front().size() != bytes)
      throw Error("tg: " + describe() + ": recv of " + std::to_string(bytes) + " bytes, rank " + std::to_string(from) +
                  " sent " + std::to_string(box.front().size()));
    std::memcpy(data, box.front().data(), bytes);
    box.pop_front();
  }
  void barrier() override {
    std::unique_lock lock(g_->mu);
    wait_all(lock, "barrier");
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    const int mine[2] = {color, key};
    std::vector<int> all(static_cast<size_t>(2 * g_->n));
    allgather(mine, all.data(), sizeof(mine));
    std::vector<std::pair<int, int>> members;  // (key, rank) of my color
    for (int r = 0; r < g_->n; ++r)
      if (all[static_cast<size_t>(2 * r)] == color) members.emplace_back(all[static_cast<size_t>(2 * r + 1)], r);
    std::sort(members.begin(), members.end());
    const int new_rank =
        static_cast<int>(std::find(members.begin(), members.end(), std::pair{key, rank_}) - members.begin());
    std::lock_guard lock(g_->mu);
    auto& sub = g_->splits[{splits_, color}];
    ++splits_;
    if (!sub) sub = std::make_shared<Group>(static_cast<int>(members.size()));
    return std::make_unique<LocalCommunicator>(sub, new_rank);
  }
  void abort(const std::string& why) override {
    std::lock_guard lock(g_->mu);
    if (g_->failed.empty()) g_->failed = "tg: in-process rank " + std::to_string(rank_) + " failed: " + why;
    g_->cv.notify_all();
  }

 private:
  std::shared_ptr<Group> g_;
  int rank_;
  uint64_t splits_ = 0;  // splits made so far (every rank makes them in the same order)

  // This rank's block of `count` elements for a reduction split over the ranks.
  std::pair<size_t, size_t> block(size_t count) const {
    const size_t n = static_cast<size_t>(g_->n), r = static_cast<size_t>(rank_);
    return {count * r / n, count * (r + 1) / n};
  }

  template <typename Pred>
  void wait(std::unique_lock<std::mutex>& lock, const std::string& what, Pred done) {
    const double limit = comm_timeout_seconds();
    const bool ok =
        g_->cv.wait_for(lock, std::chrono::duration<double>(limit), [&] { return done() || !g_->failed.empty(); });
    if (!g_->failed.empty()) throw Error(g_->failed);
    if (!ok)
      throw Error("tg: " + describe() + ": " + what + " got no answer from the other ranks in " +
                  std::to_string(static_cast<int>(limit)) +
                  " s (TG_COMM_TIMEOUT_S): a rank stopped, is stuck, or skipped this call");
  }
  // Every rank of the group has reached this point. A rank that waits spins briefly first (the others are
  // usually microseconds away: a decode step's allreduces), then sleeps on the condition variable.
  void wait_all(std::unique_lock<std::mutex>& lock, const std::string& what) {
    const uint64_t gen = g_->generation.load();
    if (++g_->arrived == g_->n) {
      g_->arrived = 0;
      g_->generation.fetch_add(1);
      g_->cv.notify_all();
      if (!g_->failed.empty()) throw Error(g_->failed);
      return;
    }
    lock.unlock();
    for (int i = 0; i < kSpins && g_->generation.load(std::memory_order_acquire) == gen; ++i) std::this_thread::yield();
    lock.lock();
    wait(lock, what, [&] { return g_->generation.load() != gen; });
  }
  static constexpr int kSpins = 2000;  // yields: tens of microseconds, then sleep
  // Publishes this rank's arguments and waits until every rank has published its own.
  std::unique_lock<std::mutex> publish(const char* what, void* data, const void* cdata,
                                       std::pair<size_t, DType> count) {
    std::unique_lock lock(g_->mu);
    g_->data[static_cast<size_t>(rank_)] = data;
    g_->cdata[static_cast<size_t>(rank_)] = cdata;
    g_->count[static_cast<size_t>(rank_)] = count;
    wait_all(lock, what);
    return lock;
  }
  // The same count and dtype on every rank (each rank compares with rank 0: all fail alike).
  void check_same_count(const char* what) const {
    const auto& c = g_->count;
    for (int r = 1; r < g_->n; ++r)
      if (c[static_cast<size_t>(r)] != c[0])
        throw Error(std::string("tg: in-process ") + what + ": rank 0 has " + std::to_string(c[0].first) + " " +
                    c[0].second.name() + ", rank " + std::to_string(r) + " has " +
                    std::to_string(c[static_cast<size_t>(r)].first) + " " + c[static_cast<size_t>(r)].second.name());
  }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= g_->n || peer == rank_)
      throw std::invalid_argument("tg: " + describe() + ": " + what + " with rank " + std::to_string(peer));
  }
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> local_communicators(int n) {
  if (n < 1) throw std::invalid_argument("tg: a group of " + std::to_string(n) + " in-process ranks");
  auto g = std::make_shared<Group>(n);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<LocalCommunicator>(g, r));
  return out;
}

}  // namespace tg
