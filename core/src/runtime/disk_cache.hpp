// The on-disk cache under TG_CACHE_DIR (default ~/.cache/tg): compiled binaries keyed by content hashes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::rt {

// Entries are written to a temporary file and renamed into place, so processes sharing the directory never see a
// partial entry; every entry carries its key, size and checksum, and one that does not verify is ignored (and
// rewritten on the next store), never trusted. An unusable directory turns caching off with one warning.
class DiskCache {
 public:
  static DiskCache& get();
  explicit DiskCache(std::string dir);  // "" disables

  bool enabled() const { return !dir_.empty(); }
  std::optional<std::vector<uint8_t>> load(const std::string& table, uint64_t key) const;
  void store(const std::string& table, uint64_t key, const std::vector<uint8_t>& data) const;
  std::string path(const std::string& table, uint64_t key) const;

  static constexpr uint32_t kVersion = 1;  // bump when the entry format or the key derivation changes

 private:
  std::string dir_;
};

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull);

}  // namespace tg::rt
