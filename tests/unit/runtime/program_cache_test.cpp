// The program cache (runtime/program_cache.cpp): a kernel asked for twice in one batch compiles once, a later batch
// finds it in memory, a fresh process (the memory tier cleared) on disk; the stats count each tier. The kernel's
// constant comes from a printed seed, so no earlier run's disk entry can answer for it.
#include "runtime/program_cache.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "../planned_schedule.hpp"
#include "../runtime/fresh_cache_dir.hpp"
#include "codegen/lower.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

const std::string kDir = test::fresh_cache_dir("program-cache");

TEST(ProgramCache, MemoryThenDiskThenCompiledOncePerBatch) {
  const uint32_t seed = std::random_device{}();
  std::cout << "seed=" << seed << "\n";
  const float scale = 1.0f + static_cast<float>(seed % 100000) / 1e6f;
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}).realize();
  const codegen::PlannedSchedule planned({(x * scale).node()}, "CPU");
  Device& cpu = Device::get("CPU");
  const codegen::KirProgram kir = codegen::lower_kernel(planned.items().at(0).kernel, cpu.caps());
  auto batch = [&] { return std::vector<ProgramRequest>{{&cpu, kir, nullptr, {}}, {&cpu, kir, nullptr, {}}}; };
  const ScheduleStats before = schedule_stats();

  std::vector<ProgramRequest> first = batch();
  fetch_programs(first, 0);
  EXPECT_EQ(schedule_stats().programs_compiled - before.programs_compiled, 1u) << "one compile for the two requests";
  ASSERT_TRUE(first[0].program && first[1].program);
  EXPECT_EQ(first[0].program, first[1].program);
  EXPECT_FALSE(first[0].source.empty()) << "a miss is rendered";

  std::vector<ProgramRequest> second = batch();
  fetch_programs(second, 0);
  EXPECT_EQ(schedule_stats().cache_hits - before.cache_hits, 2u);
  EXPECT_EQ(second[0].program, first[0].program);

  clear_program_cache(&cpu);
  std::vector<ProgramRequest> third = batch();
  fetch_programs(third, 1);
  EXPECT_EQ(schedule_stats().disk_hits - before.disk_hits, 1u);
  EXPECT_EQ(schedule_stats().programs_compiled - before.programs_compiled, 1u) << "the disk answered: no compile";
  EXPECT_NE(third[0].program, first[0].program) << "a program loaded afresh";
  EXPECT_EQ(third[0].program, third[1].program);
}

}  // namespace
}  // namespace tg::rt
