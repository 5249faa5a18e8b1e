// The AMD plugin's HWQueue: tg::sdk::DeviceQueue (recorded commands issued in order on one HIP stream at submit,
// signals and timestamps as HIP events) over a HIP backend. A launch passes the packed argument blob as it is
// (HIP_LAUNCH_PARAM_BUFFER_POINTER): the kernel's kernarg segment has the same layout.
#include "amd_plugin.hpp"

#include <tg/sdk/device_queue.hpp>

#include <algorithm>
#include <utility>

namespace tg::amd {

using sdk::cat;
using sdk::Error;

namespace {

constexpr uint32_t kBlock = 256;  // work-items per group when the core leaves the local size to the plugin

struct Event {
  hipEvent_t event = nullptr;
  Event() = default;
  explicit Event(hipEvent_t e) : event(e) {}
  Event(Event&& other) noexcept : event(std::exchange(other.event, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event, other.event);
    return *this;
  }
  ~Event() {
    if (event != nullptr) hip().hipEventDestroy(event);
  }
  explicit operator bool() const { return event != nullptr; }
};

struct HipBackend {
  using Program = std::shared_ptr<amd::Program>;
  using Event = amd::Event;
  std::shared_ptr<Device> device;
  hipStream_t stream = nullptr;

  void bind() { device->bind(); }
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3], const uint32_t block[3]) {
    // a kernel without parameters still passes a valid (empty) buffer rather than NULL
    static unsigned char no_args[8];
    size_t size = args.size();
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.empty() ? no_args : args.data(), HIP_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, HIP_LAUNCH_PARAM_END};
    check_hip(hip().hipModuleLaunchKernel(program->function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                          stream, nullptr, extra),
              cat("hipModuleLaunchKernel(", program->kernel_name, ")").c_str());
  }
  void copy(uint64_t dst, uint64_t src, uint64_t size) {
    check_hip(hip().hipMemcpyDtoDAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), size, stream),
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
    const hipError_t r = hip().hipEventQuery(event.event);
    if (r == hipErrorNotReady) return false;
    check_hip(r, "hipEventQuery");
    return true;
  }
  void synchronize(const Event& event) { check_hip(hip().hipEventSynchronize(event.event), "hipEventSynchronize"); }
  double elapsed_ms(const Event& from, const Event& to) {
    float ms = 0;
    check_hip(hip().hipEventElapsedTime(&ms, from.event, to.event), "hipEventElapsedTime");
    return ms;
  }
};

hipStream_t new_stream(const Device& device) {
  device.bind();
  hipStream_t stream = nullptr;
  check_hip(hip().hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  return stream;
}

}  // namespace
}  // namespace tg::amd

struct tg_hwqueue_s {
  tg::sdk::DeviceQueue<tg::amd::HipBackend> queue;

  ~tg_hwqueue_s() {
    tg::amd::HipBackend& b = queue.backend();
    b.device->bind();
    tg::amd::hip().hipStreamSynchronize(b.stream);  // commands still reference modules and memory
    queue.release_events();
    tg::amd::hip().hipStreamDestroy(b.stream);
  }
};

namespace tg::amd {

tg_status_t QueueSlots::create(tg_device device, tg_hwqueue* out_queue) noexcept {
  return sdk::guard("amd hwqueue_create", [&] {
    sdk::require(out_queue, "out_queue");
    std::shared_ptr<Device> dev = device_of(device);
    hipStream_t stream = new_stream(*dev);
    try {
      *out_queue = new tg_hwqueue_s{sdk::DeviceQueue<HipBackend>(HipBackend{std::move(dev), stream})};
    } catch (...) {
      hip().hipStreamDestroy(stream);
      throw;
    }
  });
}

void QueueSlots::destroy(tg_hwqueue queue) noexcept {
  sdk::guard_void("amd hwqueue_destroy", [&] { delete queue; });
}

tg_status_t QueueSlots::exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                         const tg_launch_dims* dims) noexcept {
  return sdk::guard("amd hwqueue_exec", [&] {
    sdk::require(queue, "queue");
    sdk::require(dims, "dims");
    std::shared_ptr<Program> prog = ProgramSlots::of(program);
    if (args_size != prog->args_size)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->args_size,
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) sdk::require(args, "args");
    uint32_t grid[3], block[3];
    for (int d = 0; d < 3; ++d) grid[d] = std::max(dims->global[d], 1u), block[d] = std::max(dims->local[d], 1u);
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (threads > 1024)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, ": work-groups of ", block[0], "x", block[1],
                                               "x", block[2], " exceed the 1024 work-items an AMD work-group has"));
    if (dims->global[0] == 0 || dims->global[1] == 0 || dims->global[2] == 0) return;  // no work-items
    // a one-dim launch with local 1 leaves the group to us: the kernel uses only global ids, which bound-check
    if (threads == 1 && grid[1] == 1 && grid[2] == 1) {
      block[0] = kBlock;
      grid[0] = static_cast<uint32_t>((uint64_t{grid[0]} + kBlock - 1) / kBlock);
    }
    for (int d = 0; d < 3; ++d)  // HSA's dispatch packet counts work-items per dim in 32 bits
      if (uint64_t{grid[d]} * block[d] > UINT32_MAX)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, ": ", grid[d], " work-groups of ",
                                                 block[d], " along dim ", d, " exceed 2^32 - 1 work-items"));
    queue->queue.exec(std::move(prog), args, args_size, grid, block);
  });
}

tg_status_t QueueSlots::copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                         uint64_t src_offset, uint64_t size) noexcept {
  return sdk::guard("amd hwqueue_copy", [&] {
    sdk::require(queue, "queue");
    check_range(*sdk::require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*sdk::require(src, "src"), src_offset, size, "copy source");
    queue->queue.copy(dst->addr + dst_offset, src->addr + src_offset, size);
  });
}

tg_status_t QueueSlots::signal(tg_hwqueue queue, uint64_t value) noexcept {
  return sdk::guard("amd hwqueue_signal", [&] { sdk::require(queue, "queue")->queue.signal(value); });
}

tg_status_t QueueSlots::timestamp(tg_hwqueue queue, uint64_t* out_slot) noexcept {
  return sdk::guard("amd hwqueue_timestamp", [&] {
    sdk::require(out_slot, "out_slot");
    *out_slot = sdk::require(queue, "queue")->queue.timestamp();
  });
}

tg_status_t QueueSlots::submit(tg_hwqueue queue) noexcept {
  return sdk::guard("amd hwqueue_submit", [&] { sdk::require(queue, "queue")->queue.submit(); });
}

tg_status_t QueueSlots::wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) noexcept {
  return sdk::guard("amd hwqueue_wait", [&] { sdk::require(queue, "queue")->queue.wait(value, timeout_ns); });
}

tg_status_t QueueSlots::read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) noexcept {
  return sdk::guard("amd hwqueue_read_timestamp", [&] {
    sdk::require(out_ns, "out_ns");
    *out_ns = sdk::require(queue, "queue")->queue.read_timestamp(slot);
  });
}

}  // namespace tg::amd
