// The memory planner: input slots are the caller's buffers, outputs are fresh, and a temporary reuses the buffer of
// one whose last use came before its first, never one still read by the same item, and only of the same device,
// dtype and length. Checked on hand-made schedules (hand-derived sharing) and on a scheduled chain run end to end
// against float64.
#include "runtime/memory_plan.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "runtime/executor.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

using sched::BufferSlot;
using Kind = BufferSlot::Kind;

sched::ScheduleItem kernel_item(std::vector<int> slots) {
  sched::ScheduleItem it;
  it.slots = std::move(slots);
  return it;
}

std::shared_ptr<ir::Payload> cpu_buffer(DType d, int64_t n) {
  return std::make_shared<Buffer>(Device::get("CPU"), d, n);
}

TEST(MemoryPlan, TemporariesShareOnlyWhenTheirLifetimesDoNotOverlap) {
  const DType f32 = dtypes::float32;
  sched::Schedule s;
  s.slots = {{Kind::INPUT, f32, 16, "CPU"},          {Kind::TEMP, f32, 16, "CPU"},
             {Kind::TEMP, f32, 16, "CPU"},           {Kind::TEMP, f32, 16, "CPU"},
             {Kind::TEMP, dtypes::int32, 16, "CPU"}, {Kind::OUTPUT, f32, 16, "CPU"},
             {Kind::TEMP, f32, 32, "CPU"},           {Kind::TEMP, f32, 16, "CPU"}};
  // k0 writes 1 from the input; k1 writes 2 from 1 (1's last use); k2 writes 3 from 2: 3 may take 1's buffer;
  // k3 writes 4 (another dtype) from 3; k4 writes 6 (another length) from 4; k5 writes 7 from 6 and 2 is dead since
  // k2, so 7 takes 2's; k6 writes the output from 7 and 3.
  s.items = {kernel_item({1, 0}), kernel_item({2, 1}), kernel_item({3, 2}),   kernel_item({4, 3}),
             kernel_item({6, 4}), kernel_item({7, 6}), kernel_item({5, 7, 3})};
  s.roots = {5};
  const auto input = cpu_buffer(f32, 16);
  const auto b = plan_memory(s, {input});
  ASSERT_EQ(b.size(), s.slots.size());
  EXPECT_EQ(b[0].get(), input.get()) << "the input slot is the caller's buffer";
  EXPECT_EQ(b[3], b[1]) << "3 is first written after 1's last read";
  EXPECT_EQ(b[7], b[2]) << "7 is first written after 2's last read";
  EXPECT_NE(b[2], b[1]) << "k1 reads 1 while it writes 2";
  for (int k : {4, 6})
    EXPECT_EQ(b[static_cast<size_t>(k)].use_count(), 1) << "slot " << k << " has a shape no other has";
  std::set<Buffer*> temps;
  for (int k : {1, 2, 4, 6}) temps.insert(b[static_cast<size_t>(k)].get());
  EXPECT_EQ(temps.size(), 4u);
  EXPECT_FALSE(temps.count(b[5].get())) << "an output is never shared";
  for (size_t k = 1; k < b.size(); ++k) {
    EXPECT_EQ(b[k]->dtype(), s.slots[k].dtype) << k;
    EXPECT_EQ(b[k]->numel(), s.slots[k].numel) << k;
  }
}

TEST(MemoryPlan, AnOutputIsNeverReusedAndAWrongInputCountIsAnError) {
  const DType f32 = dtypes::float32;
  sched::Schedule s;
  s.slots = {{Kind::INPUT, f32, 8, "CPU"}, {Kind::OUTPUT, f32, 8, "CPU"}, {Kind::TEMP, f32, 8, "CPU"}};
  s.items = {kernel_item({1, 0}), kernel_item({2, 0})};
  s.roots = {1};
  const auto b = plan_memory(s, {cpu_buffer(f32, 8)});
  EXPECT_NE(b[2], b[1]) << "the output outlives the schedule";
  EXPECT_THROW(plan_memory(s, {}), std::logic_error);
}

// A copy reads a CPU temporary into an INTERP one: the CPU temporary is free after the copy (a later CPU one of its
// shape takes it), and no buffer is shared across devices even where dtype and length agree.
TEST(MemoryPlan, CopiesAndDevices) {
  const DType f32 = dtypes::float32;
  sched::Schedule s;
  s.slots = {{Kind::INPUT, f32, 16, "CPU"},     {Kind::TEMP, f32, 16, "CPU"}, {Kind::TEMP, f32, 16, "INTERP"},
             {Kind::OUTPUT, f32, 16, "INTERP"}, {Kind::TEMP, f32, 16, "CPU"}, {Kind::TEMP, f32, 16, "INTERP"}};
  sched::ScheduleItem copy;
  copy.kind = sched::ScheduleItem::Kind::COPY;
  copy.slots = {2, 1};
  // k0 (CPU) writes 1; the copy moves it into 2 (INTERP); k1 (INTERP) writes 5 from 2; k2 (CPU) writes 4 from the
  // input: 4 may take 1's buffer; k3 (INTERP) writes the output 3 from 5
  s.items = {kernel_item({1, 0}), copy, kernel_item({5, 2}), kernel_item({4, 0}), kernel_item({3, 5})};
  s.roots = {3};
  const auto b = plan_memory(s, {cpu_buffer(f32, 16)});
  EXPECT_EQ(b[4], b[1]) << "the copy was 1's last use";
  EXPECT_NE(b[5], b[2]) << "k1 reads 2 while it writes 5";
  for (size_t k = 1; k < b.size(); ++k) EXPECT_EQ(b[k]->device().name(), s.slots[k].device) << k;
}

// ((x * 2) + 1) * 3 - 1 with every step realized on its own: the third step's buffer is the first's.
TEST(MemoryPlan, AChainOfRealizedStepsRunsRightInTwoTemporaries) {
  std::vector<float> xs(64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) * 0.25f - 5;
  const Tensor x = Tensor::from_vector(xs, {8, 8}).realize();
  const Tensor a = (x * 2).contiguous(), b = (a + 1).contiguous(), c = (b * 3).contiguous(), y = c - 1;
  const std::vector<ir::UOpPtr> roots{y.node()};
  const sched::Schedule s = sched::create_schedule(roots, "CPU");
  ASSERT_EQ(s.items.size(), 4u);
  const auto bufs = plan_memory(s, sched::input_buffers(roots));
  auto out_slot = [&](size_t item) { return bufs.at(static_cast<size_t>(s.items[item].slots[0])); };
  EXPECT_EQ(out_slot(2), out_slot(0)) << "c takes a's buffer (a's last reader is b's kernel)";
  EXPECT_NE(out_slot(1), out_slot(0));
  run_schedule(s, bufs);
  std::vector<float> got(xs.size());
  bufs.at(static_cast<size_t>(s.roots[0]))->copy_out(got.data(), got.size() * sizeof(float));
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = (static_cast<double>(xs[i]) * 2 + 1) * 3 - 1;
    ASSERT_EQ(got[i], static_cast<float>(want)) << i;  // exact: every step is exact in float32 here
  }
}

}  // namespace
}  // namespace tg::rt
