// Mirrors core/src/runtime/shadow_check.cpp: shadow_check() re-runs a kernel that ran on the CPU on INTERP and
// compares the outputs (integers bit for bit, floats within 1e-4 relative, NaN matching NaN). A correct output
// passes; an output edited here after the run is named, with the element, both values, the KIR and the source.
// (CHECK=... end to end, with a broken plugin: tests/conformance check_shadow_*.)
#include "runtime/shadow_check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../planned_schedule.hpp"
#include "codegen/lower.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

using ::testing::HasSubstr;

bool has_interp() {
  for (const auto& d : available_devices())
    if (d == "INTERP") return true;
  return false;
}

// One kernel of t scheduled on the CPU, run there; keeps what shadow_check needs.
struct Ran {
  sched::ScheduleItem item;
  std::vector<std::shared_ptr<Buffer>> bufs;
  codegen::KirProgram kir;
  std::string source;
};

Ran run_on_cpu(const Tensor& t) {
  const codegen::PlannedSchedule planned({t.node()}, t.device());
  EXPECT_EQ(planned.items().size(), 1u);
  Ran r{planned.items().at(0), planned.bufs(0), {}, {}};
  Device& dev = r.bufs[0]->device();
  r.kir = codegen::lower_kernel(r.item.kernel, dev.caps());
  r.source = dev.render(r.kir.view());
  auto prog = dev.load(dev.compile(r.source, r.kir.name), r.kir.view());
  dev.launch(*prog, pack_args(*prog, r.bufs, r.item.var_vals), r.kir.dims, true);
  return r;
}

template <class T>
void poke(Buffer& b, size_t i, T v) {
  std::vector<T> h(static_cast<size_t>(b.numel()));
  b.copy_out(h.data(), h.size() * sizeof(T));
  h[i] = v;
  b.copy_in(h.data(), h.size() * sizeof(T));
}

std::string error_of(const Ran& r) {
  try {
    shadow_check(r.item, r.bufs, r.kir, r.source, "INTERP");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class ShadowCheck : public testing::Test {
 protected:
  void SetUp() override {
    if (!has_interp()) GTEST_SKIP() << "the INTERP plugin was not built";
  }
};

TEST_F(ShadowCheck, FloatKernelWithinToleranceAndNaNs) {
  std::vector<float> a(64), b(64);
  for (int i = 0; i < 64; ++i) a[i] = static_cast<float>(i) * 0.25f - 3, b[i] = 1.5f - static_cast<float>(i % 5);
  a[7] = NAN;  // NaN on both devices: equal
  Tensor t = Tensor::from_vector(a, {64}, "CPU") * Tensor::from_vector(b, {64}, "CPU") + 1.0;
  Ran r = run_on_cpu(t);
  testing::internal::CaptureStderr();
  EXPECT_EQ(error_of(r), "") << "a correct kernel differs";
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_THAT(log,
              HasSubstr("CHECK=INTERP: every kernel on CPU runs again on INTERP and is compared (copies verified)"));

  // within 1e-4 relative: still the same
  const float want5 = a[5] * b[5] + 1;  // -1.75 * 1.5 + 1 = -1.625
  poke<float>(*r.bufs[0], 5, want5 * (1 + 5e-5f));
  EXPECT_EQ(error_of(r), "");
  // past it: named
  poke<float>(*r.bufs[0], 5, want5 * 1.01f);
  const std::string err = error_of(r);
  EXPECT_THAT(
      err, HasSubstr("tg: CHECK=INTERP: kernel " + r.kir.name + " on CPU differs from INTERP at output 0 element 5: "));
  EXPECT_THAT(err, HasSubstr(" vs -1.625 (float32)\n--- KIR ---\n" + r.kir.dump() + "--- source ---\n" + r.source));
  // a NaN where a number belongs
  poke<float>(*r.bufs[0], 5, want5);
  poke<float>(*r.bufs[0], 9, NAN);
  EXPECT_THAT(error_of(r), HasSubstr("at output 0 element 9: nan vs "));
}

TEST_F(ShadowCheck, IntegersCompareExactly) {
  std::vector<int32_t> a(32);
  for (int i = 0; i < 32; ++i) a[i] = i * 1000003;
  Tensor t = Tensor::from_vector(a, {32}, dtypes::int32, "CPU") + Tensor::from_vector(a, {32}, dtypes::int32, "CPU");
  Ran r = run_on_cpu(t);
  EXPECT_EQ(error_of(r), "");
  poke<int32_t>(*r.bufs[0], 31, 2 * 31 * 1000003 + 1);  // off by one in 6.2e7: within 1e-4, but an integer
  const std::string err = error_of(r);
  ASSERT_THAT(err, HasSubstr("differs from INTERP at output 0 element 31: ")) << "an off-by-one integer passed";
  EXPECT_THAT(err, HasSubstr("at output 0 element 31: 62000187 vs 62000186 (int32)"));
}

}  // namespace
}  // namespace tg::rt
