// One kernel launch on the mock DSP: the program runs under qemu-hexagon, which gets the kernel's buffers and
// scalars on stdin and hands back the buffers it may have stored to on stdout (the protocol is described at the
// top of runtime/dsp_runtime.c; the structs below mirror it).
//
// Buffers are sent per allocation ("region"): every buffer parameter in the same allocation becomes an offset into
// one region, so parameters that alias (a kernel reading and writing one buffer through two views) see each
// other's stores, as they would on a device. A region starts at its lowest parameter address (rounded down to 128
// bytes, but not below the allocation) and runs to the allocation's end; the guest places it at the same address
// modulo 128 (HVX's alignment). Only regions a writable parameter points into come back.
#include "dsp_plugin.hpp"
#include "subprocess.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tg::dsp {

using sdk::cat;
using sdk::Error;

namespace {

constexpr uint32_t kMagic = 0x53445447u, kDone = 0x4b4f4754u;

struct Header {
  uint32_t magic, nregions, nbuffers, args_size;
  uint64_t count;
};
struct RegionDesc {
  uint32_t size, writable, skew, reserved;
};
struct BufferSlot {
  uint32_t arg_offset, region, offset, reserved;
};
static_assert(sizeof(Header) == 24 && sizeof(RegionDesc) == 16 && sizeof(BufferSlot) == 16);

struct Region {
  uint64_t alloc_base, alloc_size;  // the allocation
  uint64_t start;                   // host address of the region's first byte
  bool writable;
};

constexpr uint64_t kRegionAlign = 128;

}  // namespace

void launch(Device& device, const Program& program, const unsigned char* args, uint64_t count) {
  if (count == 0) return;
  const std::string& name = program.kernel_name;
  std::vector<Region> regions;
  std::vector<BufferSlot> slots;
  std::vector<uint64_t> addrs;
  const std::vector<tg_kir_param>& params = program.signature.params();
  const std::vector<size_t>& offsets = program.signature.offsets();
  for (size_t p = 0; p < params.size(); ++p) {
    const tg_kir_param& param = params[p];
    if (param.kind != TG_PARAM_BUFFER) continue;
    uint64_t addr = 0;
    std::memcpy(&addr, args + offsets[p], sizeof addr);
    uint64_t base = 0, size = 0;
    if (!Allocations::get().find(addr, &base, &size))
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", name, ": buffer parameter ", p, " (",
                                               *param.name ? std::string(param.name) : cat("param", p), ") at 0x",
                                               std::hex, addr, std::dec, " is not DSP memory"));
    size_t r = 0;
    while (r < regions.size() && regions[r].alloc_base != base) ++r;
    const uint64_t start = std::max(base, addr / kRegionAlign * kRegionAlign);
    if (r == regions.size()) regions.push_back({base, size, start, false});
    regions[r].start = std::min(regions[r].start, start);
    regions[r].writable |= param.writable != 0;
    slots.push_back({static_cast<uint32_t>(offsets[p]), static_cast<uint32_t>(r), 0, 0});
    addrs.push_back(addr);
  }
  for (size_t b = 0; b < slots.size(); ++b)
    slots[b].offset = static_cast<uint32_t>(addrs[b] - regions[slots[b].region].start);

  const Header header{kMagic, static_cast<uint32_t>(regions.size()), static_cast<uint32_t>(slots.size()),
                      static_cast<uint32_t>(program.args_size), count};
  std::vector<RegionDesc> descs;
  std::vector<InputChunk> input{{&header, sizeof header}};
  uint32_t done = 0;
  std::vector<OutputChunk> output{{&done, sizeof done}};
  for (const Region& r : regions) {
    const uint64_t size = r.alloc_base + r.alloc_size - r.start;
    descs.push_back(
        {static_cast<uint32_t>(size), r.writable ? 1u : 0u, static_cast<uint32_t>(r.start % kRegionAlign), 0});
  }
  input.push_back({descs.data(), descs.size() * sizeof(RegionDesc)});
  input.push_back({slots.data(), slots.size() * sizeof(BufferSlot)});
  input.push_back({args, program.args_size});
  size_t expected = sizeof done;
  for (size_t r = 0; r < regions.size(); ++r) {
    void* at = reinterpret_cast<void*>(regions[r].start);
    input.push_back({at, descs[r].size});
    if (regions[r].writable) output.push_back({at, descs[r].size}), expected += descs[r].size;
  }

  // the program's memfd, through this process's /proc entry (qemu runs as its child, which may read it)
  const std::string path = cat("/proc/", ::getpid(), "/fd/", program.fd);
  const ProcessResult run = run_process({device.qemu, path}, input, output, device.timeout_s);
  const std::string where = cat("kernel ", name, " under ", device.qemu);
  const std::string said = tail_lines(run.stderr_text, 3);
  if (run.timed_out)
    throw Error(TG_ERR_UNAVAILABLE, cat(where, ": did not finish within ", device.timeout_s,
                                        " s and was killed (DSP_TIMEOUT_S sets the limit)"));
  if (!run.succeeded())
    throw Error(TG_ERR_INTERNAL, cat(where, ": the kernel program ", run.describe(), said.empty() ? "" : ": ", said));
  if (run.stdout_bytes != expected || done != kDone || !run.extra_stdout.empty())
    throw Error(TG_ERR_INTERNAL, cat(where, ": the kernel program wrote ", run.stdout_bytes + run.extra_stdout.size(),
                                     " bytes back, expected ", expected, said.empty() ? "" : ": ", said));
}

}  // namespace tg::dsp
