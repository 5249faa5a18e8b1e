// The NV plugin's HWQueue: tg::sdk::DeviceQueue (recorded commands issued in order on one CUDA stream at submit,
// signals and timestamps as CUDA events) over a CUDA driver backend. A launch hands cuLaunchKernel one pointer per
// parameter into the packed argument blob, at the offsets of the program's signature.
#include "nv_plugin.hpp"

#include <tg/sdk/device_queue.hpp>

#include <algorithm>
#include <utility>

namespace tg::nv {

using sdk::cat;
using sdk::Error;

namespace {

constexpr uint32_t kBlock = 256;  // threads per block when the core leaves the local size to the plugin

struct Event {
  CUevent event = nullptr;
  Event() = default;
  explicit Event(CUevent e) : event(e) {}
  Event(Event&& other) noexcept : event(std::exchange(other.event, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event, other.event);
    return *this;
  }
  ~Event() {
    if (event != nullptr) cuda().cuEventDestroy(event);
  }
  explicit operator bool() const { return event != nullptr; }
};

struct CudaBackend {
  using Program = std::shared_ptr<nv::Program>;
  using Event = nv::Event;
  std::shared_ptr<Device> device;
  CUstream stream = nullptr;

  void bind() { device->bind(); }
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3], const uint32_t block[3]) {
    // cuLaunchKernel copies each parameter from its pointer: the blob already holds them at their offsets.
    std::vector<void*> params;
    for (size_t offset : program->signature.offsets()) params.push_back(args.data() + offset);
    check_cu(cuda().cuLaunchKernel(program->function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream,
                                   params.empty() ? nullptr : params.data(), nullptr),
             cat("cuLaunchKernel(", program->kernel_name, ")").c_str());
  }
  void copy(uint64_t dst, uint64_t src, uint64_t size) {
    check_cu(cuda().cuMemcpyDtoDAsync(dst, src, size, stream), "cuMemcpyDtoDAsync");
  }
  Event record(bool timing) {
    CUevent e = nullptr;
    check_cu(cuda().cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    Event event(e);
    check_cu(cuda().cuEventRecord(e, stream), "cuEventRecord");
    return event;
  }
  bool done(const Event& event) {
    const CUresult r = cuda().cuEventQuery(event.event);
    if (r == CUDA_ERROR_NOT_READY) return false;
    check_cu(r, "cuEventQuery");
    return true;
  }
  void synchronize(const Event& event) { check_cu(cuda().cuEventSynchronize(event.event), "cuEventSynchronize"); }
  double elapsed_ms(const Event& from, const Event& to) {
    float ms = 0;
    check_cu(cuda().cuEventElapsedTime(&ms, from.event, to.event), "cuEventElapsedTime");
    return ms;
  }
};

CUstream new_stream(const Device& device) {
  device.bind();
  CUstream stream = nullptr;
  check_cu(cuda().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

}  // namespace
}  // namespace tg::nv

struct tg_hwqueue_s {
  tg::sdk::DeviceQueue<tg::nv::CudaBackend> queue;

  ~tg_hwqueue_s() {
    tg::nv::CudaBackend& b = queue.backend();
    tg::nv::cuda().cuCtxSetCurrent(b.device->context);
    tg::nv::cuda().cuStreamSynchronize(b.stream);  // commands still reference modules and memory
    queue.release_events();
    tg::nv::cuda().cuStreamDestroy(b.stream);
  }
};

namespace tg::nv {

tg_status_t QueueSlots::create(tg_device device, tg_hwqueue* out_queue) noexcept {
  return sdk::guard("nv hwqueue_create", [&] {
    sdk::require(out_queue, "out_queue");
    std::shared_ptr<Device> dev = device_of(device);
    CUstream stream = new_stream(*dev);
    try {
      *out_queue = new tg_hwqueue_s{sdk::DeviceQueue<CudaBackend>(CudaBackend{std::move(dev), stream})};
    } catch (...) {
      cuda().cuStreamDestroy(stream);
      throw;
    }
  });
}

void QueueSlots::destroy(tg_hwqueue queue) noexcept {
  sdk::guard_void("nv hwqueue_destroy", [&] { delete queue; });
}

tg_status_t QueueSlots::exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                             const tg_launch_dims* dims) noexcept {
  return sdk::guard("nv hwqueue_exec", [&] {
    sdk::require(queue, "queue");
    sdk::require(dims, "dims");
    std::shared_ptr<Program> prog = ProgramSlots::of(program);
    if (args_size != prog->signature.args_size())
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", prog->kernel_name, " takes ", prog->signature.args_size(),
                                               " bytes of arguments, got ", args_size));
    if (args_size != 0) sdk::require(args, "args");
    uint32_t grid[3], block[3];
    for (int d = 0; d < 3; ++d) grid[d] = std::max(dims->global[d], 1u), block[d] = std::max(dims->local[d], 1u);
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (threads > 1024 || dims->local[2] > 64)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", prog->kernel_name, ": work-groups of ", dims->local[0], "x", dims->local[1], "x",
                      dims->local[2], " exceed CUDA's 1024 threads per block (64 in z)"));
    if (dims->global[0] == 0 || dims->global[1] == 0 || dims->global[2] == 0) return;  // no work-items
    // a one-dim launch with local 1 leaves the block to us: the kernel uses only global ids, which bound-check
    if (threads == 1 && grid[1] == 1 && grid[2] == 1) {
      block[0] = kBlock;
      grid[0] = static_cast<uint32_t>((uint64_t{grid[0]} + kBlock - 1) / kBlock);
    }
    queue->queue.exec(std::move(prog), args, args_size, grid, block);
  });
}

tg_status_t QueueSlots::copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset,
                             const tg_buffer_desc* src, uint64_t src_offset, uint64_t size) noexcept {
  return sdk::guard("nv hwqueue_copy", [&] {
    sdk::require(queue, "queue");
    check_range(*sdk::require(dst, "dst"), dst_offset, size, "copy destination");
    check_range(*sdk::require(src, "src"), src_offset, size, "copy source");
    queue->queue.copy(dst->addr + dst_offset, src->addr + src_offset, size);
  });
}

tg_status_t QueueSlots::signal(tg_hwqueue queue, uint64_t value) noexcept {
  return sdk::guard("nv hwqueue_signal", [&] { sdk::require(queue, "queue")->queue.signal(value); });
}

tg_status_t QueueSlots::timestamp(tg_hwqueue queue, uint64_t* out_slot) noexcept {
  return sdk::guard("nv hwqueue_timestamp", [&] {
    sdk::require(queue, "queue");
    *sdk::require(out_slot, "out_slot") = queue->queue.timestamp();
  });
}

tg_status_t QueueSlots::submit(tg_hwqueue queue) noexcept {
  return sdk::guard("nv hwqueue_submit", [&] { sdk::require(queue, "queue")->queue.submit(); });
}

tg_status_t QueueSlots::wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) noexcept {
  return sdk::guard("nv hwqueue_wait", [&] { sdk::require(queue, "queue")->queue.wait(value, timeout_ns); });
}

tg_status_t QueueSlots::read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) noexcept {
  return sdk::guard("nv hwqueue_read_timestamp", [&] {
    sdk::require(queue, "queue");
    *sdk::require(out_ns, "out_ns") = queue->queue.read_timestamp(slot);
  });
}

}  // namespace tg::nv
