// The queue battery (tier "queues"): several queues with work in flight at once, commands running in recorded
// order, signals that only grow, waits on reached values, time stamps that are readable and monotonic, and
// queue copies with their bounds checked.
#include "harness.hpp"

#include <memory>

namespace tg::conformance {
namespace {

constexpr uint64_t kWaitNs = uint64_t{30} * 1000 * 1000 * 1000;  // a stuck queue fails the test, not the run

// A queue of its own, destroyed with the test.
class Queue {
 public:
  Queue() { TGC_OK(api().hwqueue_create(session().device, &queue_)); }
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;
  ~Queue() { api().hwqueue_destroy(queue_); }
  tg_hwqueue get() const { return queue_; }

 private:
  tg_hwqueue queue_ = nullptr;
};

// out[g] = in[g] + bias over n work-items: a kernel every queue test can record.
struct BiasKernel {
  Kir kir;
  std::unique_ptr<Kernel> kernel;
  explicit BiasKernel(uint32_t n) {
    const Session& s = session();
    if (!s.claims_op(TG_DTYPE_INT32, TG_KIR_ADD)) throw Skip("the renderer does not claim int32 ADD");
    const int out = kir.buffer(TG_DTYPE_INT32, true), in = kir.buffer(TG_DTYPE_INT32);
    const int bias = kir.var(TG_DTYPE_INT32, "bias");
    const int g = kir.global_id(n);
    kir.store(out, g, kir.alu(TG_KIR_ADD, TG_DTYPE_INT32, {kir.load(TG_DTYPE_INT32, in, g), bias}));
    kernel = std::make_unique<Kernel>(kir, "conf_bias");
  }
  // Records one exec of this kernel on `queue`.
  void record(tg_hwqueue queue, const Buffer& out, const Buffer& in, int32_t bias, uint32_t n) {
    const std::vector<unsigned char> args =
        pack_args(kir.params(), {out.addr(), in.addr(), static_cast<uint64_t>(static_cast<uint32_t>(bias))});
    const tg_launch_dims dims{{n, 1, 1}, {1, 1, 1}};
    const Status s = TGC_STATUS(api().hwqueue_exec(queue, kernel->program(), args.data(), args.size(), &dims));
    if (!s.ok()) kernel->fail(cat("hwqueue_exec failed with ", code_name(s.code), ": ", s.message));
  }
};

std::vector<int32_t> iota(uint32_t n, int32_t start) {
  std::vector<int32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = start + static_cast<int32_t>(i);
  return out;
}

// Four queues, each with two execs and two signals recorded, all submitted before any is waited on.
void several_queues_in_flight() {
  constexpr uint32_t n = 4096, kQueues = 4;
  BiasKernel bias(n);
  const tg_plugin_api& a = api();
  std::vector<std::unique_ptr<Queue>> queues;
  std::vector<std::unique_ptr<Buffer>> ins, mids, outs;
  for (uint32_t q = 0; q < kQueues; ++q) {
    queues.push_back(std::make_unique<Queue>());
    ins.push_back(std::make_unique<Buffer>(iota(n, static_cast<int32_t>(q) * 100000)));
    mids.push_back(std::make_unique<Buffer>(std::vector<int32_t>(n, 0)));
    outs.push_back(std::make_unique<Buffer>(std::vector<int32_t>(n, 0)));
    const tg_hwqueue queue = queues[q]->get();
    bias.record(queue, *mids[q], *ins[q], 10 + static_cast<int32_t>(q), n);
    TGC_OK(a.hwqueue_signal(queue, 1));
    bias.record(queue, *outs[q], *mids[q], 1000, n);  // reads what the first exec wrote: order matters
    TGC_OK(a.hwqueue_signal(queue, 2));
  }
  for (const auto& q : queues) TGC_OK(a.hwqueue_submit(q->get()));
  for (const auto& q : queues) TGC_OK(a.hwqueue_wait(q->get(), 2, kWaitNs));
  for (uint32_t q = 0; q < kQueues; ++q) {
    const std::vector<int32_t> got = outs[q]->read_as<int32_t>();
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t want =
          static_cast<int32_t>(q) * 100000 + static_cast<int32_t>(i) + 10 + static_cast<int32_t>(q) + 1000;
      if (got[i] != want)
        bias.kernel->fail(cat("queue ", q, " of ", kQueues, " (two execs, signals 1 and 2, all queues submitted ",
                              "before any wait): out[", i, "] is ", got[i], ", expected ", want));
    }
  }
}

void signals_only_grow() {
  const tg_plugin_api& a = api();
  Queue queue;
  TGC_OK(a.hwqueue_signal(queue.get(), 5));
  Status s = TGC_STATUS(a.hwqueue_signal(queue.get(), 4));
  expect(!s.ok(), "hwqueue_signal(4) after a recorded hwqueue_signal(5) succeeded; signals only grow");
  TGC_OK(a.hwqueue_submit(queue.get()));
  TGC_OK(a.hwqueue_wait(queue.get(), 5, kWaitNs));
  s = TGC_STATUS(a.hwqueue_signal(queue.get(), 3));
  expect(!s.ok(), "hwqueue_signal(3) after the signal reached 5 succeeded; signals only grow");
  TGC_OK(a.hwqueue_signal(queue.get(), 6));
  TGC_OK(a.hwqueue_submit(queue.get()));
  TGC_OK(a.hwqueue_wait(queue.get(), 6, kWaitNs));
}

void wait_on_reached_value_returns() {
  const tg_plugin_api& a = api();
  Queue queue;
  TGC_OK(a.hwqueue_signal(queue.get(), 7));
  TGC_OK(a.hwqueue_submit(queue.get()));
  TGC_OK(a.hwqueue_wait(queue.get(), 7, kWaitNs));
  // Values already passed return at once, with a short timeout and with "forever" (0).
  TGC_OK(a.hwqueue_wait(queue.get(), 7, 1000));
  TGC_OK(a.hwqueue_wait(queue.get(), 3, 1000));
  TGC_OK(a.hwqueue_wait(queue.get(), 0, 0));
}

void timestamps_are_monotonic() {
  constexpr uint32_t n = 1 << 16;
  BiasKernel bias(n);
  const tg_plugin_api& a = api();
  Queue queue;
  Buffer in(iota(n, 0)), out(std::vector<int32_t>(n, 0)), copy(std::vector<int32_t>(n, 0));
  uint64_t slots[4];
  TGC_OK(a.hwqueue_timestamp(queue.get(), &slots[0]));
  bias.record(queue.get(), out, in, 1, n);
  TGC_OK(a.hwqueue_timestamp(queue.get(), &slots[1]));
  TGC_OK(a.hwqueue_copy(queue.get(), &copy.desc(), 0, &out.desc(), 0, n * 4));
  TGC_OK(a.hwqueue_timestamp(queue.get(), &slots[2]));
  TGC_OK(a.hwqueue_signal(queue.get(), 1));
  TGC_OK(a.hwqueue_timestamp(queue.get(), &slots[3]));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < i; ++j)
      expect(slots[i] != slots[j], cat("hwqueue_timestamp returned slot ", slots[i], " twice"));
  TGC_OK(a.hwqueue_submit(queue.get()));
  TGC_OK(a.hwqueue_wait(queue.get(), 1, kWaitNs));
  uint64_t ns[4];
  for (int i = 0; i < 4; ++i) TGC_OK(a.hwqueue_read_timestamp(queue.get(), slots[i], &ns[i]));
  for (int i = 1; i < 4; ++i)
    expect(ns[i] >= ns[i - 1], cat("time stamp ", i, " (", ns[i], " ns) is earlier than time stamp ", i - 1, " (",
                                   ns[i - 1], " ns), recorded before it on the same queue"));
  expect(ns[3] > 0, "every time stamp read back as 0 ns");
  expect(copy.read_as<int32_t>()[n - 1] == static_cast<int32_t>(n), "the copy between the time stamps did not run");
}

void copies_between_buffers() {
  const tg_plugin_api& a = api();
  Queue queue;
  Buffer src(iota(16, 100)), dst(std::vector<int32_t>(16, 0));
  TGC_OK(a.hwqueue_copy(queue.get(), &dst.desc(), 12, &src.desc(), 8, 20));  // elements 2..6 -> 3..7
  const Status past = TGC_STATUS(a.hwqueue_copy(queue.get(), &dst.desc(), 60, &src.desc(), 0, 8));
  expect(past.code == TG_ERR_INVALID_ARGUMENT, cat("hwqueue_copy(64-byte dst, offset 60, 8 bytes) returned ",
                                                   code_name(past.code), "; expected TG_ERR_INVALID_ARGUMENT"));
  TGC_OK(a.hwqueue_signal(queue.get(), 1));
  TGC_OK(a.hwqueue_submit(queue.get()));
  TGC_OK(a.hwqueue_wait(queue.get(), 1, kWaitNs));
  std::vector<int32_t> want(16, 0);
  for (int i = 3; i < 8; ++i) want[i] = 100 + i - 1;
  const std::vector<int32_t> got = dst.read_as<int32_t>();
  for (int i = 0; i < 16; ++i)
    expect(got[i] == want[i], cat("hwqueue_copy(dst offset 12, src offset 8, 20 bytes): dst[", i, "] is ", got[i],
                                  ", expected ", want[i]));
}

}  // namespace

void add_queue_tests(Tests& tests) {
  tests.push_back({"queues.several_queues_in_flight", Tier::Queues, several_queues_in_flight});
  tests.push_back({"queues.signals_only_grow", Tier::Queues, signals_only_grow});
  tests.push_back({"queues.wait_on_reached_value_returns", Tier::Queues, wait_on_reached_value_returns});
  tests.push_back({"queues.timestamps_are_monotonic", Tier::Queues, timestamps_are_monotonic});
  tests.push_back({"queues.copies_between_buffers", Tier::Queues, copies_between_buffers});
}

}  // namespace tg::conformance
