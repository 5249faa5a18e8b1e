// Launching (runtime/launch.cpp): a launch's arguments land where the signature lays them out (buffers as 64-bit
// addresses, variables at their own width and alignment; the offsets derived by hand below), recorded launches run
// only when submitted and then in order, and the JIT's capture sees launches only while a sink is set.
#include "runtime/launch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../planned_schedule.hpp"
#include "codegen/lower.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

template <class T>
T read_at(const std::vector<uint8_t>& blob, size_t offset) {
  T v;
  EXPECT_LE(offset + sizeof(T), blob.size());
  std::memcpy(&v, blob.data() + offset, sizeof(T));
  return v;
}

TEST(PackArgs, BuffersAndVariablesLandAtTheirOffsets) {
  const tg_kir_param params[] = {{TG_PARAM_BUFFER, TG_DTYPE_FLOAT32, 1, 0, "out"},
                                 {TG_PARAM_BUFFER, TG_DTYPE_INT8, 0, 0, "in"},
                                 {TG_PARAM_VAR, TG_DTYPE_INT32, 0, 0, "n"},
                                 {TG_PARAM_VAR, TG_DTYPE_INT16, 0, 0, "s"},
                                 {TG_PARAM_VAR, TG_DTYPE_INT64, 0, 0, "m"}};
  Program p;
  p.signature = sdk::Signature("k", params, 5);
  Device& cpu = Device::get("CPU");
  auto out = std::make_shared<Buffer>(cpu, dtypes::float32, 4), in = std::make_shared<Buffer>(cpu, dtypes::int8, 4);
  const int64_t m = (int64_t{1} << 40) + 7;
  const std::vector<uint8_t> blob = pack_args(p, {out, in}, {-5, 0x1234, m});
  // two 8-byte addresses (0, 8), then int32 at 16, int16 at 20, int64 aligned up to 24
  EXPECT_EQ(read_at<uint64_t>(blob, 0), out->desc().addr);
  EXPECT_EQ(read_at<uint64_t>(blob, 8), in->desc().addr);
  EXPECT_EQ(read_at<int32_t>(blob, 16), -5);
  EXPECT_EQ(read_at<int16_t>(blob, 20), 0x1234);
  EXPECT_EQ(read_at<int64_t>(blob, 24), m);
  EXPECT_EQ(blob.size(), 32u);
}

// b = a + 1 and then c = b + 1, recorded: nothing has run before the submit; after it c = a + 2, which only the
// recorded order gives (the other order reads b before it is written).
TEST(Recorder, LaunchesRunAtTheSubmitInTheirOrder) {
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}).realize();
  const codegen::PlannedSchedule planned({(a + 1.0f).node()}, "CPU");
  ASSERT_EQ(planned.items().size(), 1u);
  Device& cpu = Device::get("CPU");
  const codegen::KirProgram kir = codegen::lower_kernel(planned.items()[0].kernel, cpu.caps());
  const auto program = cpu.load(cpu.compile(cpu.render(kir.view()), kir.name), kir.view());
  auto buffer = [&](float fill) {
    auto b = std::make_shared<Buffer>(cpu, dtypes::float32, 4);
    const std::vector<float> v(4, fill);
    b->copy_in(v.data(), 16);
    return b;
  };
  const auto in = planned.bufs(0)[1], b = buffer(-100), c = buffer(-100);
  Recorder recorder;
  recorder.record(cpu, *program, pack_args(*program, {b, in}, {}), kir.dims);
  recorder.record(cpu, *program, pack_args(*program, {c, b}, {}), kir.dims);
  std::vector<float> got(4);
  c->copy_out(got.data(), 16);
  EXPECT_EQ(got, std::vector<float>(4, -100)) << "a recorded launch ran before the submit";
  recorder.submit(true);
  c->copy_out(got.data(), 16);
  EXPECT_EQ(got, (std::vector<float>{3, 4, 5, 6}));
}

TEST(Capture, OnlyWhileASinkIsSet) {
  EXPECT_FALSE(capturing());
  capture({nullptr, {}, {}, {}, {}, 1});  // no sink: dropped
  std::vector<CapturedLaunch> sink;
  set_capture(&sink);
  EXPECT_TRUE(capturing());
  capture({nullptr, {}, {}, {}, {}, 2});
  set_capture(nullptr);
  capture({nullptr, {}, {}, {}, {}, 3});
  ASSERT_EQ(sink.size(), 1u);
  EXPECT_EQ(sink[0].kir_hash, 2u);
}

}  // namespace
}  // namespace tg::rt
