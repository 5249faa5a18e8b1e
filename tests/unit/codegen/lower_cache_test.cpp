// Mirrors core/src/codegen/lower_cache.cpp. A hit is made observable through the cache key's one assumption: a
// device name stands for its caps, so a second lowering under the same name with *different* caps returns the first
// program when it hits, and a program for the new caps when it misses. Here the caps differ in RECIP: with it the
// KIR holds a RECIP instruction, without it a division (FDIV).
#include "codegen/lower_cache.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/device.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

bool has_recip(const KirProgram& k) {
  return std::any_of(k.insts.begin(), k.insts.end(), [](const tg_kir_inst& in) { return in.op == TG_KIR_RECIP; });
}
bool has_vector(const KirProgram& k) {
  return std::any_of(k.insts.begin(), k.insts.end(), [](const tg_kir_inst& in) { return in.vcount > 1; });
}

class LowerCache : public testing::Test {
 protected:
  void SetUp() override {
    clear_lower_cache();
    std::vector<float> xs(1024);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) / 64 - 8;
    Tensor t = Tensor::from_vector(xs, {1024}).reciprocal();
    items_ = sched::create_schedule({t.node()}, t.device()).items;
    ASSERT_EQ(items_.size(), 1u);
    with_recip_ = rt::Device::get(t.device()).caps();
    without_recip_ = with_recip_;
    for (auto& m : without_recip_.ops) m &= ~(1ull << TG_KIR_RECIP);
    ASSERT_TRUE(has_recip(lower_kernel(kernel(), with_recip_))) << "the CPU renderer takes RECIP: the test needs it";
    ASSERT_FALSE(has_recip(lower_kernel(kernel(), without_recip_)));
  }
  void TearDown() override { clear_lower_cache(); }

  const sched::Kernel& kernel() const { return items_[0].kernel; }
  // Lowers under `device` with the caps that lack RECIP: RECIP in the result means an entry made earlier with the
  // other caps was returned (a hit); none means it was lowered now (a miss).
  bool hits(const std::string& device, const LowerOpts& opts = {}) {
    return has_recip(lower_kernel_cached(kernel(), without_recip_, device, opts));
  }
  void fill(const std::string& device, const LowerOpts& opts = {}) {
    ASSERT_TRUE(has_recip(lower_kernel_cached(kernel(), with_recip_, device, opts)));
  }

  std::vector<sched::ScheduleItem> items_;
  tg_renderer_caps with_recip_{}, without_recip_{};
};

TEST_F(LowerCache, SameKernelTwiceIsAHitWithTheSameProgram) {
  KirProgram first = lower_kernel_cached(kernel(), with_recip_, "A");
  KirProgram second = lower_kernel_cached(kernel(), with_recip_, "A");
  EXPECT_EQ(first.hash(), second.hash());
  EXPECT_EQ(first.dump(), second.dump());
  EXPECT_EQ(first.dims.global[0], second.dims.global[0]);
  EXPECT_EQ(first.hash(), lower_kernel(kernel(), with_recip_).hash()) << "the cache returns what lowering makes";
  EXPECT_TRUE(hits("A"));
}

TEST_F(LowerCache, ClearForgetsOnlyThatDevice) {
  fill("A");
  fill("B");
  fill("AB");  // a device whose name starts with another's
  clear_lower_cache("A");
  EXPECT_FALSE(hits("A")) << "A was cleared";
  EXPECT_TRUE(hits("B")) << "clearing A forgot B";
  EXPECT_TRUE(hits("AB")) << "clearing A forgot AB";
  clear_lower_cache();
  EXPECT_FALSE(hits("B")) << "clear_lower_cache() forgets every device";
  EXPECT_FALSE(hits("AB"));
}

TEST_F(LowerCache, MissIsStoredForTheNextCall) {
  EXPECT_FALSE(hits("C"));
  // the miss above stored the RECIP-free program: now even the caps with RECIP get it back
  EXPECT_FALSE(has_recip(lower_kernel_cached(kernel(), with_recip_, "C")));
}

TEST_F(LowerCache, OptionsArePartOfTheKey) {
  fill("D");
  EXPECT_TRUE(hits("D", LowerOpts{})) << "the same options hit";
  EXPECT_FALSE(hits("D", plain_loops())) << "an explicit action list is a different entry";
  EXPECT_FALSE(hits("D", LowerOpts{Opts{{OptOp::UPCAST, 0, 4}}, {}})) << "another action list is another entry";
  EXPECT_FALSE(hits("D", LowerOpts{.switches = {.images = true}}));
  EXPECT_FALSE(hits("D", LowerOpts{.switches = {.tensor_cores = false}}));
  EXPECT_FALSE(hits("D", LowerOpts{.switches = {.check_ir = true}}));
  // and each of those entries is now there
  EXPECT_FALSE(hits("D", plain_loops())) << "the entry stored for plain_loops() was lowered without RECIP";
  fill("E", plain_loops());
  EXPECT_TRUE(hits("E", plain_loops()));
}

TEST_F(LowerCache, DifferentActionsGiveDifferentPrograms) {
  KirProgram heuristic = lower_kernel_cached(kernel(), with_recip_, "F");
  KirProgram plain = lower_kernel_cached(kernel(), with_recip_, "F", plain_loops());
  EXPECT_TRUE(has_vector(heuristic)) << "the heuristic upcasts a 1024-element elementwise kernel";
  EXPECT_FALSE(has_vector(plain)) << "the plain loop nest has no vectors";
  EXPECT_NE(heuristic.hash(), plain.hash());
  EXPECT_EQ(lower_kernel_cached(kernel(), with_recip_, "F", plain_loops()).hash(), plain.hash());
}

TEST_F(LowerCache, BufferSizesArePartOfTheKey) {
  fill("G");
  // the same kernel graph over larger buffers is another entry
  sched::Kernel larger = kernel();
  for (auto& b : larger.params) b.numel *= 2;
  EXPECT_FALSE(has_recip(lower_kernel_cached(larger, without_recip_, "G")));
  EXPECT_TRUE(hits("G")) << "the original entry is still there";
}

}  // namespace
}  // namespace tg::codegen
