#include "generation/ranks.hpp"

#include <chrono>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "tg/device.hpp"
#include "tg/error.hpp"
#ifdef TG_LLM_HAVE_MPI
#include "tg/comm_mpi.hpp"
#endif

namespace tg::llm {

template <typename F>
void TimedCommunicator::timed(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++calls_;
}
void TimedCommunicator::allreduce(void* data, size_t count, DType dtype, CollectiveOp op) {
  timed([&] { inner_.allreduce(data, count, dtype, op); });
}
void TimedCommunicator::allgather(const void* send, void* recv, size_t bytes) {
  timed([&] { inner_.allgather(send, recv, bytes); });
}
void TimedCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType dtype, CollectiveOp op) {
  timed([&] { inner_.reduce_scatter(send, recv, count, dtype, op); });
}

std::vector<std::string> parse_device_list(const std::string& list) {
  std::vector<std::string> devices;
  std::set<std::string> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    std::string d = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (d.empty())
      throw Error("tg-llm: --devices '" + list + "' has an empty device name (give a list such as CPU:0,CPU:1)");
    d = canonical_device(d);  // an unknown device fails here, before any rank starts; "CPU" and "CPU:0" are one
    if (!seen.insert(d).second)
      throw Error("tg-llm: --devices '" + list + "' names " + d + " twice (each rank needs a device of its own)");
    devices.push_back(std::move(d));
    if (comma == std::string::npos) return devices;
    start = comma + 1;
  }
}

void run_local_ranks(const std::vector<std::string>& devices, const std::function<void(const Rank&)>& fn) {
  const int n = static_cast<int>(devices.size());
  auto inner = local_communicators(n);
  std::vector<std::unique_ptr<TimedCommunicator>> comms;
  for (auto& c : inner) comms.push_back(std::make_unique<TimedCommunicator>(*c));
  std::mutex mu;
  std::exception_ptr first;  // the error that stopped the group (the others' are its echo)
  auto rank = [&](int r) {
    try {
      TimedCommunicator* c = comms[static_cast<size_t>(r)].get();
      fn(Rank{{r, n, c}, devices[static_cast<size_t>(r)], c});
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
      comms[static_cast<size_t>(r)]->abort(e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < n; ++r) threads.emplace_back(rank, r);
  rank(0);
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

void run_mpi_rank(const std::function<void(const Rank&)>& fn) {
#ifdef TG_LLM_HAVE_MPI
  std::unique_ptr<Communicator> mpi = mpi_world();
  auto world = std::make_unique<TimedCommunicator>(*mpi);
  try {
    fn(Rank{{world->rank(), world->size(), world.get()}, "", world.get()});
  } catch (const std::exception& e) {
    if (world->size() == 1) throw;
    world->abort(e.what());
  }
#else
  (void)fn;
  throw Error(
      "tg-llm: --tensor-parallel needs MPI, and this tg-llm was built without it (scripts/setup.sh installs OpenMPI; "
      "rebuild)");
#endif
}

}  // namespace tg::llm
