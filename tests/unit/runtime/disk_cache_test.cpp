// The disk cache: verified round trips, damaged entries ignored and rebuilt, concurrent writers, an unusable
// directory, and the executor skipping the compiler when a binary is on disk.
#include "runtime/disk_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fresh_cache_dir.hpp"
#include "runtime/program_cache.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

namespace fs = std::filesystem;

const std::string kDir = test::fresh_cache_dir("cache");

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST(DiskCache, RoundTrip) {
  DiskCache c(kDir + "/unit");
  ASSERT_TRUE(c.enabled());
  EXPECT_FALSE(c.load("t", 42).has_value());
  c.store("t", 42, bytes(1000, 3));
  EXPECT_EQ(c.load("t", 42), bytes(1000, 3));
  c.store("t", 43, {});
  EXPECT_EQ(c.load("t", 43), std::vector<uint8_t>{});
}

TEST(DiskCache, DamagedEntriesAreIgnoredAndRebuilt) {
  DiskCache c(kDir + "/damage");
  auto write_raw = [&](uint64_t key, const std::function<void(std::string&)>& damage) {
    c.store("t", key, bytes(256, 1));
    std::ifstream in(c.path("t", key), std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    damage(s);
    std::ofstream(c.path("t", key), std::ios::binary | std::ios::trunc) << s;
  };
  write_raw(1, [](std::string& s) { s[s.size() - 5] ^= 0x40; });  // flipped payload bit: checksum
  write_raw(2, [](std::string& s) { s.resize(s.size() - 10); });  // truncated
  write_raw(3, [](std::string& s) { s += "junk"; });              // trailing garbage
  write_raw(4, [](std::string& s) { s[0] = 'X'; });               // bad magic
  write_raw(5, [](std::string& s) { s.clear(); });                // empty file
  for (uint64_t k = 1; k <= 5; ++k) {
    EXPECT_FALSE(c.load("t", k).has_value()) << "key " << k;
    c.store("t", k, bytes(64, 9));
    EXPECT_EQ(c.load("t", k), bytes(64, 9)) << "key " << k;
  }
  // an entry renamed to another key's file is not that key's entry
  fs::copy_file(c.path("t", 1), c.path("t", 77), fs::copy_options::overwrite_existing);
  EXPECT_FALSE(c.load("t", 77).has_value());
}

TEST(DiskCache, ConcurrentWritersNeverLeaveAPartialEntry) {
  DiskCache c(kDir + "/race");
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        c.store("t", 7, bytes(4096, static_cast<uint8_t>(t)));
        auto got = c.load("t", 7);
        ASSERT_TRUE(got.has_value());
        bool valid = false;
        for (int s = 0; s < 4; ++s) valid |= *got == bytes(4096, static_cast<uint8_t>(s));
        ASSERT_TRUE(valid);
      }
    });
  for (auto& t : ts) t.join();
}

TEST(DiskCache, UnwritableDirectoryTurnsCachingOff) {
  std::string file = kDir + "/not-a-dir";
  fs::create_directories(kDir);
  std::ofstream(file) << "x";
  DiskCache c(file + "/sub");  // a directory below a regular file cannot exist
  EXPECT_FALSE(c.enabled());
  c.store("t", 1, bytes(8, 0));  // no-op, no crash
  EXPECT_FALSE(c.load("t", 1).has_value());
}

TEST(DiskCache, WarmCacheSkipsTheCompiler) {
  auto run = [] {
    Tensor x = Tensor::arange(0, 64, 1, dtypes::float32);
    return ((x * 3.25 + 1.5).sqrt() * x).sum().item<float>();  // a kernel no other test builds
  };
  float cold = run();
  clear_program_cache();
  size_t compiled = schedule_stats().programs_compiled, hits = schedule_stats().disk_hits;
  float warm = run();
  EXPECT_EQ(cold, warm);
  EXPECT_EQ(schedule_stats().programs_compiled, compiled) << "every binary should have come from the disk cache";
  EXPECT_GT(schedule_stats().disk_hits, hits);
}

}  // namespace
}  // namespace tg::rt
