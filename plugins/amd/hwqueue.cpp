// The AMD plugin's HWQueue: tg::sdk::DeviceQueue (recorded commands issued in order on one HIP stream at submit,
// signals and timestamps as HIP events) over a HIP backend; the slots are the SDK's DeviceQueueSlots. A launch
// passes the packed argument blob as it is (HIP_LAUNCH_PARAM_BUFFER_POINTER): the kernel's kernarg segment has the
// same layout.
#include "amd_plugin.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace tg::amd {

using sdk::cat;
using sdk::Error;

namespace {
constexpr uint32_t kBlock = 256;  // work-items per group when the core leaves the local size to the plugin
}  // namespace

struct EventRelease {
  void operator()(hipEvent_t event) const { hip().hipEventDestroy(event); }
};

struct QueueBackend {
  using Program = std::shared_ptr<amd::Program>;
  using Event = std::unique_ptr<std::remove_pointer_t<hipEvent_t>, EventRelease>;
  static constexpr std::string_view plugin = "amd";
  std::shared_ptr<Device> device;
  hipStream_t stream = nullptr;

  static QueueBackend open(tg_device device) {
    std::shared_ptr<Device> dev = device_of(device);
    dev->bind();
    hipStream_t stream = nullptr;
    check_hip(hip().hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    return QueueBackend{std::move(dev), stream};
  }

  static bool launch_shape(const Program& program, const tg_launch_dims& dims, uint32_t grid[3], uint32_t block[3]) {
    const bool runs = sdk::gpu_launch_shape(dims, kBlock, grid, block);
    if (uint64_t{block[0]} * block[1] * block[2] > 1024)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", program->kernel_name, ": work-groups of ", block[0], "x", block[1], "x", block[2],
                      " exceed the 1024 work-items an AMD work-group has"));
    for (int d = 0; d < 3; ++d)  // HSA's dispatch packet counts work-items per dim in 32 bits
      if (runs && uint64_t{grid[d]} * block[d] > UINT32_MAX)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", program->kernel_name, ": ", grid[d], " work-groups of ",
                                                 block[d], " along dim ", d, " exceed 2^32 - 1 work-items"));
    return runs;
  }

  void bind() { device->bind(); }
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3],
              const uint32_t block[3]) {
    // a kernel without parameters still passes a valid (empty) buffer rather than NULL
    static unsigned char no_args[8];
    size_t size = args.size();
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.empty() ? no_args : args.data(),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    check_hip(hip().hipModuleLaunchKernel(program->function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                          stream, nullptr, extra),
              cat("hipModuleLaunchKernel(", program->kernel_name, ")").c_str());
  }
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size) {
    check_hip(hip().hipMemcpyDtoDAsync(reinterpret_cast<void*>(dst.addr + dst_offset),
                                       reinterpret_cast<void*>(src.addr + src_offset), size, stream),
              "hipMemcpyDtoDAsync");
  }
  Event record(bool timing) {
    hipEvent_t e = nullptr;
    check_hip(hip().hipEventCreateWithFlags(&e, timing ? hipEventDefault : hipEventDisableTiming), "hipEventCreate");
    Event event(e);
    check_hip(hip().hipEventRecord(e, stream), "hipEventRecord");
    return event;
  }
  bool done(const Event& event) {
    const hipError_t r = hip().hipEventQuery(event.get());
    if (r == hipErrorNotReady) return false;
    check_hip(r, "hipEventQuery");
    return true;
  }
  void synchronize(const Event& event) { check_hip(hip().hipEventSynchronize(event.get()), "hipEventSynchronize"); }
  double elapsed_ms(const Event& from, const Event& to) {
    float ms = 0;
    check_hip(hip().hipEventElapsedTime(&ms, from.get(), to.get()), "hipEventElapsedTime");
    return ms;
  }
  // The queue's destructor: a destructor cannot report a failure, so both are best effort.
  void finish() noexcept {
    try {
      device->bind();
    } catch (...) {}
    hip().hipStreamSynchronize(stream);
  }
  void close() noexcept { hip().hipStreamDestroy(stream); }
};

}  // namespace tg::amd

struct tg_hwqueue_s : tg::sdk::DeviceQueue<tg::amd::QueueBackend> {
  using DeviceQueue::DeviceQueue;
};

template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::amd::QueueBackend>;
