// The checks every communicator passes (tg/comm.hpp), written once for any backend: each rank of the group calls
// each check, in the same order, and compares what it got with values computed here from the rank numbers (exact
// in float64 and int32). The last is a tensor-parallel MLP: each rank holds a column block of W1 and a row block
// of W2, and the allreduce of the partial outputs must equal the whole product computed in float64 loops.
// Run under mpirun (mpi_communicator_test.cpp) and on threads of one process (local_communicator_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "tg/comm.hpp"
#include "tg/jit.hpp"
#include "tg/tensor.hpp"

namespace comm_suite {

inline void AllreduceSumMaxMinIsExact(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = r * 1000.0 + static_cast<double>(i);
  comm.allreduce(v.data(), v.size(), tg::dtypes::float64, tg::CollectiveOp::Sum);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], 1000.0 * n * (n - 1) / 2 + static_cast<double>(i) * n) << i;
  std::vector<int32_t> k = {r, -r, 7};
  comm.allreduce(k.data(), k.size(), tg::dtypes::int32, tg::CollectiveOp::Max);
  EXPECT_EQ(k, (std::vector<int32_t>{n - 1, 0, 7}));
  k = {r, -r, 7};
  comm.allreduce(k.data(), k.size(), tg::dtypes::int32, tg::CollectiveOp::Min);
  EXPECT_EQ(k, (std::vector<int32_t>{0, -(n - 1), 7}));
  uint16_t half = 0;
  EXPECT_THROW(comm.allreduce(&half, 1, tg::dtypes::float16, tg::CollectiveOp::Sum), tg::Error);
}

inline void AllgatherReduceScatterSendRecvBarrier(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  int64_t mine[2] = {r, 10 * r};
  std::vector<int64_t> all(2 * static_cast<size_t>(n));
  comm.allgather(mine, all.data(), sizeof(mine));
  for (int i = 0; i < n; ++i) EXPECT_EQ(all[2 * i] + all[2 * i + 1], 11 * i);
  std::vector<float> blocks(3 * static_cast<size_t>(n));
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<float>(r + i);
  float got[3];
  comm.reduce_scatter(blocks.data(), got, 3, tg::dtypes::float32, tg::CollectiveOp::Sum);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(got[j], n * (n - 1) / 2.0f + n * static_cast<float>(3 * r + j));
  comm.barrier();
  if (n == 1) return;  // no one to message
  // a ring of messages
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  int64_t token = 100 + r, in = -1;
  if (r % 2 == 0)
    comm.send(&token, sizeof token, next), comm.recv(&in, sizeof in, prev);
  else
    comm.recv(&in, sizeof in, prev), comm.send(&token, sizeof token, next);
  EXPECT_EQ(in, 100 + prev);
  EXPECT_THROW(comm.send(&token, sizeof token, n), std::invalid_argument);
}

inline void SplitMakesSubGroups(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  auto sub = comm.split(r % 2, r);
  double v = r;
  sub->allreduce(&v, 1, tg::dtypes::float64, tg::CollectiveOp::Sum);
  double want = 0;
  for (int i = r % 2; i < n; i += 2) want += i;
  EXPECT_EQ(v, want);
  EXPECT_EQ(sub->rank(), r / 2);
}

inline void TensorCollectives(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(r + i);
  tg::Tensor t = tg::Tensor::from_vector(x, {3, 4}, "CPU");
  std::vector<float> s = tg::allreduce(t * 2, comm).to_vector<float>();
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i], 2.0f * (n * (n - 1) / 2.0f + n * static_cast<float>(i)));
  tg::Tensor g = tg::allgather(t, comm, 1);  // (3, 4n): rank blocks side by side
  ASSERT_EQ(g.shape(), (tg::Shape{3, 4 * n}));
  std::vector<float> gv = g.to_vector<float>();
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < 4 * n; ++c)
      EXPECT_EQ(gv[static_cast<size_t>(row * 4 * n + c)], static_cast<float>(c / 4 + row * 4 + c % 4));
  // shapes that disagree fail on every rank with the same message
  if (n == 1) return;
  tg::Tensor odd = tg::Tensor::zeros({r == 0 ? 2 : 3}, tg::dtypes::float32, "CPU");
  try {
    tg::allreduce(odd, comm);
    FAIL() << "mismatched shapes were combined";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 has (2,) float32, rank 1 has (3,) float32"), std::string::npos)
        << e.what();
  }
}

inline void TensorParallelMlpMatchesTheWholeProduct(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const int64_t d = 8, f = 6 * n;  // hidden f split into n column blocks of W1 and row blocks of W2
  std::mt19937 rng(36100);         // the same on every rank: each builds the whole weights and keeps its block
  std::printf("seed 36100\n");
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(d), w1(static_cast<size_t>(d * f)), w2(static_cast<size_t>(f * d));
  for (auto* v : {&x, &w1, &w2})
    for (auto& e : *v) e = u(rng);
  const int64_t lo = r * f / n, hi = (r + 1) * f / n;
  tg::Tensor xt = tg::Tensor::from_vector(x, {1, d}, "CPU");
  tg::Tensor w1t = tg::Tensor::from_vector(w1, {d, f}, "CPU").shrink({{0, d}, {lo, hi}});
  tg::Tensor w2t = tg::Tensor::from_vector(w2, {f, d}, "CPU").shrink({{lo, hi}, {0, d}});
  std::vector<float> y = tg::allreduce(xt.matmul(w1t).relu().matmul(w2t), comm).to_vector<float>();
  for (int64_t j = 0; j < d; ++j) {
    double want = 0;
    for (int64_t k = 0; k < f; ++k) {
      double h = 0;
      for (int64_t i = 0; i < d; ++i) h += static_cast<double>(x[i]) * w1[static_cast<size_t>(i * f + k)];
      want += std::max(h, 0.0) * w2[static_cast<size_t>(k * d + j)];
    }
    EXPECT_NEAR(y[static_cast<size_t>(j)], want, 1e-4) << j;
  }
}

// A Jit captures the allreduce as a schedule item and replays it with new inputs: every replay's sum is exact.
inline void JitReplaysTheAllreduce(tg::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  tg::Jit jit([&](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{tg::allreduce(in[0] * 2 + 1, comm) * 3};
  });
  for (int call = 0; call < 5; ++call) {
    std::vector<float> x(257);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(call * 1000 + r * 10 + static_cast<int>(i % 7));
    std::vector<float> got = jit({tg::Tensor::from_vector(x, {257}, "CPU")})[0].to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      double want = 0;
      for (int k = 0; k < n; ++k) want += 2.0 * (call * 1000 + k * 10 + static_cast<int>(i % 7)) + 1;
      ASSERT_EQ(got[i], 3 * want) << "call " << call << " element " << i;
    }
  }
  EXPECT_GT(jit.captured_launches(), 0u);
}

}  // namespace comm_suite

// TEST(<Backend>, <check>) for every check: `run(check)` runs it on every rank of the backend's group.
#define COMM_SUITE_TESTS(Backend, run)                                                                                 \
  TEST(Backend, AllreduceSumMaxMinIsExact) { run(comm_suite::AllreduceSumMaxMinIsExact); }                             \
  TEST(Backend, AllgatherReduceScatterSendRecvBarrier) { run(comm_suite::AllgatherReduceScatterSendRecvBarrier); }     \
  TEST(Backend, SplitMakesSubGroups) { run(comm_suite::SplitMakesSubGroups); }                                         \
  TEST(Backend, TensorCollectives) { run(comm_suite::TensorCollectives); }                                             \
  TEST(Backend, TensorParallelMlpMatchesTheWholeProduct) { run(comm_suite::TensorParallelMlpMatchesTheWholeProduct); } \
  TEST(Backend, JitReplaysTheAllreduce) { run(comm_suite::JitReplaysTheAllreduce); }
