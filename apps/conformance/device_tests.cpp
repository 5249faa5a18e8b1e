// The multi-device battery (tier "multi-device"): every device of the plugin opens beside the others, runs a
// kernel of its own, and data moves between devices through the host, and through the plugin's peer copy (ABI
// 1.7) where it has one. Skipped for a plugin with one device.
#include "harness.hpp"

#include <memory>

namespace tg::conformance {
namespace {

// One device's objects beside the session's, released in reverse order. The session's own device is borrowed,
// not opened a second time (the core holds one handle per device).
class Device {
 public:
  explicit Device(uint32_t index) : index_(index), owned_(index != session().index) {
    const tg_plugin_api& a = api();
    if (owned_) TGC_OK(a.device_open(index, &device_));
    if (!owned_) device_ = session().device;
    TGC_OK(a.renderer_create(device_, nullptr, &renderer_));
    TGC_OK(a.compiler_create(device_, &compiler_));
    TGC_OK(a.hwqueue_create(device_, &queue_));
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() {
    const tg_plugin_api& a = api();
    if (program_) a.program_destroy(program_);
    for (const tg_buffer_desc& b : buffers_) a.allocator_free(device_, &b);
    if (queue_) a.hwqueue_destroy(queue_);
    if (compiler_) a.compiler_destroy(compiler_);
    if (renderer_) a.renderer_destroy(renderer_);
    if (device_ && owned_) a.device_close(device_);
  }

  tg_device handle() const { return device_; }
  tg_buffer_desc upload(const std::vector<int32_t>& data) {
    tg_buffer_desc b{};
    TGC_OK(api().allocator_alloc(device_, data.size() * 4, &b));
    buffers_.push_back(b);
    TGC_OK(api().allocator_copy_in(device_, &b, 0, data.data(), data.size() * 4));
    return b;
  }
  std::vector<int32_t> download(const tg_buffer_desc& b) {
    std::vector<int32_t> out(b.size / 4);
    TGC_OK(api().allocator_copy_out(device_, out.data(), &b, 0, b.size));
    return out;
  }
  // out[g] = in[g] * 2 + device index, rendered, compiled and run on this device.
  void run(const tg_buffer_desc& out, const tg_buffer_desc& in, uint32_t n) {
    const tg_plugin_api& a = api();
    Kir k;
    const int po = k.buffer(TG_DTYPE_INT32, true), pi = k.buffer(TG_DTYPE_INT32), g = k.global_id(n);
    const int doubled = k.alu(TG_KIR_MUL, TG_DTYPE_INT32, {k.load(TG_DTYPE_INT32, pi, g), k.i32(2)});
    k.store(po, g, k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {doubled, k.i32(index_)}));
    const tg_kir_kernel kernel = k.kernel(cat("conf_on_device", index_));
    const char* source = nullptr;
    TGC_OK(a.renderer_render(renderer_, &kernel, &source));
    void* blob = nullptr;
    size_t size = 0;
    TGC_OK(a.compiler_compile(compiler_, source, kernel.name, &blob, &size));
    const Status st = TGC_STATUS(a.program_create(device_, blob, size, kernel.name, k.params().data(), 2, &program_));
    a.blob_free(blob);
    if (!st.ok())
      throw Failure(cat("program_create on device ", index_, " failed with ", code_name(st.code), ": ", st.message));
    const std::vector<unsigned char> args = pack_args(k.params(), {out.addr, in.addr});
    const tg_launch_dims dims{{n, 1, 1}, {1, 1, 1}};
    TGC_OK(a.hwqueue_exec(queue_, program_, args.data(), args.size(), &dims));
    TGC_OK(a.hwqueue_signal(queue_, 1));
    TGC_OK(a.hwqueue_submit(queue_));
    TGC_OK(a.hwqueue_wait(queue_, 1, uint64_t{30} * 1000 * 1000 * 1000));
  }

 private:
  uint32_t index_;
  bool owned_;
  tg_device device_ = nullptr;
  tg_renderer renderer_ = nullptr;
  tg_compiler compiler_ = nullptr;
  tg_hwqueue queue_ = nullptr;
  tg_program program_ = nullptr;
  std::vector<tg_buffer_desc> buffers_;
};

uint32_t require_devices() {
  const Session& s = session();
  if (s.device_count < 2) throw Skip(cat("the plugin reports ", s.device_count, " device; this tier needs 2 or more"));
  if (!s.claims_op(TG_DTYPE_INT32, TG_KIR_ADD) || !s.claims_op(TG_DTYPE_INT32, TG_KIR_MUL))
    throw Skip("the renderer does not claim int32 ADD and MUL");
  return s.device_count;
}

// All devices open at once, each runs its own kernel; then device i's result feeds device i+1 via the host.
void every_device_runs_a_kernel() {
  const uint32_t count = require_devices();
  constexpr uint32_t n = 256;
  std::vector<std::unique_ptr<Device>> devices;
  for (uint32_t i = 0; i < count; ++i) devices.push_back(std::make_unique<Device>(i));
  std::vector<int32_t> data(n);
  for (uint32_t i = 0; i < n; ++i) data[i] = static_cast<int32_t>(i) - 100;
  for (uint32_t d = 0; d < count; ++d) {
    const tg_buffer_desc in = devices[d]->upload(data), out = devices[d]->upload(std::vector<int32_t>(n, 0));
    devices[d]->run(out, in, n);
    const std::vector<int32_t> got = devices[d]->download(out);
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t want = data[i] * 2 + static_cast<int32_t>(d);
      expect(got[i] == want, cat("device ", d, " of ", count, ": out[", i, "] is ", got[i], ", expected ", want,
                                 " (out = in*2 + ", d, ", with input from device ", d == 0 ? 0 : d - 1, ")"));
    }
    data = got;  // the next device starts from this one's result
  }
}

// ABI 1.7's allocator_copy_peer, where the table has it: 800 bytes from offset 12 of a buffer on device 0 to
// offset 40 of one on the last device, the bytes around the range untouched; then back the other way; and a
// range past a buffer's end refused with TG_ERR_INVALID_ARGUMENT, the destination left as it was.
void peer_copy_moves_bytes() {
  const uint32_t count = require_devices();
  const tg_plugin_api& a = api();
  if (!TG_ABI_HAS(&a, tg_plugin_api, allocator_copy_peer) || a.allocator_copy_peer == nullptr)
    throw Skip("the plugin has no allocator_copy_peer (ABI 1.7): the core copies between its devices through the host");
  constexpr uint32_t n = 256;
  Device first(0), last(count - 1);
  std::vector<int32_t> pattern(n), fill(n, -7);
  for (uint32_t i = 0; i < n; ++i) pattern[i] = static_cast<int32_t>(i * 2654435761u);
  const tg_buffer_desc src = first.upload(pattern), dst = last.upload(fill);
  TGC_OK(a.allocator_copy_peer(last.handle(), &dst, 40, first.handle(), &src, 12, 800));
  std::vector<int32_t> got = last.download(dst);
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t want = i >= 10 && i < 210 ? pattern[i - 10 + 3] : -7;
    expect(got[i] == want,
           cat("allocator_copy_peer(device ", count - 1, " at byte 40 <- device 0 at byte 12, 800 bytes): element ", i,
               " is ", got[i], ", expected ", want, i >= 10 && i < 210 ? "" : " (outside the copied range)"));
  }
  TGC_OK(a.allocator_copy_peer(first.handle(), &src, 0, last.handle(), &dst, 0, n * 4));
  expect(first.download(src) == got,
         "allocator_copy_peer back from the last device to device 0 did not copy the whole buffer");
  const Status s = TGC_STATUS(a.allocator_copy_peer(last.handle(), &dst, 8, first.handle(), &src, 0, n * 4));
  expect(!s.ok() && s.code == TG_ERR_INVALID_ARGUMENT,
         cat("allocator_copy_peer of ", n * 4, " bytes to byte 8 of a ", n * 4, "-byte buffer returned ",
             s.ok() ? "success" : code_name(s.code), ", expected TG_ERR_INVALID_ARGUMENT"));
  expect(last.download(dst) == got, "a refused allocator_copy_peer changed the destination buffer");
}

}  // namespace

void add_device_tests(Tests& tests) {
  tests.push_back({"multi_device.every_device_runs_a_kernel", Tier::MultiDevice, every_device_runs_a_kernel});
  tests.push_back({"multi_device.peer_copy_moves_bytes", Tier::MultiDevice, peer_copy_moves_bytes});
}

}  // namespace tg::conformance
