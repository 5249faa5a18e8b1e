// Lowering to KIR against a real device with edited capabilities: decompositions replace what a renderer lacks,
// upcasting produces vector instructions only where the renderer takes them, and results stay the same.
#include "codegen/lower.hpp"
#include "../planned_schedule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

using CapsEdit = std::function<void(tg_renderer_caps&)>;

struct Lowered {
  std::vector<float> out;
  std::vector<KirProgram> kirs;
};

// Schedules t, lowers every kernel with edited caps, then renders, compiles and runs it on t's device.
Lowered run_with_caps(const Tensor& t, const CapsEdit& edit) {
  const PlannedSchedule planned({t.node()}, t.device());
  Lowered r;
  for (size_t i = 0; i < planned.items().size(); ++i) {
    const auto bufs = planned.bufs(i);
    tg_renderer_caps caps = bufs[0]->device().caps();
    edit(caps);
    KirProgram k = lower_kernel(planned.items()[i].kernel, caps);
    run_lowered(k, planned.items()[i], bufs);
    r.kirs.push_back(std::move(k));
  }
  r.out.resize(static_cast<size_t>(t.numel()));
  planned.root().copy_out(r.out.data(), r.out.size() * sizeof(float));
  return r;
}

int64_t ulp_diff(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4), std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::abs(static_cast<int64_t>(ia) - ib);
}

void drop_op(tg_renderer_caps& c, tg_kir_op op) {
  for (auto& m : c.ops) m &= ~(1ull << op);
}

bool has_vector_inst(const KirProgram& k) {
  for (const auto& in : k.insts)
    if (in.vcount > 1) return true;
  return false;
}

struct Case {
  const char* name;
  tg_kir_op op;
  std::function<Tensor(const Tensor&)> fn;
  double (*ref)(double);
  double lo, hi;
  int64_t max_ulp;
};

TEST(Decompositions, TranscendentalsWithoutRendererSupport) {
  uint32_t seed = std::random_device{}();
  std::cout << "decomposition seed=" << seed << "\n";
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const Case cases[] = {
      {"exp2", TG_KIR_EXP2, [](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -140, 120,
       2},
      {"log2", TG_KIR_LOG2, [](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 1e-30,
       1e30, 2},
      {"sin", TG_KIR_SIN, [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -1000, 1000,
       3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<float> xs;
    std::uniform_real_distribution<double> u(c.lo, c.hi);
    for (int i = 0; i < 4096; ++i)
      xs.push_back(static_cast<float>(c.op == TG_KIR_LOG2 ? std::exp(u(rng) / c.hi * 69) : u(rng)));
    for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, 0.5f, 1e-40f}) xs.push_back(s);
    Tensor x = Tensor::from_vector(xs, {static_cast<int64_t>(xs.size())});
    Lowered r = run_with_caps(c.fn(x), [&](tg_renderer_caps& caps) { drop_op(caps, c.op); });
    for (const auto& k : r.kirs)
      for (const auto& in : k.insts) ASSERT_NE(in.op, c.op) << "renderer lacks the op, yet KIR uses it";
    int64_t worst = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = static_cast<float>(c.ref(xs[i]));
      int64_t d = ulp_diff(r.out[i], want);
      EXPECT_LE(d, c.max_ulp) << c.name << "(" << xs[i] << ") = " << r.out[i] << ", want " << want;
      worst = std::max(worst, d);
    }
    std::cout << c.name << " float32 via polynomial: max " << worst << " ulp over " << xs.size() << " points\n";
  }
}

TEST(Upcast, VectorInstructionsOnlyWhereTheRendererTakesThem) {
  std::vector<float> a(1024), b(1024), c(1024);
  for (int i = 0; i < 1024; ++i) a[i] = i * 0.5f, b[i] = 3.0f - i, c[i] = i % 7;
  Tensor ta = Tensor::from_vector(a, {1024}), tb = Tensor::from_vector(b, {1024}), tc = Tensor::from_vector(c, {1024});
  Tensor expr = ta * tb + tc;
  Lowered vec = run_with_caps(expr, [](tg_renderer_caps&) {});
  Lowered scalar = run_with_caps(expr, [](tg_renderer_caps& caps) {
    for (auto& w : caps.vector_widths) w = 1u << 1;
  });
  ASSERT_EQ(vec.kirs.size(), 1u);
  EXPECT_TRUE(has_vector_inst(vec.kirs[0]));
  EXPECT_FALSE(has_vector_inst(scalar.kirs[0]));
  for (int i = 0; i < 1024; ++i) {
    float want = a[i] * b[i] + c[i];
    ASSERT_EQ(vec.out[i], want) << i;
    ASSERT_EQ(scalar.out[i], want) << i;
  }
}

TEST(Upcast, NoOptLowersThePlainLoopNest) {
  const Tensor a = Tensor::rand({32, 64}, 3), b = Tensor::rand({64, 48}, 4);
  const sched::Schedule schedule = sched::create_schedule({a.matmul(b).node()}, a.device());
  for (const auto& it : schedule.items) {
    const tg_renderer_caps caps = rt::Device::get(a.device()).caps();
    EXPECT_TRUE(has_vector_inst(lower_kernel(it.kernel, caps))) << "the heuristics should vectorize a matmul";
    EXPECT_FALSE(has_vector_inst(lower_kernel(it.kernel, caps, plain_loops())));
  }
}

// The pipeline's switches: DEBUG=5 shows the plan after each named step ("(unchanged)" where it had nothing to
// do), TG_TIME_PASSES each step's time; the KIR is the same either way.
TEST(Pipeline, DebugShowsEveryStepAndTimePassesTimesThem) {
  const Tensor a = Tensor::rand({64, 64}, 5), b = Tensor::rand({64, 64}, 6);
  auto items = sched::create_schedule({a.matmul(b).node()}, a.device()).items;
  ASSERT_EQ(items.size(), 1u);
  const tg_renderer_caps caps = rt::Device::get(a.device()).caps();
  const KirProgram quiet = lower_kernel(items[0].kernel, caps);
  testing::internal::CaptureStderr();
  const KirProgram shown =
      lower_kernel(items[0].kernel, caps, LowerOpts{.switches = {.debug = 5, .time_passes = true}});
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(shown.hash(), quiet.hash()) << "the switches changed the kernel";
  const std::string name = items[0].kernel.name;
  for (const char* step : {"simplify_indices:", "apply_opts:", "linearize:"})
    EXPECT_NE(log.find("lower " + name + ": after " + step), std::string::npos) << step << "\n" << log;
  EXPECT_NE(log.find("after take_as_written (unchanged)"), std::string::npos) << log;
  EXPECT_NE(log.find("TG_TIME_PASSES " + name + ": check_spec"), std::string::npos) << log;
}

TEST(Upcast, StridedLoadsAreGatheredAndCorrect) {
  // a transposed input is strided along the upcast axis: its lanes are loaded one by one, the store is a vector
  std::vector<float> a(12 * 8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  Tensor t = Tensor::from_vector(a, {12, 8}).transpose().contiguous();
  Lowered r = run_with_caps(t, [](tg_renderer_caps&) {});
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 12; ++j) ASSERT_EQ(r.out[i * 12 + j], a[j * 8 + i]);
}

// A matmul tile under a per-lane epilogue (a select: renderers share no bool vectors): the expand step leaves the
// select per lane, yet the tile's reductions under it still share one reduce loop (lower_reduces: one END for them),
// and the result matches a float64 loop.
TEST(Expand, ReductionsUnderAPerLaneEpilogueShareOneLoop) {
  const int64_t M = 24, K = 64, N = 48;
  Tensor a = Tensor::rand({M, K}, 11) - 0.5, b = Tensor::rand({K, N}, 12) - 0.5;
  const Tensor m = a.matmul(b);
  const Tensor y = Tensor::where(m.lt(Tensor::full({M, N}, 0.0)), m * 0.125, m);
  Lowered r = run_with_caps(y, [](tg_renderer_caps&) {});
  ASSERT_EQ(r.kirs.size(), 1u);
  const KirProgram& k = r.kirs[0];
  int reduce_loops = 0;
  for (const auto& in : k.insts)
    if (in.op == TG_KIR_RANGE) {
      const tg_kir_inst& end = k.insts[static_cast<size_t>(k.src_pool[in.src_start])];
      reduce_loops += end.op == TG_KIR_CONST && end.arg.i == K;
    }
  EXPECT_EQ(reduce_loops, 1) << "every row and vector of the tile accumulates in the one K loop";
  const std::vector<float> ha = a.to_vector<float>(), hb = b.to_vector<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(ha[i * K + k]) * hb[k * N + j];
      const double want = acc < 0 ? acc * 0.125 : acc;
      ASSERT_NEAR(r.out[i * N + j], want, 1e-4) << i << "," << j;
    }
}

}  // namespace
}  // namespace tg::codegen
