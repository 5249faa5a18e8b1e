// The in-process communicator (tg::local_communicators): the communicator suite on groups of 1, 2 and 3 threads,
// each thread one rank; then a rank that never joins (the others time out with one message) and a rank that
// fails (abort: the others' waits end with its reason at once).
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <thread>

#include "communicator_suite.hpp"

namespace {

// Runs fn on every rank of a group of n threads; the first exception of any rank is rethrown here (the failing
// rank aborts the group, so no other rank waits for it).
void on_threads(int n, const std::function<void(tg::Communicator&)>& fn) {
  auto comms = tg::local_communicators(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(*comms[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        comms[static_cast<size_t>(r)]->abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void on_groups(void (*check)(tg::Communicator&)) {
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE("group of " + std::to_string(n));
    on_threads(n, check);
  }
}

COMM_SUITE_TESTS(Local, on_groups)

TEST(LocalErrors, ARankThatNeverJoinsTimesOut) {  // TG_COMM_TIMEOUT_S=2 (tests/comm/CMakeLists.txt)
  auto comms = tg::local_communicators(2);
  const auto t0 = std::chrono::steady_clock::now();
  double v = 1;
  try {
    comms[0]->allreduce(&v, 1, tg::dtypes::float64, tg::CollectiveOp::Sum);
    FAIL() << "the allreduce returned without rank 1";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("in-process rank 0 of 2: allreduce got no answer from the other ranks in 2 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
}

TEST(LocalErrors, AFailedRankEndsTheOthersWaits) {
  try {
    on_threads(3, [](tg::Communicator& c) {
      if (c.rank() == 2) throw tg::Error("tg-llm: rank 2 could not load its shard");
      double v = 1;
      c.allreduce(&v, 1, tg::dtypes::float64, tg::CollectiveOp::Sum);
    });
    FAIL() << "no rank failed";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
  }
}

TEST(LocalErrors, MismatchedCountsFailOnEveryRank) {
  std::atomic<int> failed{0};
  on_threads(2, [&](tg::Communicator& c) {
    std::vector<float> v(c.rank() == 0 ? 4 : 5, 1.0f);
    try {
      c.allreduce(v.data(), v.size(), tg::dtypes::float32, tg::CollectiveOp::Sum);
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0 has 4 float32, rank 1 has 5 float32"), std::string::npos)
          << e.what();
      ++failed;
    }
  });
  EXPECT_EQ(failed, 2);
}

// A Jit that captured an allreduce and outlives its communicator fails with a message on its next call instead of
// calling into a destroyed object.
TEST(LocalErrors, AJitOutlivingItsCommunicatorFailsClearly) {
  auto comms = tg::local_communicators(1);
  tg::Communicator* comm = comms[0].get();
  tg::Jit jit([&](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{tg::allreduce(in[0] + 1, *comm)};
  });
  auto x = [] { return tg::Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "CPU"); };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(jit({x()})[0].to_vector<float>(), (std::vector<float>{2, 3, 4}));
  comms.clear();
  try {
    jit({x()});
    FAIL() << "a replay ran a collective of a destroyed communicator";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("its communicator no longer exists"), std::string::npos) << e.what();
  }
}

// A device communicator needs its plugin's collectives extension: the CPU has none (its tensors already are host
// memory), and a device that is not there is named.
TEST(DeviceCommunicator, RefusesDevicesWithoutDeviceCollectives) {
  auto comms = tg::local_communicators(1);
  try {
    tg::device_communicator(*comms[0], "CPU");
    FAIL() << "a device communicator on the CPU";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU's plugin has no device collectives (tg.collectives.v1)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(tg::device_communicator(*comms[0], "NOSUCHDEV"), std::exception);
}

}  // namespace
