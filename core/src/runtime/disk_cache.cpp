// DiskCache: verified entries, atomic publication, and a single warning when the directory cannot be used.
#include "runtime/disk_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/env.hpp"

namespace tg::rt {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[4] = {'T', 'G', 'C', 'E'};

struct Header {
  char magic[4];
  uint32_t version;
  uint64_t key;
  uint64_t size;
  uint64_t checksum;
};

std::string default_dir() {
  if (const char* d = std::getenv("TG_CACHE_DIR")) return d;
  std::string home = getenv_str("HOME");
  return home.empty() ? std::string() : home + "/.cache/tg";
}

}  // namespace

uint64_t fnv1a(const void* data, size_t n, uint64_t h) {
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

DiskCache& DiskCache::get() {
  static auto* cache = new DiskCache(default_dir());
  return *cache;
}

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string probe = dir_ + "/.probe." + std::to_string(getpid());
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "tg: warning: cache directory %s is not writable (%s); compiling without a disk cache\n",
                 dir_.c_str(), std::strerror(errno));
    dir_.clear();
    return;
  }
  std::fclose(f);
  fs::remove(probe, ec);
}

std::string DiskCache::path(const std::string& table, uint64_t key) const {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(key));
  return dir_ + "/" + table + "/" + hex + ".bin";
}

std::optional<std::vector<uint8_t>> DiskCache::load(const std::string& table, uint64_t key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(path(table, key), std::ios::binary);
  if (!in) return std::nullopt;
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof(h))) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, 4) != 0 || h.version != kVersion || h.key != key || h.size > (uint64_t{1} << 32))
    return std::nullopt;
  std::vector<uint8_t> data(h.size);
  if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(h.size)))
    return std::nullopt;                                                    // truncated
  if (in.peek() != std::ifstream::traits_type::eof()) return std::nullopt;  // trailing garbage
  if (fnv1a(data.data(), data.size()) != h.checksum) return std::nullopt;
  return data;
}

void DiskCache::store(const std::string& table, uint64_t key, const std::vector<uint8_t>& data) const {
  if (!enabled()) return;
  std::string final_path = path(table, key);
  std::error_code ec;
  fs::create_directories(fs::path(final_path).parent_path(), ec);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = final_path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  Header h{};
  std::memcpy(h.magic, kMagic, 4);
  h.version = kVersion, h.key = key, h.size = data.size(), h.checksum = fnv1a(data.data(), data.size());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof(h));
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out.good()) {  // disk full, quota: the entry is simply not cached
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, final_path, ec);  // atomic: readers see the old entry or the new one, never a mix
  if (ec) fs::remove(tmp, ec);
}

}  // namespace tg::rt
