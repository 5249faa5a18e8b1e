// The METAL plugin's HWQueue: tg::sdk::DeviceQueue over one MTLCommandQueue. A submit encodes its recorded commands
// into one command buffer (launches in a compute encoder, copies in a blit encoder) and commits it; a signal is the
// command buffer it was recorded in, complete when that one is. A time stamp ends its command buffer there (so the
// buffer's GPUEndTime is the stamp's time) and later commands of the submit go into a new one; the queue's time
// origin is an empty command buffer committed when the queue is made. A command buffer's `error` becomes the
// TG_ERR_* of the wait that finds it, with its description.
#include "metal_plugin.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tg::metal {

using sdk::cat;
using sdk::Error;

namespace {

constexpr uint32_t kBlock = 256;  // threads per group when the core leaves the local size to the plugin

// MTLCommandBufferError codes that are the caller's or the memory's, not Metal's.
tg_status_code command_buffer_code(int64_t code) {
  if (code == 7 /* MTLCommandBufferErrorOutOfMemory */) return TG_ERR_OUT_OF_MEMORY;
  if (code == 3 /* PageFault */ || code == 8 /* InvalidResource */) return TG_ERR_INVALID_ARGUMENT;
  return TG_ERR_INTERNAL;
}

}  // namespace

// One command buffer: open (encoding) until committed.
struct Batch {
  Ref buffer;
  bool committed = false;
};

struct QueueBackend {
  using Program = std::shared_ptr<metal::Program>;
  using Event = std::shared_ptr<Batch>;  // the command buffer a signal or time stamp waits for
  static constexpr std::string_view plugin = "metal";
  std::shared_ptr<Device> device;
  Ref queue;
  Event open_batch, last_committed;
  Ref encoder;        // the open batch's current encoder, if any
  bool blit = false;  // whether it is a blit encoder (else compute)

  static QueueBackend open(tg_device device) {
    std::shared_ptr<Device> dev = device_of(device);
    Ref queue(send(dev->device.get(), "newCommandQueue"));
    if (!queue) throw Error(TG_ERR_UNAVAILABLE, cat("newCommandQueue returned nil on ", dev->description));
    return QueueBackend{std::move(dev), std::move(queue), nullptr, nullptr, nullptr, false};
  }
  static void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
    metal::check_range(buffer, offset, size, what);
  }
  // The pipeline bounds a work-group's threads; a local-1 launch takes groups of up to kBlock.
  static bool launch_shape(const Program& program, const tg_launch_dims& dims, uint32_t grid[3], uint32_t block[3]) {
    const uint64_t max = std::max<uint64_t>(program->max_threads, 1);
    const bool runs = sdk::gpu_launch_shape(dims, static_cast<uint32_t>(std::min<uint64_t>(kBlock, max)), grid, block);
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (threads > max)
      throw Error(
          TG_ERR_INVALID_ARGUMENT,
          cat("kernel ", program->kernel_name, ": work-groups of ", block[0], "x", block[1], "x", block[2], " are ",
              threads, " threads; its pipeline takes at most ", max, " (maxTotalThreadsPerThreadgroup)"));
    return runs;
  }

  void bind() {}
  void launch(const Program& program, std::vector<unsigned char>& args, const uint32_t grid[3],
              const uint32_t block[3]) {
    AutoreleasePool pool;
    id enc = encoder_for(false);
    send<void>(enc, "setComputePipelineState:", program->pipeline.get());
    // [[buffer(p)]] is parameter p (the renderer's signature): a buffer's 8 bytes are its MTLBuffer, a variable is
    // `constant T&`, set by value at its own size.
    const sdk::Signature& signature = program->signature;
    for (uint32_t p = 0; p < signature.size(); ++p) {
      const tg_kir_param& param = signature.params()[p];
      unsigned char* at = args.data() + signature.offsets()[p];
      if (param.kind == TG_PARAM_BUFFER) {
        uint64_t addr = 0;
        std::memcpy(&addr, at, sizeof addr);
        send<void>(enc, "setBuffer:offset:atIndex:", reinterpret_cast<id>(addr), uint64_t{0}, uint64_t{p});
      } else {
        send<void>(enc, "setBytes:length:atIndex:", static_cast<const void*>(at), uint64_t{tg_param_size(&param)},
                   uint64_t{p});
      }
    }
    send<void>(enc, "dispatchThreadgroups:threadsPerThreadgroup:", MTLSize{grid[0], grid[1], grid[2]},
               MTLSize{block[0], block[1], block[2]});
  }
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size) {
    AutoreleasePool pool;
    send<void>(encoder_for(true), "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:", src.handle,
               src_offset, dst.handle, dst_offset, size);
  }
  // A signal waits for the batch it is in (committed at the end of the submit); a time stamp ends its batch.
  Event record(bool timing) {
    AutoreleasePool pool;
    Event batch = current();
    if (timing) commit();
    return batch;
  }
  void flush() {
    AutoreleasePool pool;
    commit();
  }
  bool done(const Event& event) {
    if (!event->committed) return false;
    const auto status = send<uint64_t>(event->buffer.get(), "status");
    if (status == kMTLCommandBufferStatusError) throw_error(*event);
    return status == kMTLCommandBufferStatusCompleted;
  }
  void synchronize(const Event& event) {
    if (!event->committed) throw Error(TG_ERR_INTERNAL, "waiting for a Metal command buffer that was never committed");
    send<void>(event->buffer.get(), "waitUntilCompleted");
    if (!done(event)) throw_error(*event);
  }
  // Host-time seconds at which each batch's GPU work ended (never before the origin's: stamps are unsigned).
  double elapsed_ms(const Event& from, const Event& to) {
    const double seconds =
        send<double>(to->buffer.get(), "GPUEndTime") - send<double>(from->buffer.get(), "GPUEndTime");
    return std::max(seconds * 1e3, 0.0);
  }
  // The queue's destructor: command buffers are in order on the queue, so the last one's end is the queue's.
  void finish() noexcept {
    if (last_committed && last_committed->committed) send<void>(last_committed->buffer.get(), "waitUntilCompleted");
  }
  void close() noexcept {
    if (encoder) send<void>(encoder.get(), "endEncoding");  // a submit that failed midway: Metal asserts otherwise
    encoder.reset();
    open_batch.reset();
    last_committed.reset();
    queue.reset();
  }

 private:
  Event current() {
    if (open_batch) return open_batch;
    auto batch = std::make_shared<Batch>();
    batch->buffer = retained(send(queue.get(), "commandBuffer"));  // autoreleased: kept past the pool
    if (!batch->buffer) throw Error(TG_ERR_UNAVAILABLE, cat("commandBuffer returned nil on ", device->description));
    open_batch = batch;
    return batch;
  }
  id encoder_for(bool want_blit) {
    if (encoder && blit == want_blit) return encoder.get();
    end_encoding();
    id buffer = current()->buffer.get();
    encoder = retained(send(buffer, want_blit ? "blitCommandEncoder" : "computeCommandEncoder"));
    if (!encoder) throw Error(TG_ERR_INTERNAL, cat(want_blit ? "blit" : "compute", "CommandEncoder returned nil"));
    blit = want_blit;
    return encoder.get();
  }
  void end_encoding() {
    if (!encoder) return;
    send<void>(encoder.get(), "endEncoding");
    encoder.reset();
  }
  void commit() {
    if (!open_batch) return;
    end_encoding();
    send<void>(open_batch->buffer.get(), "commit");
    open_batch->committed = true;
    last_committed = std::move(open_batch);
    open_batch.reset();
  }
  [[noreturn]] void throw_error(const Batch& batch) {
    AutoreleasePool pool;
    id error = send(batch.buffer.get(), "error");
    const int64_t code = error != nullptr ? send<int64_t>(error, "code") : 0;
    throw Error(error != nullptr ? command_buffer_code(code) : TG_ERR_INTERNAL,
                cat("a Metal command buffer failed (MTLCommandBufferError ", code, "): ", error_text(error)));
  }
};

}  // namespace tg::metal

struct tg_hwqueue_s : tg::sdk::DeviceQueue<tg::metal::QueueBackend> {
  using DeviceQueue::DeviceQueue;
};

template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::metal::QueueBackend>;
