// The error catalogue, codegen: what a renderer cannot do for a kernel. Hand-written kernels (tg/custom_kernel.hpp)
// reach these messages; where the device would have to be a GPU that this machine lacks (work-group limits), the
// kernel is lowered through codegen/lower.hpp against a GPU's caps, as tests/unit/codegen/gpu_lower_test does.
//
// Messages (tg::Error), by the function that raises them:
//   through the public API on the CPU (no work-groups, no local memory, C inline code)
//     codegen/linearize.cpp linearize_work_groups  "tg: kernel K: LOCAL ranges need work-groups with local memory,
//     which this renderer does not have" codegen/emit.cpp Emitter::require_local      "tg: a local array needs local
//     memory, which this renderer does not have"  (or "a barrier") codegen/emit.cpp Emitter::custom_code_for    "tg:
//     inline code is written for cuda, but this renderer speaks c"
//                                                  ("... but this renderer takes no inline code" on INTERP)
//   through codegen::lower_kernel with a GPU's caps (codegen/linearize.cpp linearize_work_groups, but the last)
//     "tg: kernel K: 4 GLOBAL and 1 LOCAL ranges; the renderer launches at most 3 dims"
//     "tg: kernel K: LOCAL range 0 has 512 work-items; the device allows 256 (max_local[0])"
//     "tg: kernel K: work-groups of 512 work-items; the device allows 256 (max_local_threads)"
//     "tg: kernel K: GLOBAL range 0 has 70000 work-groups; the device allows 65535"
//     "tg: kernel K: 40000 bytes of local arrays; the device has 32768 (local_mem_bytes)"
//     codegen/lower.cpp start_plan: "tg: kernel K needs 4 buffers, renderer allows 3"
// Unreachable from user input (internal invariants; a message here is a bug in tg):
//   apply_opts.cpp apply_opts: OptError "tg: kernel K: ACTION after [...] does not apply: why" - only an explicit
//     action list raises it, and the runtime's two sources of lists (BEAM's search, the BEAM disk cache) catch it and
//     fall back (search.cpp, executor.cpp); tests/unit/codegen/opt_test.cpp checks its wording;
//   emit.cpp Emitter::emit_uncached ("internal: variable v is not a kernel parameter", "internal: range used outside
//   its loop", "cannot lower OP", "renderer cannot compute OP on D": every op has a decomposition or is claimed by
//   every renderer), lanes.hpp kir_op ("no KIR op for OP"), gpu/plan_parts.cpp stage_tile ("internal: a R x C tile does
//   not split over N work-items"), verify.cpp verify_lowered ("lowering produced malformed KIR (a bug in tg)"),
//   transcendental.cpp Ctx (only scalar float32/float64 reach it).
#include <memory>
#include <string>
#include <vector>

#include "../unit/codegen/gpu_caps.hpp"
#include "codegen/lower.hpp"
#include "error_test_util.hpp"
#include "ir/uop.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "tg/custom_kernel.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tgerr::error_of;

// ---- the public API on the CPU --------------------------------------------------------------------------------------

TEST(CodegenErrors, LocalRangesOnARendererWithoutWorkGroups) {
  CustomKernel k("wg");
  KExpr g = k.range(2, Axis::GLOBAL), l = k.range(4, Axis::LOCAL);
  k.run(k.store(k.buffer(0, dtypes::float32), g * 4 + l, k.constant(1, dtypes::float32)));
  EXPECT_MSG(
      error_of<Error>([&] { (void)k({{{8}, dtypes::float32}}, {Tensor::zeros({1}, dtypes::float32, "CPU")}); }),
      HasSubstr("tg: kernel wg: LOCAL ranges need work-groups with local memory, which this renderer does not have"));
}

TEST(CodegenErrors, LocalArrayOnARendererWithout) {
  CustomKernel k("needs_local");
  KExpr i = k.range(4, Axis::GLOBAL);
  KExpr tile = k.local(dtypes::float32, 4);
  k.run(k.store(k.buffer(0, dtypes::float32), i, k.load(tile, i)));
  EXPECT_MSG(error_of<Error>([&] { (void)k({{{4}, dtypes::float32}}, {Tensor::zeros({1}, dtypes::float32, "CPU")}); }),
             HasSubstr("tg: a local array needs local memory, which this renderer does not have"));
}

TEST(CodegenErrors, InlineCodeInAnotherLanguage) {
  CustomKernel k("inline_cuda");
  KExpr i = k.range(4, Axis::GLOBAL);
  k.run(k.store(k.buffer(0, dtypes::int32), i,
                k.inline_expr(dtypes::int32, {{"cuda", "__popc({0})"}}, {i.cast(dtypes::int32)})));
  EXPECT_MSG(error_of<Error>([&] { (void)k({{{4}, dtypes::int32}}, {Tensor::zeros({1}, dtypes::float32, "CPU")}); }),
             HasSubstr("tg: inline code is written for cuda, but this renderer speaks c"));
}

// ---- codegen::lower_kernel against a GPU's caps ---------------------------------------------------------------------

using codegen::test::gpu_caps;

// The kernel a CustomKernel call would schedule: out[...] = 1 over the given GLOBAL and LOCAL ranges (plus a local
// array of `local_floats` when > 0), one float32 output of 4 elements.
std::string lower_error(const std::vector<int64_t>& global, const std::vector<int64_t>& local,
                        int64_t local_floats = 0) {
  CustomKernel k("wg");
  sched::Kernel kernel;
  KExpr idx = k.constant(0, dtypes::int64);
  for (int64_t n : global)
    kernel.out_ranges.push_back(k.range(n, Axis::GLOBAL).node), idx = idx + KExpr(kernel.out_ranges.back());
  for (int64_t n : local)
    kernel.local_ranges.push_back(k.range(n, Axis::LOCAL).node), idx = idx + KExpr(kernel.local_ranges.back());
  KExpr value = k.constant(1, dtypes::float32);
  if (local_floats > 0) value = k.load(k.local(dtypes::float32, local_floats), idx);
  KExpr st = k.store(k.buffer(0, dtypes::float32), k.constant(0, dtypes::int64), value);
  kernel.sink = ir::UOp::make(ir::Op::SINK, dtypes::bool_, {st.node});
  kernel.name = "wg", kernel.custom = true;
  kernel.params = {{dtypes::float32, 4}};
  return error_of<Error>([&] { (void)codegen::lower_kernel(kernel, gpu_caps()); });
}

TEST(CodegenErrors, TooManyGridDims) {
  EXPECT_MSG(lower_error({2, 2, 2, 2}, {4}),
             HasSubstr("tg: kernel wg: 4 GLOBAL and 1 LOCAL ranges; the renderer launches at most 3 dims"));
}

TEST(CodegenErrors, LocalRangePastTheDeviceLimit) {
  EXPECT_MSG(lower_error({2}, {512}),
             HasSubstr("tg: kernel wg: LOCAL range 0 has 512 work-items; the device allows 256 (max_local[0])"));
}

TEST(CodegenErrors, WorkGroupPastTheDeviceLimit) {
  EXPECT_MSG(lower_error({2}, {32, 16}),
             HasSubstr("tg: kernel wg: work-groups of 512 work-items; the device allows 256 (max_local_threads)"));
}

TEST(CodegenErrors, GlobalRangePastTheDeviceLimit) {
  EXPECT_MSG(lower_error({70000}, {4}),
             HasSubstr("tg: kernel wg: GLOBAL range 0 has 70000 work-groups; the device allows 65535"));
}

TEST(CodegenErrors, LocalArraysPastTheDeviceMemory) {
  EXPECT_MSG(lower_error({2}, {4}, 10000),
             HasSubstr("tg: kernel wg: 40000 bytes of local arrays; the device has 32768 (local_mem_bytes)"));
}

TEST(CodegenErrors, MoreBuffersThanTheRendererTakes) {
  Tensor a = Tensor::ones({4}).realize(), b = Tensor::ones({4}).realize(), c = Tensor::ones({4}).realize();
  auto items = sched::create_schedule({(a + b + c).node()}, "CPU").items;
  ASSERT_EQ(items.size(), 1u);
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.max_params = 3;
  const std::string name = items[0].kernel.name;
  EXPECT_MSG(error_of<Error>([&] { (void)codegen::lower_kernel(items[0].kernel, caps); }),
             HasSubstr("tg: kernel " + name + " needs 4 buffers, renderer allows 3"));
}

}  // namespace
}  // namespace tg
