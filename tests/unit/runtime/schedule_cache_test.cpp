// The schedule cache: a graph that differs only in its input buffers and bound values reuses its schedule from
// memory or from disk, with results checked against host loops; different graphs never share one; damaged disk
// entries are rebuilt; SCACHE=0 schedules every time.
#include "runtime/schedule_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "../random_floats.hpp"
#include "../runtime/fresh_cache_dir.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg::rt {
namespace {

namespace fs = std::filesystem;

const std::string kDir = test::fresh_cache_dir("scache");

std::vector<float> random_floats(size_t n, uint32_t seed) { return test::random_floats(n, seed, -4, 4); }

// (a*b + c).sum(1) over fresh tensors: the same graph every call, different buffers and data.
std::vector<float> fused(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c) {
  Tensor ta = Tensor::from_vector(a, {8, 16}), tb = Tensor::from_vector(b, {8, 16}),
         tc = Tensor::from_vector(c, {8, 16});
  return ((ta * tb + tc).sum({1}) * 0.5f).to_vector<float>();
}

void expect_fused(uint32_t seed) {
  auto a = random_floats(128, seed), b = random_floats(128, seed + 1), c = random_floats(128, seed + 2);
  auto got = fused(a, b, c);
  for (int r = 0; r < 8; ++r) {
    float want = 0;
    for (int j = 0; j < 16; ++j) want += a[r * 16 + j] * b[r * 16 + j] + c[r * 16 + j];
    ASSERT_NEAR(got[r], want * 0.5f, 1e-4f * (1 + std::abs(want))) << "row " << r << " (seed " << seed << ")";
  }
}

TEST(ScheduleCache, SameGraphNewBuffersHitsMemory) {
  uint32_t seed = std::random_device{}();
  std::cout << "seed=" << seed << "\n";
  expect_fused(seed);
  const ScheduleStats before = schedule_stats();
  expect_fused(seed + 10);
  expect_fused(seed + 20);
  const ScheduleStats& after = schedule_stats();
  EXPECT_EQ(after.schedules_computed, before.schedules_computed) << "a repeated graph was scheduled again";
  EXPECT_EQ(after.schedule_memory_hits, before.schedule_memory_hits + 2);
}

TEST(ScheduleCache, DifferentGraphsDoNotShareASchedule) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}),
         b = Tensor::from_vector(std::vector<float>{4, 5, 6}, {3});
  EXPECT_EQ((a + b).to_vector<float>(), std::vector<float>({5, 7, 9}));
  EXPECT_EQ((a * b).to_vector<float>(), std::vector<float>({4, 10, 18}));
  EXPECT_EQ((a - b).to_vector<float>(), std::vector<float>({-3, -3, -3}));
  // same ops, other shape or dtype: other schedules too
  Tensor c = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}),
         d = Tensor::from_vector(std::vector<float>{1, 1, 1, 1}, {4});
  EXPECT_EQ((c + d).to_vector<float>(), std::vector<float>({2, 3, 4, 5}));
  Tensor e = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3}, dtypes::int32);
  EXPECT_EQ((e + e).to_vector<int32_t>(), std::vector<int32_t>({2, 4, 6}));
  // the same buffer twice is a different graph from two buffers
  EXPECT_EQ((a + a).to_vector<float>(), std::vector<float>({2, 4, 6}));
}

// Roots whose buffer is not a fresh one: contiguous() of a realized tensor is that tensor's buffer, and the same
// node twice is one buffer. A hit must hand back those buffers, not fresh ones nothing writes.
TEST(ScheduleCache, RootsThatAreInputsOrRepeatedKeepTheirBuffers) {
  for (int i = 0; i < 3; ++i) {
    std::vector<float> v{1.0f + i, 2.0f, 3.0f};
    EXPECT_EQ(Tensor::from_vector(v, {3}).realize().contiguous().to_vector<float>(), v) << "call " << i;
    Tensor x = Tensor::from_vector(v, {3});
    Tensor a = x * 2.0f, b = a;
    Tensor::realize_all({&a, &b});
    EXPECT_EQ(b.to_vector<float>(), std::vector<float>({2.0f * (1 + i), 4.0f, 6.0f})) << "call " << i;
  }
}

TEST(ScheduleCache, BoundValuesComeFromTheNewGraph) {
  Variable start("start", 0, 6);
  std::vector<float> host(10);
  for (int i = 0; i < 10; ++i) host[i] = static_cast<float>(i * i);
  for (int64_t s : {0, 3, 6, 2}) {
    Tensor t = Tensor::from_vector(host, {10});
    auto got = (t.shrink(0, start.bind(s), 4) + 1.0f).to_vector<float>();
    for (int i = 0; i < 4; ++i) ASSERT_EQ(got[i], host[s + i] + 1.0f) << "start " << s << " element " << i;
  }
}

TEST(ScheduleCache, DiskTierSurvivesTheMemoryTier) {
  uint32_t seed = std::random_device{}();
  std::cout << "seed=" << seed << "\n";
  expect_fused(seed);
  clear_schedule_cache();
  const ScheduleStats before = schedule_stats();
  expect_fused(seed + 5);
  const ScheduleStats& after = schedule_stats();
  EXPECT_EQ(after.schedules_computed, before.schedules_computed);
  EXPECT_EQ(after.schedule_disk_hits, before.schedule_disk_hits + 1);
}

TEST(ScheduleCache, DamagedDiskEntriesAreRebuilt) {
  expect_fused(7);
  size_t damaged = 0;
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file() || e.path().string().find("schedules") == std::string::npos) continue;
    fs::resize_file(e.path(), fs::file_size(e.path()) / 2);  // truncated, as by a crash or a full disk
    ++damaged;
  }
  ASSERT_GT(damaged, 0u) << "no schedule entries under " << kDir;
  clear_schedule_cache();
  const ScheduleStats before = schedule_stats();
  expect_fused(8);
  EXPECT_EQ(schedule_stats().schedules_computed, before.schedules_computed + 1);
  EXPECT_EQ(schedule_stats().schedule_disk_hits, before.schedule_disk_hits);
  clear_schedule_cache();
  expect_fused(9);  // the rebuilt entry is good again
  EXPECT_EQ(schedule_stats().schedule_disk_hits, before.schedule_disk_hits + 1);
}

TEST(ScheduleCache, OffSchedulesEveryTime) {
  setenv("SCACHE", "0", 1);
  const ScheduleStats before = schedule_stats();
  expect_fused(1);
  expect_fused(2);
  EXPECT_EQ(schedule_stats().schedules_computed, before.schedules_computed + 2);
  unsetenv("SCACHE");
}

}  // namespace
}  // namespace tg::rt
