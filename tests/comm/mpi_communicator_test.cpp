// The MPI communicator (tg/comm_mpi.hpp) under `mpirun -np N`: every rank runs the communicator suite
// (communicator_suite.hpp) in the same order.
// `--stray-rank`: rank 1 stays away from an allreduce; rank 0's watchdog must report it within TG_COMM_TIMEOUT_S and
// end the job (mpirun exits non-zero).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "communicator_suite.hpp"
#include "tg/comm_mpi.hpp"

namespace {

std::unique_ptr<tg::Communicator> g_world;
void on_world(void (*check)(tg::Communicator&)) { check(*g_world); }

COMM_SUITE_TESTS(Mpi, on_world)

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  g_world = tg::mpi_world();
  if (argc > 1 && std::strcmp(argv[1], "--stray-rank") == 0) {
    if (g_world->rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));  // never joins
    double v = 1;
    g_world->allreduce(&v, 1, tg::dtypes::float64, tg::CollectiveOp::Sum);
    std::fprintf(stderr, "the allreduce returned without rank 1\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  const int failed = RUN_ALL_TESTS();
  g_world.reset();
  return failed;
}
