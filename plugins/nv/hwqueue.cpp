// The NV plugin's HWQueue: tg::sdk::DeviceQueue (recorded commands issued in order on one CUDA stream at submit,
// signals and timestamps as CUDA events) over a CUDA driver backend; the slots are the SDK's DeviceQueueSlots. A
// launch hands cuLaunchKernel one pointer per parameter into the packed argument blob, at the offsets of the
// program's signature.
#include "nv_plugin.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace tg::nv {

using sdk::cat;
using sdk::Error;

namespace {
constexpr uint32_t kBlock = 256;  // threads per block when the core leaves the local size to the plugin
}  // namespace

struct EventRelease {
  void operator()(CUevent event) const { cuda().cuEventDestroy(event); }
};

struct QueueBackend {
  using Program = std::shared_ptr<nv::Program>;
  using Event = std::unique_ptr<std::remove_pointer_t<CUevent>, EventRelease>;
  static constexpr std::string_view plugin = "nv";
  std::shared_ptr<Device> device;
  CUstream stream = nullptr;

  static QueueBackend open(tg_device device) {
    std::shared_ptr<Device> dev = device_of(device);
    dev->bind();
    CUstream stream = nullptr;
    check_cu(cuda().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return QueueBackend{std::move(dev), stream};
  }

  static bool launch_shape(const Program& program, const tg_launch_dims& dims, uint32_t grid[3], uint32_t block[3]) {
    const bool runs = sdk::gpu_launch_shape(dims, kBlock, grid, block);
    const uint64_t threads =
        uint64_t{std::max(dims.local[0], 1u)} * std::max(dims.local[1], 1u) * std::max(dims.local[2], 1u);
    if (threads > 1024 || dims.local[2] > 64)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", program->kernel_name, ": work-groups of ", dims.local[0], "x", dims.local[1], "x",
                      dims.local[2], " exceed CUDA's 1024 threads per block (64 in z)"));
    return runs;
  }

  void bind() { device->bind(); }
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3],
              const uint32_t block[3]) {
    // cuLaunchKernel copies each parameter from its pointer: the blob already holds them at their offsets.
    std::vector<void*> params;
    for (size_t offset : program->signature.offsets()) params.push_back(args.data() + offset);
    check_cu(cuda().cuLaunchKernel(program->function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                   stream, params.empty() ? nullptr : params.data(), nullptr),
             cat("cuLaunchKernel(", program->kernel_name, ")").c_str());
  }
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size) {
    check_cu(cuda().cuMemcpyDtoDAsync(dst.addr + dst_offset, src.addr + src_offset, size, stream), "cuMemcpyDtoDAsync");
  }
  Event record(bool timing) {
    CUevent e = nullptr;
    check_cu(cuda().cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    Event event(e);
    check_cu(cuda().cuEventRecord(e, stream), "cuEventRecord");
    return event;
  }
  bool done(const Event& event) {
    const CUresult r = cuda().cuEventQuery(event.get());
    if (r == CUDA_ERROR_NOT_READY) return false;
    check_cu(r, "cuEventQuery");
    return true;
  }
  void synchronize(const Event& event) { check_cu(cuda().cuEventSynchronize(event.get()), "cuEventSynchronize"); }
  double elapsed_ms(const Event& from, const Event& to) {
    float ms = 0;
    check_cu(cuda().cuEventElapsedTime(&ms, from.get(), to.get()), "cuEventElapsedTime");
    return ms;
  }
  // The queue's destructor: a destructor cannot report a failure, so both are best effort.
  void finish() noexcept {
    cuda().cuCtxSetCurrent(device->context);
    cuda().cuStreamSynchronize(stream);
  }
  void close() noexcept { cuda().cuStreamDestroy(stream); }
};

}  // namespace tg::nv

struct tg_hwqueue_s : tg::sdk::DeviceQueue<tg::nv::QueueBackend> {
  using DeviceQueue::DeviceQueue;
};

template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::nv::QueueBackend>;
