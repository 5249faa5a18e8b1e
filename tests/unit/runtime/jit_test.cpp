// Jit capture and replay: results match a host loop on every call, replays schedule and compile nothing, new
// buffers and variable values reach the recorded kernels, and misuse is reported.
#include "tg/jit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "../random_floats.hpp"
#include "tg/profile.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;

std::vector<float> random_floats(size_t n, std::mt19937& rng) { return test::random_floats(n, rng, -2, 2); }

TEST(Jit, ReplaysMatchTheReferenceWithNewInputs) {
  uint32_t seed = std::random_device{}();
  std::cout << "jit seed=" << seed << "\n";
  std::mt19937 rng(seed);
  Tensor w = Tensor::rand({8, 5}, 11);  // lazy: realized by call 1 (one-time work that is not replayed)
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{(in[0] * in[1] + 1.0).relu().matmul(w).sum({1})};
  });
  std::vector<float> wh = Tensor(w).to_vector<float>();
  for (int call = 0; call < 5; ++call) {
    auto a = random_floats(4 * 8, rng), b = random_floats(4 * 8, rng);
    size_t ran = schedule_stats().kernels_run, compiled = schedule_stats().programs_compiled;
    auto out = f({Tensor::from_vector(a, {4, 8}), Tensor::from_vector(b, {4, 8})})[0].to_vector<float>();
    if (call >= 2) {
      EXPECT_GT(f.captured_launches(), 0u);
      EXPECT_EQ(schedule_stats().kernels_run, ran) << "a replay must not go through the scheduler";
      EXPECT_EQ(schedule_stats().programs_compiled, compiled);
    }
    for (int i = 0; i < 4; ++i) {
      double want = 0;
      for (int k = 0; k < 8; ++k) {
        double h = std::max(0.0, static_cast<double>(a[i * 8 + k]) * b[i * 8 + k] + 1.0);
        for (int j = 0; j < 5; ++j) want += h * wh[k * 5 + j];
      }
      EXPECT_NEAR(out[i], want, 1e-4 * (1 + std::abs(want))) << "call " << call << " row " << i;
    }
  }
}

TEST(Jit, VariablesChangeOnReplay) {
  std::vector<float> host(16 * 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  Tensor cache = Tensor::from_vector(host, {16, 4}).realize();
  Variable pos("start_pos", 0, 15);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>& v) {
    return std::vector<Tensor>{in[0].shrink(0, v[0], 1) * 2.0};
  });
  for (int64_t p : {3, 7, 0, 15, 9}) {
    auto row = f({cache}, {pos.bind(p)})[0].to_vector<float>();
    for (int c = 0; c < 4; ++c) EXPECT_EQ(row[c], 2 * host[p * 4 + c]) << "start_pos=" << p;
  }
  EXPECT_GT(f.captured_launches(), 0u);
}

TEST(Jit, Int64VariableBeyond32BitsThroughReplay) {
  Variable big("big", 0, int64_t{1} << 40, dtypes::int64);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>& v) {
    return std::vector<Tensor>{in[0] + Tensor::from_variable(v[0])};
  });
  Tensor x = Tensor::full({2}, 1, dtypes::int64);
  for (int64_t k = 0; k < 4; ++k) {
    int64_t v = (int64_t{1} << 35) + k;
    EXPECT_EQ(f({x}, {big.bind(v)})[0].to_vector<int64_t>(), std::vector<int64_t>(2, v + 1));
  }
}

TEST(JitErrors, DifferentInputShapeNamesBoth) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0] * 2.0};
  });
  for (int i = 0; i < 3; ++i) f({Tensor::ones({2, 3})});
  try {
    f({Tensor::ones({3, 2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("(3, 2)"));
    EXPECT_THAT(e.what(), HasSubstr("(2, 3)"));
  }
  f.reset();  // after a reset the new shape is captured
  EXPECT_EQ(f({Tensor::ones({3, 2})})[0].to_vector<float>(), std::vector<float>(6, 2.0f));
}

TEST(JitErrors, FunctionThatChangesItsGraph) {
  int n = 0;
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{++n == 1 ? in[0] * 2.0 : in[0].exp()};
  });
  f({Tensor::ones({4})});
  EXPECT_THROW(f({Tensor::ones({4})}), Error);
}

}  // namespace
}  // namespace tg
