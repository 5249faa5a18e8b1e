// BEAM=n: each kernel's lowering choices are searched by timing, the program that runs computes what a host loop
// does, and the choice is kept in memory and on disk (a damaged entry is searched again, never trusted).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "fresh_cache_dir.hpp"
#include "runtime/program_cache.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

namespace fs = std::filesystem;

// TG_CACHE_DIR and BEAM are read when first needed: set them before anything runs.
const std::string kDir = [] {
  setenv("BEAM", "2", 1);
  return test::fresh_cache_dir("beam");
}();

void expect_matmul(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t m = 32, k = 48, n = 64;
  std::vector<float> a(m * k), b(k * n);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  auto got = Tensor::from_vector(a, {m, k}).matmul(Tensor::from_vector(b, {k, n})).to_vector<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += static_cast<double>(a[i * k + p]) * b[p * n + j];
      ASSERT_NEAR(got[i * n + j], want, 1e-4) << "C[" << i << "][" << j << "] (seed " << seed << ")";
    }
}

TEST(Beam, SearchesOnceThenRemembers) {
  uint32_t seed = std::random_device{}();
  std::cout << "seed=" << seed << "\n";
  const size_t before = schedule_stats().beam_searches;
  expect_matmul(seed);
  const size_t searched = schedule_stats().beam_searches;
  EXPECT_GT(searched, before) << "BEAM=2 searched nothing";
  expect_matmul(seed + 1);  // in memory
  EXPECT_EQ(schedule_stats().beam_searches, searched);
  rt::clear_program_cache();  // forgets programs and choices in memory: the disk has the choice
  expect_matmul(seed + 2);
  EXPECT_EQ(schedule_stats().beam_searches, searched);
}

TEST(Beam, DamagedChoicesAreSearchedAgain) {
  expect_matmul(5);
  size_t damaged = 0;
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file() || e.path().string().find("beam") == std::string::npos) continue;
    fs::resize_file(e.path(), fs::file_size(e.path()) - 3);
    ++damaged;
  }
  ASSERT_GT(damaged, 0u) << "no beam entries under " << kDir;
  rt::clear_program_cache();
  const size_t before = schedule_stats().beam_searches;
  expect_matmul(6);
  EXPECT_GT(schedule_stats().beam_searches, before);
}

}  // namespace
}  // namespace tg
