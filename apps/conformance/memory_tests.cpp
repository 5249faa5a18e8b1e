// The allocation battery: copy round trips of 1 byte, odd sizes and 0 bytes, partial copies at offsets, a large
// allocation where the device has the memory, out-of-memory and out-of-bounds copies returning statuses.
#include "harness.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace tg::conformance {
namespace {

// Bytes that differ at every position and between calls, so a shifted or stale copy shows.
std::vector<unsigned char> pattern(uint64_t size, uint32_t seed) {
  std::vector<unsigned char> out(size);
  uint32_t x = seed * 2654435761u + 1;
  for (unsigned char& b : out) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b = static_cast<unsigned char>(x);
  }
  return out;
}

// The first byte where `got` differs from `want`, described for a failure message.
std::string first_difference(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want) {
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    if (got[i] != want[i]) return cat("byte ", i, " is 0x", std::hex, +got[i], ", expected 0x", +want[i]);
  return "";
}

void round_trip(uint64_t size, uint32_t seed) {
  const std::vector<unsigned char> data = pattern(size, seed);
  Buffer buffer(size);
  expect(buffer.desc().size == size,
         cat("allocator_alloc(", size, ") returned a buffer whose size field is ", buffer.desc().size));
  const tg_plugin_api& a = api();
  TGC_OK(a.allocator_copy_in(session().device, &buffer.desc(), 0, data.data(), size));
  std::vector<unsigned char> back(size + 1, 0xEE);  // one guard byte: copy_out must not write past `size`
  TGC_OK(a.allocator_copy_out(session().device, back.data(), &buffer.desc(), 0, size));
  expect(back[size] == 0xEE, cat("allocator_copy_out(size ", size, ") wrote past the end of the host buffer"));
  back.resize(size);
  const std::string diff = first_difference(back, data);
  expect(diff.empty(),
         cat("allocator_copy_in then allocator_copy_out of ", size, size == 1 ? " byte: " : " bytes: ", diff));
}

void one_byte() { round_trip(1, 1); }

void odd_sizes() {
  for (uint64_t size : {3u, 7u, 63u, 65u, 4097u, 1000003u}) round_trip(size, static_cast<uint32_t>(size));
}

void zero_bytes() {
  const tg_plugin_api& a = api();
  Buffer empty(0);
  unsigned char byte = 0x5A;
  TGC_OK(a.allocator_copy_in(session().device, &empty.desc(), 0, &byte, 0));
  TGC_OK(a.allocator_copy_out(session().device, &byte, &empty.desc(), 0, 0));
  expect(byte == 0x5A, "allocator_copy_out of 0 bytes changed the host buffer");
  // Two empty buffers are still two buffers: freeing both must be fine (the destructors do it).
  Buffer another(0);
}

// Copies into and out of the middle of a buffer touch exactly the bytes asked for.
void partial_copies_at_offsets() {
  const tg_plugin_api& a = api();
  const uint64_t size = 1000;
  std::vector<unsigned char> want = pattern(size, 7);
  Buffer buffer(want);
  const std::vector<unsigned char> patch = pattern(37, 8);
  TGC_OK(a.allocator_copy_in(session().device, &buffer.desc(), 501, patch.data(), patch.size()));
  std::memcpy(want.data() + 501, patch.data(), patch.size());
  std::string diff = first_difference(buffer.read(), want);
  expect(diff.empty(), "allocator_copy_in(offset 501, 37 bytes) then reading the whole buffer: " + diff);
  std::vector<unsigned char> middle(11);
  TGC_OK(a.allocator_copy_out(session().device, middle.data(), &buffer.desc(), 999 - 11 + 1, 11));
  diff = first_difference(middle, std::vector<unsigned char>(want.end() - 11, want.end()));
  expect(diff.empty(), "allocator_copy_out(offset 989, the last 11 bytes): " + diff);
}

void buffers_do_not_alias() {
  const std::vector<unsigned char> x = pattern(4096, 11), y = pattern(4096, 12);
  Buffer bx(x), by(y);
  expect(bx.addr() != by.addr() || bx.desc().handle != by.desc().handle,
         "two live allocations returned the same address and handle");
  expect(first_difference(bx.read(), x).empty() && first_difference(by.read(), y).empty(),
         "writing one buffer changed another: allocations overlap");
}

// >= 1 GiB where the device has room for it (a quarter of its memory, so a shared machine is not starved).
void large_allocation() {
  const uint64_t size = uint64_t{1} << 30;
  const Session& s = session();
  if (s.info.memory_bytes != 0 && s.info.memory_bytes / 4 < size)
    throw Skip(cat("the device reports ", s.info.memory_bytes >> 20, " MiB; a 1 GiB allocation needs 4 GiB"));
  const tg_plugin_api& a = api();
  Buffer big(size);
  // Write and read back chunks at the start, in the middle, across the 2^29 boundary and at the very end.
  for (uint64_t offset : {uint64_t{0}, (uint64_t{1} << 29) - 100, size / 2 + 12345, size - 4096}) {
    const std::vector<unsigned char> chunk = pattern(4096, static_cast<uint32_t>(offset));
    TGC_OK(a.allocator_copy_in(s.device, &big.desc(), offset, chunk.data(), chunk.size()));
    std::vector<unsigned char> back(chunk.size());
    TGC_OK(a.allocator_copy_out(s.device, back.data(), &big.desc(), offset, back.size()));
    const std::string diff = first_difference(back, chunk);
    expect(diff.empty(), cat("1 GiB buffer, 4096 bytes at offset ", offset, ": ", diff));
  }
}

void out_of_memory_is_a_status() {
  const tg_plugin_api& a = api();
  for (uint64_t size : {uint64_t{1} << 62, UINT64_MAX - 4095}) {
    tg_buffer_desc b{};
    const Status s = TGC_STATUS(a.allocator_alloc(session().device, size, &b));
    if (s.ok()) a.allocator_free(session().device, &b);
    expect(!s.ok(), cat("allocator_alloc(", size, " bytes) succeeded; no device has that much memory"));
    expect(s.code == TG_ERR_OUT_OF_MEMORY, cat("allocator_alloc(", size, " bytes) failed with ", code_name(s.code),
                                               " (", s.message, "); expected TG_ERR_OUT_OF_MEMORY"));
    expect(!s.message.empty(), cat("allocator_alloc(", size, " bytes) failed with an empty message"));
  }
}

// Every out-of-range copy is refused with TG_ERR_INVALID_ARGUMENT and leaves the buffer as it was.
void out_of_bounds_copies_are_refused() {
  const tg_plugin_api& a = api();
  const tg_device device = session().device;
  const std::vector<unsigned char> want = pattern(64, 21);
  Buffer buffer(want), empty(0);
  std::vector<unsigned char> host(128, 0);
  struct Case {
    const char* what;
    Status status;
  };
  const Case cases[] = {
      {"allocator_copy_in(64-byte buffer, offset 60, 8 bytes)",
       TGC_STATUS(a.allocator_copy_in(device, &buffer.desc(), 60, host.data(), 8))},
      {"allocator_copy_in(64-byte buffer, offset 0, 65 bytes)",
       TGC_STATUS(a.allocator_copy_in(device, &buffer.desc(), 0, host.data(), 65))},
      {"allocator_copy_in(64-byte buffer, offset 65, 0 bytes)",
       TGC_STATUS(a.allocator_copy_in(device, &buffer.desc(), 65, host.data(), 0))},
      {"allocator_copy_out(64-byte buffer, offset UINT64_MAX, 8 bytes) (offset + size overflows)",
       TGC_STATUS(a.allocator_copy_out(device, host.data(), &buffer.desc(), UINT64_MAX, 8))},
      {"allocator_copy_out(64-byte buffer, offset 8, UINT64_MAX bytes)",
       TGC_STATUS(a.allocator_copy_out(device, host.data(), &buffer.desc(), 8, UINT64_MAX))},
      {"allocator_copy_out(0-byte buffer, offset 0, 1 byte)",
       TGC_STATUS(a.allocator_copy_out(device, host.data(), &empty.desc(), 0, 1))},
  };
  for (const Case& c : cases)
    expect(c.status.code == TG_ERR_INVALID_ARGUMENT,
           cat(c.what, " returned ", code_name(c.status.code), c.status.message.empty() ? "" : ": ", c.status.message,
               "; expected TG_ERR_INVALID_ARGUMENT"));
  const std::string diff = first_difference(buffer.read(), want);
  expect(diff.empty(), "a refused copy_in still changed the buffer: " + diff);
}

}  // namespace

void add_memory_tests(Tests& tests) {
  tests.push_back({"memory.round_trip_1_byte", Tier::Core, one_byte});
  tests.push_back({"memory.round_trip_odd_sizes", Tier::Core, odd_sizes});
  tests.push_back({"memory.zero_bytes", Tier::Core, zero_bytes});
  tests.push_back({"memory.partial_copies_at_offsets", Tier::Core, partial_copies_at_offsets});
  tests.push_back({"memory.buffers_do_not_alias", Tier::Core, buffers_do_not_alias});
  tests.push_back({"memory.large_allocation", Tier::Core, large_allocation});
  tests.push_back({"memory.out_of_memory_is_a_status", Tier::Core, out_of_memory_is_a_status});
  tests.push_back({"memory.out_of_bounds_copies_are_refused", Tier::Core, out_of_bounds_copies_are_refused});
}

}  // namespace tg::conformance
