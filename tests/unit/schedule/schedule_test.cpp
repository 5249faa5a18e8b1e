// Fusion: how many kernels common graphs become (elementwise chains fuse, movement is free, reductions fuse
// with their inputs and are realized where they are broadcast).
#include "schedule/schedule.hpp"

#include <gtest/gtest.h>

#include "tg/tensor.hpp"

namespace tg {
namespace {

size_t kernel_count(const Tensor& t) {
  auto items = sched::create_schedule({t.node()}, t.device()).items;
  size_t n = 0;
  for (auto& it : items) n += it.kind == sched::ScheduleItem::Kind::KERNEL;
  return n;
}

Tensor input(const Shape& s, uint64_t seed) { return Tensor::rand(s, seed).realize(); }

TEST(Fusion, ElementwiseChainIsOneKernel) {
  Tensor a = input({64, 64}, 1), b = input({64, 64}, 2);
  EXPECT_EQ(kernel_count(((a + b) * a - b.exp()).relu().sqrt()), 1u);
}

TEST(Fusion, MovementOpsAreIndexing) {
  Tensor a = input({16, 32}, 1);
  EXPECT_EQ(kernel_count(a.transpose().flip({0}).pad({{1, 1}, {0, 2}}).reshape({-1}) * 2.0), 1u);
}

TEST(Fusion, MatmulIsOneKernel) {
  Tensor a = input({33, 17}, 1), b = input({17, 9}, 2);
  EXPECT_EQ(kernel_count(a.matmul(b)), 1u);
}

TEST(Fusion, MulAddSumIsOneKernel) {
  Tensor a = input({8, 100}, 1), b = input({8, 100}, 2), c = input({8, 100}, 3);
  EXPECT_EQ(kernel_count((a * b + c).sum({1})), 1u);
}

// A fused chain deeper than the scheduler builds in one kernel (1000 ops) is cut into kernels of 1000: 25000
// chained adds used to overflow the stack in the scheduler's recursive build. The sum is exact in float32.
TEST(Fusion, DeepChainIsCutIntoKernelsAndStaysRight) {
  Tensor t = Tensor::ones({4});
  for (int i = 0; i < 25000; ++i) t = t + 1.0;
  const size_t kernels = kernel_count(t);  // a cut every 1000 nodes deep (the adds and the few nodes of ones())
  EXPECT_GE(kernels, 25u);
  EXPECT_LE(kernels, 26u);
  for (float v : t.to_vector<float>()) EXPECT_EQ(v, 25001.0f);
  Tensor shallow = Tensor::ones({4});
  for (int i = 0; i < 900; ++i) shallow = shallow + 1.0;
  EXPECT_EQ(kernel_count(shallow), 1u);
}

TEST(Fusion, SoftmaxIsThreeKernels) {
  Tensor x = input({4, 50}, 1);
  EXPECT_EQ(kernel_count(x.softmax(-1)), 3u);  // max, sum of exp, normalize
}

TEST(Fusion, LayernormIsThreeKernels) {
  Tensor x = input({4, 50}, 1);
  Tensor xc = x - x.mean({-1}, true);
  Tensor y = xc * ((xc * xc).mean({-1}, true) + 1e-5).rsqrt();
  EXPECT_EQ(kernel_count(y), 3u);  // mean, variance, normalize
}

TEST(Fusion, MlpLayerIsOneKernelPerMatmul) {
  Tensor x = input({8, 16}, 1), w1 = input({16, 32}, 2), b1 = input({32}, 3), w2 = input({32, 4}, 4);
  EXPECT_EQ(kernel_count((x.matmul(w1) + b1).relu().matmul(w2)), 2u);  // bias+relu fuse into the 2nd matmul
}

// A keepdim reduce read twice by one op is realized into its own kernel once; the scheduler used to load it from
// itself while building it and recursed until the stack overflowed (found by tg-difftest).
TEST(Fusion, KeepdimReduceReadTwiceIsRealizedOnce) {
  std::vector<float> v = {1, -2, 3, 4, 5, -6};
  Tensor x = Tensor::from_vector(v, {2, 3});
  Tensor m = x.max({0}, true);
  EXPECT_EQ(kernel_count(m + m), 2u);
  EXPECT_EQ((m + m).to_vector<float>(), (std::vector<float>{8, 10, 6}));
  EXPECT_EQ((x.sum({1}, true) * x.sum({1}, true)).to_vector<float>(), (std::vector<float>{4, 9}));
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// Slots: a schedule names buffers by number - the graph's realized buffers first (input slots, in first-use order),
// then what its kernels write; a root already realized is its input slot. A copy of a graph that reads no buffer is
// computed where it is copied to (no copy item).
TEST(Slots, InputsFirstThenOutputsAndTemporaries) {
  const Tensor a = Tensor::arange(0, 8, 1, dtypes::float32).realize(),
               b = Tensor::arange(8, 16, 1, dtypes::float32).realize();
  const Tensor m = (a * b).max({0}, true);
  const std::vector<ir::UOpPtr> roots{(a + m).node(), (b - m).node(), a.node()};
  const sched::Schedule s = sched::create_schedule(roots, a.device());
  ASSERT_EQ(s.n_inputs(), 2u);
  const auto inputs = sched::input_buffers(roots);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].get(), a.node()->payload().get()) << "first use in toposort order";
  ASSERT_EQ(s.roots.size(), 3u);
  EXPECT_EQ(s.roots[2], 0) << "a realized root is its own input slot";
  for (int r : {s.roots[0], s.roots[1]})
    EXPECT_EQ(s.slots.at(static_cast<size_t>(r)).kind, sched::BufferSlot::Kind::OUTPUT);
  int temps = 0;
  for (const auto& slot : s.slots) temps += slot.kind == sched::BufferSlot::Kind::TEMP;
  EXPECT_EQ(temps, 1) << "the max, read by both outputs through a broadcast";
  // the max's kernel first: its output (1 float), then a and b (8 each), as codegen will see them
  ASSERT_EQ(s.items.size(), 3u);
  const std::vector<sched::BufferParam> want{{dtypes::float32, 1}, {dtypes::float32, 8}, {dtypes::float32, 8}};
  EXPECT_EQ(s.items[0].kernel.params, want);
  EXPECT_EQ(s.items[0].slots, (std::vector<int>{s.items[1].slots.at(2), 0, 1})) << "the temporary, then a, b";
}

TEST(Slots, ACopyOfAGraphWithoutBuffersIsComputedWhereItGoes) {
  auto on_interp = [] { return (Tensor::full({8}, 2.5, dtypes::float32, "INTERP") * 3.0f).to("CPU"); };
  const sched::Schedule s = sched::create_schedule({on_interp().node()}, "CPU");
  ASSERT_EQ(s.items.size(), 1u);
  EXPECT_EQ(s.items[0].kind, sched::ScheduleItem::Kind::KERNEL);
  for (const auto& slot : s.slots) EXPECT_EQ(slot.device, "CPU");
  EXPECT_EQ(on_interp().to_vector<float>(), std::vector<float>(8, 7.5f));
  // one that reads a buffer is copied
  const Tensor x = Tensor::full({8}, 2.5, dtypes::float32, "INTERP").contiguous().realize();
  const sched::Schedule c = sched::create_schedule({(x * 3.0f).to("CPU").node()}, "CPU");
  ASSERT_EQ(c.items.size(), 2u);
  EXPECT_EQ(c.items[1].kind, sched::ScheduleItem::Kind::COPY);
}

}  // namespace
}  // namespace tg
