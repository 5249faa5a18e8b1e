// Lowering for GPU-model devices (work-groups, local memory, no host threads): outputs on a multi-dim grid with
// power-of-two work-groups, long reductions with few outputs shared by a work-group through local memory with
// one array and one barrier per reduce. The KIR is checked against GPU caps on any machine; the results are
// checked against host loops on QCOM (OpenCL) where it is present.
#include "codegen/lower.hpp"
#include "gpu_caps.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../planned_schedule.hpp"
#include "runtime/options.hpp"
#include "schedule/schedule.hpp"

#include <tg/sdk/tensor_cores.hpp>

#include <cstdlib>
#include "tg/custom_kernel.hpp"
#include "tg/device.hpp"
#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

using test::gpu_caps;

std::vector<KirProgram> lower_all(const Tensor& t, const tg_renderer_caps& caps, const LowerOpts& opts = {}) {
  std::vector<KirProgram> kirs;
  const auto schedule = sched::create_schedule({t.node()}, t.device());
  for (auto& it : schedule.items)
    if (it.kind == sched::ScheduleItem::Kind::KERNEL) kirs.push_back(lower_kernel(it.kernel, caps, opts));
  return kirs;
}

bool is_gpu(const tg_renderer_caps& c) { return c.has_local && !c.has_threads && c.max_local_threads > 1; }

int count(const KirProgram& k, tg_kir_op op) {
  return static_cast<int>(
      std::count_if(k.insts.begin(), k.insts.end(), [&](const tg_kir_inst& in) { return in.op == op; }));
}

int specials(const KirProgram& k, uint32_t kind) {
  return static_cast<int>(std::count_if(k.insts.begin(), k.insts.end(), [&](const tg_kir_inst& in) {
    return in.op == TG_KIR_SPECIAL && in.arg.i / 4 == kind;
  }));
}

// Every kind of kernel goes through the same named steps (pipeline.cpp): a GPU plan (GROUP) and a hand-written
// kernel with a reduction and a LOCAL range show each step under DEBUG=5, and the steps that lower their graph
// change it there, not inside apply_opts or the linearizer; TG_TIME_PASSES times every step for them.
TEST(GpuLowering, GpuPlansAndHandWrittenKernelsGoThroughEveryStep) {
  auto log_of = [](const sched::Kernel& kernel) {
    testing::internal::CaptureStderr();
    lower_kernel(kernel, gpu_caps(), LowerOpts{.switches = {.debug = 5, .time_passes = true}});
    return testing::internal::GetCapturedStderr();
  };
  const Tensor x = Tensor::ones({2, 5000});
  const auto planned = sched::create_schedule({x.sum({1}).node()}, x.device()).items;
  ASSERT_EQ(planned.size(), 1u);
  // a hand-written kernel with a LOCAL range, as Tensor::custom_kernel schedules one (which runs it at once)
  CustomKernel k("written_sum");
  const KExpr g = k.range(4, Axis::GLOBAL), l = k.range(32, Axis::LOCAL), r = k.range(64, Axis::REDUCE);
  const KExpr in = k.buffer(1, dtypes::float32);
  const KExpr store =
      k.store(k.buffer(0, dtypes::float32), g * 32 + l, k.reduce(k.load(in, (g * 32 + l) * 64 + r), Reduce::SUM, {r}));
  sched::ScheduleItem custom;
  custom.slots = {0, 1};
  custom.kernel.sink = ir::UOp::make(ir::Op::SINK, dtypes::bool_, {store.node});
  custom.kernel.out_ranges = {g.node}, custom.kernel.local_ranges = {l.node};
  custom.kernel.name = "written_sum", custom.kernel.custom = true;
  sched::describe_params(custom, {{sched::BufferSlot::Kind::INPUT, dtypes::float32, 128, "CPU"},
                                  {sched::BufferSlot::Kind::INPUT, dtypes::float32, 128 * 64, "CPU"}});
  for (const sched::ScheduleItem& item : {planned[0], custom}) {
    const std::string name = item.kernel.name, log = log_of(item.kernel);
    SCOPED_TRACE(name + "\n" + log);
    // the step that makes the work-groups: the GPU plan's actions, or the hand-written kernel taken as written
    const std::string makes = item.kernel.custom ? "take_as_written" : "apply_opts";
    EXPECT_NE(log.find("after " + makes + ":\n  work-groups:"), std::string::npos);
    EXPECT_NE(log.find("after lower_reduces:\n  work-groups:"), std::string::npos) << "the reductions, as a step";
    EXPECT_NE(log.find("after linearize:"), std::string::npos);
    const size_t at = log.find("TG_TIME_PASSES " + name + ":");
    ASSERT_NE(at, std::string::npos);
    const std::string times = log.substr(at, log.find('\n', at) - at);
    for (const char* step : {"check_spec", "take_as_written", "apply_opts", "unroll_written_reduces", "expand",
                             "unroll_reduces", "lower_reduces", "linearize", "read_through_images"})
      EXPECT_NE(times.find(" " + std::string(step) + " "), std::string::npos) << step;
  }
}

TEST(GpuLowering, LongReductionIsSharedByAWorkGroup) {
  Tensor x = Tensor::ones({2, 5000});
  auto kirs = lower_all(x.sum({1}), gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  EXPECT_EQ(specials(k, TG_SPECIAL_LOCAL), 1);
  EXPECT_EQ(specials(k, TG_SPECIAL_GROUP), 1);
  EXPECT_EQ(count(k, TG_KIR_DEFINE_LOCAL), 1);
  EXPECT_EQ(count(k, TG_KIR_BARRIER), 1);
  EXPECT_EQ(k.dims.global[0], 2u) << "one work-group per output";
  EXPECT_EQ(k.dims.local[0], 256u);
  // the output store is made by one work-item: it carries a gate
  const tg_kir_inst& last_store =
      *std::find_if(k.insts.rbegin(), k.insts.rend(), [](const tg_kir_inst& in) { return in.op == TG_KIR_STORE; });
  EXPECT_EQ(last_store.nsrc, 4u);
}

TEST(GpuLowering, TwoGroupedReducesEachGetTheirOwnArrayAndBarrier) {
  Tensor x = Tensor::ones({3, 3000});
  auto kirs = lower_all(x.sum({1}) + x.max({1}), gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  EXPECT_EQ(count(k, TG_KIR_DEFINE_LOCAL), 2);
  EXPECT_EQ(count(k, TG_KIR_BARRIER), 2);
  // every load from a local array comes after a barrier that follows the store into that array
  for (size_t i = 0; i < k.insts.size(); ++i) {
    const tg_kir_inst& in = k.insts[i];
    if (in.op != TG_KIR_LOAD || k.insts[k.src_pool[in.src_start]].op != TG_KIR_DEFINE_LOCAL) continue;
    const int32_t array = k.src_pool[in.src_start];
    size_t store = 0, barrier = 0;
    for (size_t j = 0; j < i; ++j) {
      if (k.insts[j].op == TG_KIR_STORE && k.src_pool[k.insts[j].src_start] == array) store = j;
      if (k.insts[j].op == TG_KIR_BARRIER) barrier = j;
    }
    EXPECT_GT(store, 0u) << "load %" << i << " of a local array nobody stored to";
    EXPECT_GT(barrier, store) << "load %" << i << " reads local memory without a barrier after its store";
  }
}

// Four output loops and three grid dims: one output loop stays a loop around the shared reduce, and the local
// array must not be written for the next output before every work-item has folded it for this one.
TEST(GpuLowering, AReduceInsideAnOutputLoopWaitsBeforeReusingItsArray) {
  Tensor x = Tensor::ones({2, 2, 2, 2, 512});
  auto kirs = lower_all(x.sum({4}), gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  EXPECT_EQ(count(k, TG_KIR_DEFINE_LOCAL), 1);
  ASSERT_EQ(count(k, TG_KIR_BARRIER), 2) << "a barrier after the staging store and one before the next iteration";
  // the second barrier closes the output loop's body: nothing but the loop's end follows it
  size_t last_barrier = 0;
  for (size_t i = 0; i < k.insts.size(); ++i)
    if (k.insts[i].op == TG_KIR_BARRIER) last_barrier = i;
  EXPECT_EQ(k.insts[last_barrier + 1].op, TG_KIR_ENDRANGE);
}

TEST(GpuLowering, OutputsGoOnAThreeDimGridOfPowerOfTwoGroups) {
  Tensor a = Tensor::ones({6, 40, 96}), b = Tensor::ones({6, 40, 96});
  auto kirs = lower_all((a + b) * 3.0f, gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  EXPECT_EQ(specials(k, TG_SPECIAL_GLOBAL), 3);
  EXPECT_EQ(count(k, TG_KIR_RANGE), 0) << "every output loop should be on the grid";
  uint64_t threads = 1, items = 1;
  for (int d = 0; d < 3; ++d) {
    threads *= k.dims.local[d];
    items *= uint64_t{k.dims.global[d]} * k.dims.local[d];
    EXPECT_EQ(k.dims.local[d] & (k.dims.local[d] - 1), 0u) << "dim " << d << " local size " << k.dims.local[d];
  }
  EXPECT_LE(threads, 256u);
  EXPECT_GT(threads, 1u);
  // vector lanes (an upcast) may cover part of the innermost dim; the grid covers the rest exactly
  EXPECT_EQ(6u * 40u * 96u % items, 0u);
}

TEST(GpuLowering, ManyShortReductionsStayOnePerWorkItem) {
  Tensor x = Tensor::ones({8192, 16});
  auto kirs = lower_all(x.sum({1}), gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  EXPECT_EQ(count(kirs[0], TG_KIR_DEFINE_LOCAL), 0);
  EXPECT_EQ(count(kirs[0], TG_KIR_BARRIER), 0);
}

Tensor buffer(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(n)), shape);
}

// Five output loops (a permuted view keeps them apart) on a three-dim grid: the outer three share the last dim.
TEST(GpuLowering, LoopsBeyondTheGridsDimsAreCollapsedIntoTheLast) {
  Tensor x = buffer({2, 3, 4, 5, 64});
  auto kirs = lower_all(x.permute({4, 2, 0, 3, 1}) * 2.0f, gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  EXPECT_EQ(specials(kirs[0], TG_SPECIAL_GLOBAL), 3);
  EXPECT_EQ(count(kirs[0], TG_KIR_RANGE), 0) << "every output loop should be on the grid";
}

int64_t local_elements(const KirProgram& k) {
  for (const auto& in : k.insts)
    if (in.op == TG_KIR_DEFINE_LOCAL) return in.arg.i;
  return 0;
}

// GROUP's and LOCAL's amounts are the work-group: GROUP(0, n) shares each output's reductions among n work-items
// (any n the device takes, also where the heuristic would not group), LOCAL(0, e) tiles a matmul with e x e.
TEST(GpuLowering, GroupAndLocalTakeTheirWorkGroupSize) {
  const Tensor x = buffer({2, 5000});
  for (int n : {2, 48, 64, 256}) {
    const KirProgram g = lower_all(x.sum({1}), gpu_caps(), LowerOpts{Opts{{OptOp::GROUP, 0, n}}})[0];
    EXPECT_EQ(g.dims.local[0], static_cast<uint32_t>(n));
    EXPECT_EQ(g.dims.global[0], 2u) << "one work-group per output";
    EXPECT_EQ(local_elements(g), n) << "one partial per work-item";
  }
  const KirProgram own = lower_all(x.sum({1}), gpu_caps(), LowerOpts{Opts{{OptOp::GROUP}}})[0];
  EXPECT_EQ(own.dims.local[0], 256u) << "0: the plan's own size";
  EXPECT_EQ(local_elements(lower_all(buffer({2, 100}).sum({1}), gpu_caps())[0]), 0) << "too short for the heuristic";
  EXPECT_EQ(local_elements(lower_all(buffer({2, 100}).sum({1}), gpu_caps(), LowerOpts{Opts{{OptOp::GROUP, 0, 32}}})[0]),
            32);
  auto refused = [&](const Tensor& t, const Opts& o, const std::string& why) {
    try {
      lower_all(t, gpu_caps(), LowerOpts{o});
      ADD_FAILURE() << str(o) << " applied";
    } catch (const OptError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(x.sum({1}), {{OptOp::GROUP, 0, 512}}, "GROUP does not fit");  // the caps take 256 work-items a group
  refused(x.sum({1}), {{OptOp::GROUP, 0, 1}}, "a work-group size is 2 or more");
  const Tensor a = buffer({128, 96}), b = buffer({96, 64});
  const KirProgram l8 = lower_all(a.matmul(b), gpu_caps(), LowerOpts{Opts{{OptOp::LOCAL, 0, 8}}})[0];
  EXPECT_EQ(l8.dims.local[0], 8u);
  EXPECT_EQ(l8.dims.local[1], 8u);
  EXPECT_EQ(uint64_t{l8.dims.global[0]} * l8.dims.global[1] * 64u * 16u, 128u * 64u)
      << "every output once (4 x 4 each)";
  refused(a.matmul(b), {{OptOp::LOCAL, 0, 32}}, "LOCAL does not fit");  // 1024 work-items
  refused(a.matmul(b), {{OptOp::LOCAL, 0, 12}}, "LOCAL does not fit");
  refused(a.matmul(b), {{OptOp::TC, 0, 64}}, "its amount is 0");
}

TEST(GpuLowering, MatmulIsTiledThroughLocalMemory) {
  Tensor a = buffer({128, 96}), b = buffer({96, 64});
  auto kirs = lower_all(a.matmul(b), gpu_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  EXPECT_EQ(count(k, TG_KIR_DEFINE_LOCAL), 2) << "an A tile and a B tile";
  EXPECT_EQ(count(k, TG_KIR_BARRIER), 2) << "after the copy, and before the next copy overwrites it";
  EXPECT_EQ(specials(k, TG_SPECIAL_LOCAL), 2);
  EXPECT_EQ(specials(k, TG_SPECIAL_GROUP), 2);
  EXPECT_EQ(count(k, TG_KIR_FMA), 16) << "a 4 x 4 register tile per work-item";
  EXPECT_EQ(k.dims.local[0] * k.dims.local[1], 256u);
  EXPECT_EQ(uint64_t{k.dims.global[0]} * k.dims.global[1] * 256u * 16u, 128u * 64u) << "every output once";
  // UPCASTs after the plan set the outputs per work-item: 2 x 1 here, so 4x as many work-groups
  const KirProgram small = lower_all(a.matmul(b), gpu_caps(),
                                     LowerOpts{Opts{{OptOp::LOCAL}, {OptOp::UPCAST, 0, 2}, {OptOp::UPCAST, 1, 1}}})[0];
  EXPECT_EQ(count(small, TG_KIR_FMA), 2);
  EXPECT_EQ(uint64_t{small.dims.global[0]} * small.dims.global[1] * 256u * 2u, 128u * 64u);
  // a batch of products puts the batch on the grid's third dim
  auto batched = lower_all(buffer({3, 64, 64}).matmul(buffer({3, 64, 64})), gpu_caps());
  ASSERT_EQ(batched.size(), 1u);
  EXPECT_EQ(batched[0].dims.global[2], 3u);
  EXPECT_EQ(count(batched[0], TG_KIR_DEFINE_LOCAL), 2);
  // too small to share a tile, or not a product: no local memory
  EXPECT_EQ(count(lower_all(buffer({8, 32}).matmul(buffer({32, 8})), gpu_caps())[0], TG_KIR_DEFINE_LOCAL), 0);
}

// IMAGE=1 on a renderer that reads images: read-only float32 inputs whose size is a multiple of 4 texel lanes
// become image parameters (the widest power-of-two view that fits), their PARAMs address space IMAGE; outputs,
// other dtypes and odd sizes stay buffers, and without IMAGE=1 nothing changes.
TEST(GpuLowering, ReadOnlyFloatInputsAreReadThroughImages) {
  tg_renderer_caps caps = gpu_caps();
  caps.image_max_width = 64, caps.image_max_height = 1024;
  Tensor a = buffer({32, 96}), b = buffer({32, 96}), odd = buffer({3, 5});
  Tensor ints = Tensor::from_vector(std::vector<int32_t>(32 * 96), {32, 96}, dtypes::int32);
  auto program = [&](bool images) {
    return lower_all((a + b) * ints.cast(dtypes::float32) + odd.sum(), caps, LowerOpts{.switches = {.images = images}});
  };
  for (const KirProgram& k : program(false))
    for (const tg_kir_param& p : k.params) EXPECT_NE(p.kind, TG_PARAM_IMAGE) << "IMAGE is not set";
  std::vector<KirProgram> kirs = program(true);
  const KirProgram& k = kirs.back();  // the elementwise kernel: data0 out, then a, b, ints, the sum
  ASSERT_GE(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].kind, TG_PARAM_BUFFER) << "outputs are written, never images";
  int images = 0;
  for (size_t i = 1; i < k.params.size(); ++i) {
    const tg_kir_param& p = k.params[i];
    if (p.kind != TG_PARAM_IMAGE) continue;
    ++images;
    EXPECT_EQ(p.dtype, TG_DTYPE_FLOAT32);
    EXPECT_EQ(p.reserved, 64u) << "32 * 96 / 4 = 768 texels: 64 wide, 12 high";
    for (const tg_kir_inst& in : k.insts)
      if (in.op == TG_KIR_PARAM && in.arg.i == static_cast<int64_t>(i)) {
        EXPECT_EQ(in.addrspace, TG_ADDR_IMAGE);
      }
  }
  EXPECT_EQ(images, 2) << "a and b; not the int32 input, not the one-element sum";
}

// A GPU with NVIDIA's m16n8k16 float16 tensor core.
const tg_tensor_core kHalfCore = sdk::mma_m16n8k16(TG_DTYPE_FLOAT16);
tg_renderer_caps tensor_core_caps() {
  tg_renderer_caps caps = gpu_caps();
  caps.tensor_cores = &kHalfCore, caps.ntensor_cores = 1;
  return caps;
}

Tensor half_buffer(Shape shape) { return buffer(std::move(shape)).cast(dtypes::float16).contiguous().realize(); }

TEST(GpuLowering, HalfMatmulRunsOnTensorCores) {
  auto kirs = lower_all(half_buffer({128, 64}).matmul(half_buffer({64, 128})), tensor_core_caps());
  ASSERT_EQ(kirs.size(), 1u);
  const KirProgram& k = kirs[0];
  // 2 x 2 warps of 32, each 2 x 4 tiles of m16n8 per k-step of 16, two k-steps per 32-wide K tile
  EXPECT_EQ(count(k, TG_KIR_WMMA), 2 * 4 * 2);
  // UPCASTs after the plan set the m16n8 tiles per warp: 1 x 2 gives 4 WMMAs per K tile of 32
  EXPECT_EQ(count(lower_all(half_buffer({128, 64}).matmul(half_buffer({64, 128})), tensor_core_caps(),
                            LowerOpts{Opts{{OptOp::TC}, {OptOp::UPCAST, 0, 1}, {OptOp::UPCAST, 1, 2}}})[0],
                  TG_KIR_WMMA),
            1 * 2 * 2);
  EXPECT_EQ(k.dims.local[0], 128u);
  EXPECT_EQ(k.dims.global[0] * k.dims.global[1], 2u * 2u) << "64 x 64 blocks";
  EXPECT_EQ(count(k, TG_KIR_DEFINE_LOCAL), 2);
  for (const tg_kir_inst& in : k.insts) {
    if (in.op == TG_KIR_DEFINE_LOCAL) {
      EXPECT_EQ(in.dtype, TG_DTYPE_FLOAT16) << "tiles are staged as float16, not widened";
    }
    if (in.op == TG_KIR_WMMA) {
      EXPECT_EQ(in.vcount, 4);
    }
  }
  // float32 has no tensor core here: the tiled path; and TC=0 turns tensor cores off
  EXPECT_EQ(count(lower_all(buffer({128, 64}).matmul(buffer({64, 128})), tensor_core_caps())[0], TG_KIR_WMMA), 0);
  const LowerOpts no_tc{.switches = {.tensor_cores = false}};
  EXPECT_EQ(count(lower_all(half_buffer({128, 64}).matmul(half_buffer({64, 128})), tensor_core_caps(), no_tc)[0],
                  TG_KIR_WMMA),
            0);
  // a K that is no multiple of the tensor core's 16 stays off them
  EXPECT_EQ(count(lower_all(half_buffer({128, 72}).matmul(half_buffer({72, 128})), tensor_core_caps())[0], TG_KIR_WMMA),
            0);
}

// One K tile (K = 32 = BK, so the plan's tile loop runs once): every statement once - 2 x 4 tiles x 2 k-steps of
// WMMA, two barriers - and each fragment's neighbouring lanes (a0/a1, ...) one 2-lane load from local memory.
TEST(GpuLowering, OneKTileIsEmittedOnce) {
  const KirProgram k = lower_all(half_buffer({64, 32}).matmul(half_buffer({32, 64})), tensor_core_caps())[0];
  EXPECT_EQ(count(k, TG_KIR_WMMA), 2 * 4 * 2);
  EXPECT_EQ(count(k, TG_KIR_BARRIER), 2);
  int pair_loads = 0, scalar_local_loads = 0;
  for (const tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_LOAD && k.insts[k.src_pool[in.src_start]].op == TG_KIR_DEFINE_LOCAL)
      (in.vcount == 2 ? pair_loads : scalar_local_loads) += 1;
  // per k-step: 2 A fragments of 8 lanes (4 pairs each), 4 B fragments of 4 lanes (2 pairs each)
  EXPECT_EQ(pair_loads, 2 * (2 * 4 + 4 * 2));
  EXPECT_EQ(scalar_local_loads, 0);
}

TEST(GpuLowering, MalformedTensorCoresAreIgnored) {
  tg_tensor_core bad = kHalfCore;
  bad.a_map[0] = TG_TC_LANE(7);  // a lane bit past log2(32)
  tg_renderer_caps caps = gpu_caps();
  caps.tensor_cores = &bad, caps.ntensor_cores = 1;
  EXPECT_NE(sdk::tc_problem(bad), "");
  EXPECT_EQ(count(lower_all(half_buffer({128, 64}).matmul(half_buffer({64, 128})), caps)[0], TG_KIR_WMMA), 0);
}

// t's one kernel lowered with `actions` for `device` and run there (render, compile, launch); its output.
std::vector<float> run_listed(const Tensor& t, const std::string& device, const Opts& actions) {
  const PlannedSchedule planned({t.node()}, device);
  EXPECT_EQ(planned.items().size(), 1u);
  const KirProgram k = lower_kernel(planned.items().at(0).kernel, rt::Device::get(device).caps(), LowerOpts{actions});
  run_lowered(k, planned.items()[0], planned.bufs(0));
  std::vector<float> out(static_cast<size_t>(t.numel()));
  planned.root().copy_out(out.data(), out.size() * sizeof(float));
  return out;
}

// Products on a GPU device against a host loop in double: plain, batched, with a transposed operand and a fused
// epilogue, in float32 and float16 (which is multiplied exactly and summed in float32).
void check_matmul_results(const std::string& device, uint32_t seed) {
  SCOPED_TRACE(device);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  auto host = [&](int64_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  const int64_t B = 2, M = 96, K = 80, N = 112;
  std::vector<float> a = host(B * M * K), b = host(B * K * N), bias = host(N);
  Tensor ta = Tensor::from_vector(a, {B, M, K}, device), tb = Tensor::from_vector(b, {B, K, N}, device);
  Tensor tbias = Tensor::from_vector(bias, {N}, device);
  auto ref = [&](int64_t z, int64_t i, int64_t j) {
    double s = 0;
    for (int64_t q = 0; q < K; ++q) s += double{a[(z * M + i) * K + q]} * b[(z * K + q) * N + j];
    return s;
  };
  // where the device has a float32 tensor core (QCOM_EMULATE_TENSOR_CORES=1), the product must use it
  const tg_renderer_caps& caps = rt::Device::get(device).caps();
  if (std::optional<tg_tensor_core> tc = sdk::tensor_core_at(caps, 0); tc && tc->dtype_in == TG_DTYPE_FLOAT32) {
    EXPECT_GT(count(lower_all(ta.matmul(tb), caps)[0], TG_KIR_WMMA), 0);
  }
  auto got = (ta.matmul(tb) + tbias).relu().to_vector<float>();
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        ASSERT_NEAR(got[(z * M + i) * N + j], std::max(0.0, ref(z, i, j) + bias[j]), 1e-4) << z << "," << i << "," << j;
  // an 8 x 8 work-group (LOCAL's size) computes the same products (M and N are multiples of 8 x 4)
  const Tensor flat_a = Tensor::from_vector(std::vector<float>(a.begin(), a.begin() + M * K), {M, K}, device);
  const Tensor flat_b = Tensor::from_vector(std::vector<float>(b.begin(), b.begin() + K * N), {K, N}, device);
  const auto local8 = run_listed(flat_a.matmul(flat_b), device, {{OptOp::LOCAL, 0, 8}});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      ASSERT_NEAR(local8[i * N + j], ref(0, i, j), 1e-4) << "LOCAL(0,8) " << i << "," << j;
  // A given as its transpose (k-major): the same products
  Tensor at = Tensor::from_vector(a, {B, M, K}, device).transpose(1, 2).contiguous().transpose(1, 2);
  auto got_t = at.matmul(tb).to_vector<float>();
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        ASSERT_NEAR(got_t[(z * M + i) * N + j], ref(z, i, j), 1e-4) << z << "," << i << "," << j;
  // float16 inputs: products of halves are exact in float32, so the reference rounds the inputs only
  Tensor ha = ta.cast(dtypes::float16), hb = tb.cast(dtypes::float16);
  std::vector<float> ah = ha.cast(dtypes::float32).to_vector<float>(), bh = hb.cast(dtypes::float32).to_vector<float>();
  auto got_h = ha.matmul(hb).cast(dtypes::float32).to_vector<float>();
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t q = 0; q < K; ++q) s += double{ah[(z * M + i) * K + q]} * bh[(z * K + q) * N + j];
        ASSERT_NEAR(got_h[(z * M + i) * N + j], s, std::abs(s) * 1e-3 + 1e-3) << z << "," << i << "," << j;
      }
}

// On every GPU-model device present (QCOM on PoCL in CI; NV on a CUDA machine): the grouped and gridded kernels
// compute what host loops do.
void check_gpu_results(const std::string& device, uint32_t seed) {
  SCOPED_TRACE(device);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t rows = 3, n = 10007;  // a prime: the last work-group pass is partial
  std::vector<float> x(rows * n);
  for (auto& v : x) v = u(rng);
  Tensor t = Tensor::from_vector(x, {rows, n}, device);
  auto got = (t.sum({1}) + t.max({1})).to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) s += x[r * n + j], m = std::max(m, x[r * n + j]);
    EXPECT_NEAR(got[r], s + m, 1e-3) << "row " << r;
  }
  // the same reductions with the work-group sizes given (a size that is no power of two included)
  for (int group : {2, 48, 128}) {
    const auto listed = run_listed(t.sum({1}) + t.max({1}), device, {{OptOp::GROUP, 0, group}});
    for (int64_t r = 0; r < rows; ++r) EXPECT_NEAR(listed[r], got[r], 1e-3) << "GROUP(0," << group << ") row " << r;
  }
  std::vector<float> a(6 * 40 * 96);
  for (auto& v : a) v = u(rng);
  Tensor ta = Tensor::from_vector(a, {6, 40, 96}, device);
  const tg_renderer_caps& caps = rt::Device::get(device).caps();
  if (std::getenv("IMAGE") && std::string(std::getenv("IMAGE")) == "1" && caps.image_max_width > 0) {
    // the switch as the runtime reads it from the environment
    const KirProgram k =
        lower_all(ta * 2.0f + 1.0f, caps, LowerOpts{.switches = {.images = rt::read_options().images}}).back();
    EXPECT_TRUE(std::any_of(k.params.begin(), k.params.end(), [](const tg_kir_param& p) {
      return p.kind == TG_PARAM_IMAGE;
    })) << "IMAGE=1 on a device that reads images, yet the input is a plain buffer";
  }
  auto e = (ta * 2.0f + 1.0f).to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(e[i], a[i] * 2.0f + 1.0f) << "element " << i;
  // five loops on three dims (the outer ones collapsed into one): a permutation, element by element
  Tensor t5 =
      Tensor::from_vector(std::vector<float>(a.begin(), a.begin() + 2 * 3 * 4 * 5 * 32), {2, 3, 4, 5, 32}, device);
  auto p = t5.permute({4, 2, 0, 3, 1}).contiguous().to_vector<float>();
  size_t at = 0;
  for (int64_t i4 = 0; i4 < 32; ++i4)
    for (int64_t i2 = 0; i2 < 4; ++i2)
      for (int64_t i0 = 0; i0 < 2; ++i0)
        for (int64_t i3 = 0; i3 < 5; ++i3)
          for (int64_t i1 = 0; i1 < 3; ++i1, ++at)
            ASSERT_EQ(p[at], a[(((i0 * 3 + i1) * 4 + i2) * 5 + i3) * 32 + i4]) << "permuted element " << at;
}

TEST(GpuLowering, ResultsOnGpuDevices) {
  uint32_t seed = std::random_device{}();
  std::cout << "seed=" << seed << "\n";
  int checked = 0;
  for (const std::string& name : available_devices()) {
    if (!is_gpu(rt::Device::get(name).caps())) continue;
    check_gpu_results(name, seed);
    check_matmul_results(name, seed);
    ++checked;
  }
  // the emulated tensor-core run exists to check them: without the device it would prove nothing
  if (std::getenv("QCOM_EMULATE_TENSOR_CORES")) {
    ASSERT_GT(checked, 0) << "QCOM_EMULATE_TENSOR_CORES is set but no GPU device opened";
  }
  if (checked == 0) GTEST_SKIP() << "no device with work-groups and local memory (QCOM on OpenCL, NV on CUDA)";
}

}  // namespace
}  // namespace tg::codegen
