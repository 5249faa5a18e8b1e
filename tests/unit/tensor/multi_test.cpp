// Tensors on several devices (tensor/multi.cpp, tensor/tensor_multi.cpp) against float64 loops: CPU:i instances,
// shard() on one axis and on a 2x2 mesh (the seed's Test2DShard), elementwise, movement, reductions over split and
// whole axes (allreduce, naive and ring), matmul, gathering with to(); the copies each needs, counted on NULL
// devices that schedule without running; and the errors for what sharding does not support.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../random_floats.hpp"
#include "tg/jit.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace {

using tg::Shape;
using tg::Tensor;

constexpr uint32_t kSeed = 36001;

std::vector<std::string> devs(const std::string& kind, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(kind + ":" + std::to_string(i));
  return out;
}

// A row-major (rows x cols) matrix of random floats and its float64 copy.
struct Matrix {
  int64_t rows, cols;
  std::vector<float> f;
  double at(int64_t r, int64_t c) const { return f[static_cast<size_t>(r * cols + c)]; }
};
Matrix random_matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  return {rows, cols, tg::test::random_floats(static_cast<size_t>(rows * cols), rng)};
}
Tensor on_cpu(const Matrix& m) { return Tensor::from_vector(m.f, {m.rows, m.cols}, "CPU:0"); }

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

size_t copies() { return tg::schedule_stats().copies_run; }

// Runs f with RING set to `value`, restoring it after.
template <class F>
void with_ring(const char* value, F&& f) {
  ::setenv("RING", value, 1);
  try {
    f();
  } catch (...) {
    ::unsetenv("RING");
    throw;
  }
  ::unsetenv("RING");
}

TEST(Devices, CpuInstancesAreDistinctDevices) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}, "CPU:1");
  EXPECT_EQ(a.device(), "CPU:1");
  EXPECT_EQ(Tensor::ones({2}, tg::dtypes::float32, "cpu:0").device(), "CPU");
  const size_t before = copies();
  Tensor b = (a.to("CPU:2") * 2).realize();
  EXPECT_EQ(b.device(), "CPU:2");
  EXPECT_EQ(copies() - before, 1u);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_THROW((a + Tensor::ones({3}, tg::dtypes::float32, "CPU:2")), std::invalid_argument);
  try {
    Tensor::ones({1}, tg::dtypes::float32, "CPU:99").realize();
    FAIL() << "CPU:99 opened";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU:99 does not exist"), std::string::npos) << e.what();
  }
}

TEST(Shard, OneAxisElementwiseAndGather) {
  std::mt19937 rng(kSeed);
  std::printf("seed %u\n", kSeed);
  Matrix m = random_matrix(4, 6, rng);
  for (int64_t axis : {0, 1}) {
    Tensor t = on_cpu(m).shard(devs("CPU", 2), axis);
    EXPECT_EQ(t.device(), "CPU,CPU:1");
    EXPECT_EQ(t.shape(), (Shape{4, 6}));
    Tensor y = (t * 3 + 1).exp();
    std::vector<double> want;
    for (float x : m.f) want.push_back(std::exp(3.0 * x + 1));
    expect_near(y.to_vector<float>(), want, 1e-4);
    // realized, the tensor stays sharded: one buffer per device, and reads gather them
    y.realize();
    EXPECT_EQ(y.devices(), (std::vector<std::string>{"CPU", "CPU:1"}));
    expect_near(y.to("CPU:3").to_vector<float>(), want, 1e-4);
  }
}

TEST(Shard, ReduceOverTheSplitAxisIsAnAllreduce) {
  std::mt19937 rng(kSeed + 1);
  std::printf("seed %u\n", kSeed + 1);
  Matrix m = random_matrix(6, 4, rng);
  for (int n : {2, 3}) {
    for (const char* ring : {"0", "2"}) {
      with_ring(ring, [&] {
        Tensor t = on_cpu(m).shard(devs("CPU", n), 0);
        std::vector<double> col_sum(4, 0.0), col_max(4, -1e30);
        double total = 0;
        for (int64_t r = 0; r < 6; ++r)
          for (int64_t c = 0; c < 4; ++c)
            col_sum[c] += m.at(r, c), col_max[c] = std::max(col_max[c], m.at(r, c)), total += m.at(r, c);
        Tensor s = t.sum(0);
        s.realize();
        EXPECT_EQ(s.devices().size(), static_cast<size_t>(n));  // whole on every device
        expect_near(s.to_vector<float>(), col_sum, 1e-5);
        // every device holds the same bits: each copy of the result read on its own
        for (const auto& d : devs("CPU", n)) expect_near(s.to(d).to_vector<float>(), col_sum, 1e-5);
        expect_near(t.max(0).to_vector<float>(), col_max, 0);
        std::vector<double> neg_min;
        for (double x : col_max) neg_min.push_back(-x);
        expect_near((-t).min(0).to_vector<float>(), neg_min, 0);
        EXPECT_NEAR(t.sum().item<float>(), total, 1e-4) << "RING=" << ring << " on " << n << " devices";
      });
    }
  }
}

TEST(Shard, ReduceOverAWholeAxisStaysLocal) {
  std::mt19937 rng(kSeed + 2);
  std::printf("seed %u\n", kSeed + 2);
  Matrix m = random_matrix(4, 6, rng);
  Tensor t = on_cpu(m).shard(devs("CPU", 2), 0).realize();
  std::vector<double> row_sum(4, 0.0);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c) row_sum[r] += m.at(r, c);
  Tensor s = t.sum(1);
  const size_t before = copies();
  s.realize();
  EXPECT_EQ(copies() - before, 0u) << "a reduce along an axis that is whole on each device moves nothing";
  expect_near(s.to_vector<float>(), row_sum, 1e-5);
  std::vector<double> soft;  // softmax along the whole axis: max and sum reduces, all local
  for (int64_t r = 0; r < 4; ++r) {
    double mx = -1e30, sum = 0;
    for (int64_t c = 0; c < 6; ++c) mx = std::max(mx, m.at(r, c));
    for (int64_t c = 0; c < 6; ++c) sum += std::exp(m.at(r, c) - mx);
    for (int64_t c = 0; c < 6; ++c) soft.push_back(std::exp(m.at(r, c) - mx) / sum);
  }
  expect_near(t.softmax(1).to_vector<float>(), soft, 1e-6);
}

std::vector<double> matmul_ref(const Matrix& a, const Matrix& b) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < a.cols; ++k) acc += a.at(i, k) * b.at(k, j);
      out.push_back(acc);
    }
  return out;
}

TEST(Shard, MatmulColumnAndRowParallel) {
  std::mt19937 rng(kSeed + 3);
  std::printf("seed %u\n", kSeed + 3);
  Matrix x = random_matrix(3, 8, rng), w1 = random_matrix(8, 6, rng), w2 = random_matrix(6, 8, rng);
  const auto two = devs("CPU", 2);
  // column-parallel then row-parallel (a tensor-parallel FFN): x whole, w1 split by columns, w2 by rows; the only
  // collective is the allreduce after the second product
  Tensor xs = on_cpu(x).shard(two).realize(), w1s = on_cpu(w1).shard(two, 1).realize(),
         w2s = on_cpu(w2).shard(two, 0).realize();
  Tensor h = xs.matmul(w1s);
  Tensor y = h.matmul(w2s);
  Matrix hm{3, 6, {}};
  for (double v : matmul_ref(x, w1)) hm.f.push_back(static_cast<float>(v));
  expect_near(h.to_vector<float>(), matmul_ref(x, w1), 1e-5);
  const size_t before = copies(), peer_before = tg::schedule_stats().peer_copies;
  y.realize();
  EXPECT_EQ(copies() - before, 2u) << "one allreduce of 2 devices: each copies the other's partial";
  EXPECT_EQ(tg::schedule_stats().peer_copies - peer_before, 2u)
      << "CPU:0 and CPU:1 copy through the plugin's allocator_copy_peer";
  expect_near(y.to_vector<float>(), matmul_ref(hm, w2), 1e-4);
}

// The seed's Test2DShard: a 2x2 mesh of four devices, axis 0 split along mesh dim 0 and axis 1 along mesh dim 1.
Tensor shard_2d(const Tensor& t) { return t.shard(devs("CPU", 4), {2, 2}, {0, 1}); }

TEST(Shard2D, BasicElementwiseAndSums) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Tensor ref = Tensor::from_vector(v, {4, 4}, "CPU:0");
  Tensor t = shard_2d(ref);
  EXPECT_EQ(t.contiguous().to_vector<float>(), v);
  std::vector<float> plus(v);
  for (auto& x : plus) x += 1;
  EXPECT_EQ((t + 1).contiguous().to_vector<float>(), plus);
  EXPECT_EQ(t.sum().contiguous().item<float>(), 120.0f);
  std::vector<float> v3(32);
  for (int i = 0; i < 32; ++i) v3[i] = static_cast<float>(i);
  Tensor t3 = Tensor::from_vector(v3, {4, 4, 2}, "CPU:0").shard(devs("CPU", 4), {2, 2}, {0, 1});
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = v3[2 * i] + v3[2 * i + 1];
  EXPECT_EQ(t3.sum(2).contiguous().to_vector<float>(), want);
  std::vector<float> cols(4, 0), rows(4, 0);  // a reduce over one split axis: an allreduce within each mesh row/column
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) cols[c] += v[r * 4 + c], rows[r] += v[r * 4 + c];
  EXPECT_EQ(t.sum(0).to_vector<float>(), cols);
  EXPECT_EQ(t.sum(1).to_vector<float>(), rows);
}

TEST(Shard2D, Matmul) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Matrix a{4, 4, v};
  Tensor ref = Tensor::from_vector(v, {4, 4}, "CPU:0");
  Tensor out = (shard_2d(ref).matmul(shard_2d(ref))).contiguous();
  std::vector<float> got = out.to_vector<float>();
  std::vector<double> want = matmul_ref(a, a);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;  // small integers: exact
}

TEST(Shard, MovementFollowsTheSplitAxis) {
  std::mt19937 rng(kSeed + 4);
  std::printf("seed %u\n", kSeed + 4);
  Matrix m = random_matrix(4, 6, rng);
  Tensor t = on_cpu(m).shard(devs("CPU", 2), 1);
  // (4, 6) split along 6 -> (4, 2, 3) split along the 2; permuted; a whole axis padded and shrunk
  Tensor r = t.reshape({4, 2, 3}).permute({1, 0, 2}).pad({{0, 0}, {1, 0}, {0, 0}}).shrink({{0, 2}, {0, 4}, {1, 3}});
  std::vector<double> want;
  for (int64_t j = 0; j < 2; ++j)
    for (int64_t i = -1; i < 3; ++i)
      for (int64_t k = 1; k < 3; ++k) want.push_back(i < 0 ? 0.0 : m.at(i, j * 3 + k));
  expect_near(r.to_vector<float>(), want, 0);
  std::vector<double> tw;  // transposed: the split axis moves with it
  for (int64_t c = 0; c < 6; ++c)
    for (int64_t rr = 0; rr < 4; ++rr) tw.push_back(m.at(rr, c));
  expect_near(t.transpose().contiguous().to_vector<float>(), tw, 0);
  // resharded by an elementwise op with a tensor split along the other axis: gathered and cut again
  Tensor u = on_cpu(m).shard(devs("CPU", 2), 0);
  std::vector<double> twice;
  for (float x : m.f) twice.push_back(2.0 * x);
  expect_near((t + u).to_vector<float>(), twice, 1e-6);
  expect_near(u.shard_like(t).to_vector<float>(), std::vector<double>(m.f.begin(), m.f.end()), 0);
}

// Counted on NULL devices, which schedule, render and copy but never run a kernel.
TEST(ShardCounts, CopiesOfShardAllreduceAndGather) {
  Tensor x = Tensor::zeros({8, 4}, tg::dtypes::float32, "NULL:0").contiguous().realize();
  size_t before = copies();
  Tensor s = x.shard(devs("NULL", 2), 0).realize();
  EXPECT_EQ(copies() - before, 1u) << "NULL:0 keeps its half; one half is copied";
  before = copies();
  s.sum(0).realize();
  EXPECT_EQ(copies() - before, 2u) << "naive allreduce on 2: each copies the other's partial";
  Tensor four = x.shard(devs("NULL", 4), 0).realize();
  before = copies();
  four.sum(0).realize();
  EXPECT_EQ(copies() - before, 12u) << "naive allreduce on 4: n(n-1)";
  with_ring("2", [&] {
    before = copies();
    four.sum(0).realize();  // partials of 4 elements: a chunk of one per device
    EXPECT_EQ(copies() - before, 24u) << "ring on 4: reduce-scatter n(n-1) chunk copies, allgather as many";
  });
  before = copies();
  four.to("NULL:5").realize();
  EXPECT_EQ(copies() - before, 4u) << "gather: one copy per distinct shard";
  Tensor whole = x.shard(devs("NULL", 4)).realize();
  before = copies();
  whole.to("NULL:2").realize();
  EXPECT_EQ(copies() - before, 0u) << "replicated: the copy already on NULL:2 is read where it is";
}

TEST(ShardErrors, EachRefusalSaysWhatAndWhere) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Tensor x = Tensor::zeros({5, 4}, tg::dtypes::float32, "CPU:0").contiguous();
  EXPECT_NE(message([&] { x.shard(devs("CPU", 2), 0); }).find("does not split into 2 equal parts"), std::string::npos);
  EXPECT_NE(message([&] { x.shard({"CPU:0", "cpu:0"}, 1); }).find("listed twice"), std::string::npos);
  EXPECT_NE(message([&] { x.shard(devs("CPU", 4), {2, 2}, {0}); }).find("needs as many axes"), std::string::npos);
  EXPECT_NE(message([&] { x.shard(devs("CPU", 3), {2, 2}, {0, 1}); }).find("does not hold 3 devices"),
            std::string::npos);
  EXPECT_NE(message([&] { x.shard(devs("CPU", 2), 2); }).find("out of range"), std::string::npos);
  EXPECT_NE(message([&] { x.shard({"CPU:0", "NOPE:1"}, 1); }).find("unknown device 'NOPE:1'"), std::string::npos);
  Tensor s = x.shard(devs("CPU", 2), 1);
  EXPECT_NE(
      message([&] { s.pad({{0, 0}, {1, 0}}).realize(); }).find("PAD along axis 1, which is split over (CPU, CPU:1)"),
      std::string::npos);
  EXPECT_NE(message([&] { s.reshape({20}).realize(); }).find("merges or splits axis 1"), std::string::npos);
  EXPECT_NE(
      message([&] { Tensor::empty({2}, tg::dtypes::float32, "CPU:0,CPU:1"); }).find("make it on one and shard() it"),
      std::string::npos);
  // a Jit captured on inputs sharded one way refuses them sharded another way
  tg::Jit jit([](const std::vector<Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<Tensor>{in[0] * 2};
  });
  for (int i = 0; i < 3; ++i) jit({x.shard(devs("CPU", 2), 1)});
  EXPECT_NE(message([&] { jit({x.shard(devs("CPU", 2))}); })
                .find("input 0 is (5, 4) float32 on (CPU, CPU:1), replicated, captured as (5, 4) float32 on (CPU, "
                      "CPU:1) split along axis 1"),
            std::string::npos)
      << message([&] { jit({x.shard(devs("CPU", 2))}); });
  EXPECT_NE(message([&] { s + x; }).find("different devices"), std::string::npos);
}

// A Jit over sharded tensors: a tensor-parallel MLP whose input is whole on both devices and whose bias is split,
// returning the split hidden layer as well as the summed output. Every call has new inputs; calls 3 and 4 are
// replays, patched shard by shard, and their sharded output is a sharded tensor over the replay's buffers.
TEST(ShardJit, ShardedInputsAndOutputsReplayWithNewData) {
  std::mt19937 rng(kSeed + 7);
  std::printf("seed %u\n", kSeed + 7);
  const auto two = devs("CPU", 2);
  Matrix w1 = random_matrix(8, 6, rng), w2 = random_matrix(6, 8, rng);
  Tensor w1s = on_cpu(w1).shard(two, 1).realize(), w2s = on_cpu(w2).shard(two, 0).realize();
  tg::Jit mlp([&](const std::vector<Tensor>& in, const std::vector<tg::BoundVariable>&) {
    Tensor h = (in[0].matmul(w1s) + in[1]).relu();
    return std::vector<Tensor>{h.matmul(w2s), h};
  });
  for (int call = 0; call < 4; ++call) {
    Matrix x = random_matrix(3, 8, rng), b = random_matrix(1, 6, rng);
    std::vector<Tensor> out = mlp({on_cpu(x).shard(two), on_cpu(b).shard(two, 1)});
    if (call >= 2) {
      EXPECT_GT(mlp.captured_launches(), 0u) << "call " << call << " replays";
    }
    Matrix hm{3, 6, {}};
    std::vector<double> h = matmul_ref(x, w1);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] = std::max(0.0, h[i] + b.at(0, static_cast<int64_t>(i % 6))), hm.f.push_back(static_cast<float>(h[i]));
    EXPECT_EQ(out[1].device(), "CPU,CPU:1");
    expect_near(out[1].to_vector<float>(), h, 1e-5);
    expect_near(out[0].to_vector<float>(), matmul_ref(hm, w2), 1e-4);
  }
}

// A copy of an input to another device, replayed, copies that call's input (not the captured call's).
TEST(ShardJit, ACopyOfAnInputCopiesTheNewInput) {
  tg::Jit moved([](const std::vector<Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<Tensor>{in[0].to("CPU:1") * 2};
  });
  for (int call = 0; call < 4; ++call) {
    const float v = static_cast<float>(call + 1);
    std::vector<Tensor> out = moved({Tensor::from_vector(std::vector<float>{v, -v}, {2}, "CPU:0")});
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2 * v, -2 * v})) << "call " << call;
  }
}

TEST(Shard, ConstantsOnADeviceListAreWholeOnEach) {
  Tensor c = Tensor::full({2, 2}, 3.0, tg::dtypes::float32, "CPU:0,CPU:1");
  EXPECT_EQ(c.device(), "CPU,CPU:1");
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  Tensor s = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, "CPU:0").shard(devs("CPU", 2), 0);
  EXPECT_EQ((s * c).to_vector<float>(), (std::vector<float>{3, 6, 9, 12}));
}

}  // namespace
