// Allreduce latency and bandwidth, as JSON, with OpenMPI's own MPI_Allreduce measured in the same run:
//   mpirun -np 2 build/bin/bench_allreduce [--reps N]
// For 8 B, 2 KiB, 64 KiB and 16 MiB of float32: tg's MPI communicator (MPI_Allreduce under its watchdog) and
// MPI_Allreduce itself between the ranks; then, on rank 0 alone, in this process: an allreduce between CPU:0 and
// CPU:1 (a tensor split over the two, summed along the split axis: each device's partial copied to the other by
// the plugin's peer copy and added), and one between two threads through tg::local_communicators (the in-process
// communicator of tg-llm --devices). Medians of N repetitions; bus bandwidth = 2(n-1)/n * bytes / time, as
// nccl-tests reports it.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tg/comm_mpi.hpp"
#include "tg/tensor.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 51;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") reps = std::max(3, std::atoi(argv[i + 1]));
  auto world = tg::mpi_world();
  const int n = world->size(), rank = world->rank();
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  const std::vector<size_t> sizes = {8, 2048, 64 * 1024, 16 * 1024 * 1024};
  if (rank == 0) std::printf("{\"ranks\": %d, \"reps\": %d, \"results\": [\n", n, reps);
  bool first = true;
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> a(count, 1.0f), b(count, 1.0f);
    const int r = bytes >= (1u << 24) ? std::max(3, reps / 5) : reps;
    for (int w = 0; w < 3; ++w) world->allreduce(a.data(), count, tg::dtypes::float32, tg::CollectiveOp::Sum);  // warm
    world->barrier();
    const double tg_s =
        median_seconds(r, [&] { world->allreduce(a.data(), count, tg::dtypes::float32, tg::CollectiveOp::Sum); });
    world->barrier();
    for (int w = 0; w < 3; ++w)
      MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double mpi_s = median_seconds(
        r, [&] { MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
    world->barrier();
    if (rank == 0) {
      std::printf(
          "%s  {\"between\": \"mpi ranks\", \"bytes\": %zu, \"tg_us\": %.2f, \"mpi_allreduce_us\": %.2f, "
          "\"ratio_mpi_over_tg\": %.3f, "
          "\"tg_busbw_gbs\": %.3f, \"mpi_busbw_gbs\": %.3f}",
          first ? "" : ",\n", bytes, tg_s * 1e6, mpi_s * 1e6, mpi_s / tg_s, bus * bytes / tg_s / 1e9,
          bus * bytes / mpi_s / 1e9);
      first = false;
    }
  }
  if (rank == 0) {  // in process: CPU:0 and CPU:1
    const std::vector<std::string> two = {"CPU:0", "CPU:1"};
    for (size_t bytes : sizes) {
      const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
      tg::Tensor x = tg::Tensor::ones({2, count}, tg::dtypes::float32, "CPU:0").contiguous().shard(two, 0).realize();
      tg::Tensor y = x.sum(0).realize();  // compile once
      const int r = bytes >= (1u << 24) ? std::max(3, reps / 5) : reps;
      const double s = median_seconds(r, [&] { x.sum(0).realize(); });
      std::printf(
          ",\n  {\"between\": \"CPU:0 and CPU:1 in process\", \"bytes\": %zu, \"tg_us\": %.2f, \"tg_busbw_gbs\": %.3f, "
          "\"note\": \"includes each device's reduce over its shard and the adds\"}",
          bytes, s * 1e6, 1.0 * bytes / s / 1e9);
    }
    // two threads, each a rank of the in-process communicator
    auto comms = tg::local_communicators(2);
    for (size_t bytes : sizes) {
      const size_t count = bytes / sizeof(float);
      std::vector<float> a(count, 1.0f), b(count, 1.0f);
      const int r = bytes >= (1u << 24) ? std::max(3, reps / 5) : reps;
      std::thread peer([&] {
        for (int i = 0; i < r + 3; ++i)
          comms[1]->allreduce(b.data(), count, tg::dtypes::float32, tg::CollectiveOp::Sum);
      });
      for (int w = 0; w < 3; ++w) comms[0]->allreduce(a.data(), count, tg::dtypes::float32, tg::CollectiveOp::Sum);
      const double s =
          median_seconds(r, [&] { comms[0]->allreduce(a.data(), count, tg::dtypes::float32, tg::CollectiveOp::Sum); });
      peer.join();
      std::printf(
          ",\n  {\"between\": \"two threads (local_communicators)\", \"bytes\": %zu, \"tg_us\": %.2f, "
          "\"tg_busbw_gbs\": %.3f}",
          bytes, s * 1e6, bytes / s / 1e9);
    }
    std::printf("\n]}\n");
  }
  world->barrier();
  return 0;
}
