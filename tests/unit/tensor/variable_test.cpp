// Symbolic variables: one compiled kernel for every value, values as typed kernel arguments (int32 and int64),
// variable offsets in shrink and pad, and the errors a user can cause.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;

TEST(Variable, Int64ValueBeyond32BitsRoundTripsThroughAKernel) {
  Variable big("big", 0, int64_t{1} << 40, dtypes::int64);
  int64_t v = (int64_t{1} << 35) + 7;
  Tensor t = Tensor::from_variable(big.bind(v)) + Tensor::full({3}, 1, dtypes::int64);
  EXPECT_EQ(t.to_vector<int64_t>(), std::vector<int64_t>(3, v + 1));
}

TEST(Variable, Int32ArithmeticAndOneCompileForEveryValue) {
  Variable n("n", -100, 100);
  Tensor x = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4}, dtypes::int32).realize();
  auto run = [&](int64_t v) { return (x * Tensor::from_variable(n.bind(v))).to_vector<int32_t>(); };
  EXPECT_EQ(run(3), std::vector<int32_t>({3, 6, 9, 12}));
  size_t compiled = schedule_stats().programs_compiled;
  EXPECT_EQ(run(-5), std::vector<int32_t>({-5, -10, -15, -20}));
  EXPECT_EQ(run(100), std::vector<int32_t>({100, 200, 300, 400}));
  EXPECT_EQ(schedule_stats().programs_compiled, compiled) << "a new value must not compile a new kernel";
}

TEST(Variable, ShrinkAtAVariableStartReadsTheRightRows) {
  // a (16, 8) "cache"; read rows [p, p+2) for several p with one kernel
  std::vector<float> host(16 * 8);
  std::iota(host.begin(), host.end(), 0.0f);
  Tensor cache = Tensor::from_vector(host, {16, 8}).realize();
  Variable pos("start_pos", 0, 14);
  for (int64_t p : {0, 5, 14}) {
    std::vector<float> got = (cache.shrink(0, pos.bind(p), 2) * 2.0).to_vector<float>();
    ASSERT_EQ(got.size(), 16u);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 8; ++c) EXPECT_EQ(got[r * 8 + c], 2.0f * host[(p + r) * 8 + c]) << "p=" << p;
  }
}

TEST(Variable, PadAtAVariableOffsetPlacesARow) {
  Tensor row = Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3}).realize();
  Variable pos("start_pos", 0, 9);
  for (int64_t p : {0, 4, 9}) {
    std::vector<float> got = row.pad(0, pos.bind(p), 10).to_vector<float>();
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(got[r * 3 + c], r == p ? static_cast<float>(c + 1) : 0.0f) << "p=" << p << " r=" << r;
  }
}

TEST(Variable, ReductionOverAVariableWindow) {
  std::vector<float> host(32);
  std::iota(host.begin(), host.end(), 1.0f);
  Tensor x = Tensor::from_vector(host, {32}).realize();
  Variable pos("p", 0, 28);
  for (int64_t p : {0, 11, 28}) {
    float want = host[p] + host[p + 1] + host[p + 2] + host[p + 3];
    EXPECT_EQ(x.shrink(0, pos.bind(p), 4).sum().item<float>(), want) << "p=" << p;
  }
}

TEST(VariableErrors, BindOutsideTheRange) {
  Variable v("start_pos", 0, 4095);
  try {
    v.bind(4096);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("start_pos = 4096 outside [0, 4095]"));
  }
  EXPECT_THROW(Variable("x", 0, int64_t{1} << 35), std::invalid_argument);  // int32 cannot hold it
  EXPECT_THROW(Variable("x", 5, 1), std::invalid_argument);
}

TEST(VariableErrors, ShrinkThatCouldLeaveTheTensor) {
  Tensor t = Tensor::zeros({8, 4});
  Variable v("p", 0, 7);
  try {
    t.shrink(0, v.bind(0), 2);  // p can reach 7: 7 + 2 > 8
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("(8, 4)"));
  }
}

TEST(VariableErrors, OneVariableTwoValuesInOneKernel) {
  Tensor x = Tensor::zeros({8});
  Variable v("p", 0, 4);
  Tensor y = x.shrink(0, v.bind(1), 4) + x.shrink(0, v.bind(2), 4);
  EXPECT_THROW(y.realize(), Error);
}

}  // namespace
}  // namespace tg
