// The CPU plugin's HWQueue: the SDK's host queue (tg/sdk/host_queue.hpp: commands recorded, then run in order on the
// submitting thread), whose exec command splits a kernel's work-items across the device's oneTBB arena.
#include "cpu_plugin.hpp"

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include <algorithm>

namespace tg::cpu {

void run_kernel(Device& device, KernelFn fn, const unsigned char* args, uint64_t count) {
  const uint64_t chunks = std::min<uint64_t>(count, device.threads);
  if (chunks <= 1) {
    if (count != 0) fn(args, 0, static_cast<long long>(count));
    return;
  }
  // One contiguous [start, end) per thread: each core streams its own slice of every buffer.
  device.arena->execute([&] {
    tbb::parallel_for(
        uint64_t{0}, chunks,
        [&](uint64_t c) {
          fn(args, static_cast<long long>(count * c / chunks), static_cast<long long>(count * (c + 1) / chunks));
        },
        tbb::static_partitioner());
  });
}

void QueueHooks::run(Device& device, const Program& program, const unsigned char* args, uint64_t count) {
  run_kernel(device, program.fn, args, count);
}

}  // namespace tg::cpu
