// Optimization actions (codegen/opt.hpp) one list at a time: each list lowers a kernel whose result, run on the
// CPU device, is checked against a float64 loop; the KIR shows what the list asked for; lists that do not apply
// fail naming the action and the reason; the heuristic's list for a shape is the one worked out by hand from its
// rules (heuristic.hpp); BEAM's space holds distinct lists; lists survive the BEAM cache's encoding.
#include "codegen/opt.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../planned_schedule.hpp"
#include "codegen/lower.hpp"
#include "codegen/search.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device.hpp"
#include "runtime/executor.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

constexpr OptOp UPCAST = OptOp::UPCAST, PADTO = OptOp::PADTO, STAGE = OptOp::STAGE, THREAD = OptOp::THREAD;

struct Matmul {
  int64_t m, k, n;
  std::vector<float> a, b;
  std::optional<PlannedSchedule> planned;

  // `operands`: float32, or bfloat16 operands of a float32 product (a.cast(float32).matmul(b.cast(float32)))
  Matmul(int64_t m_, int64_t k_, int64_t n_, uint64_t seed, DType operands = dtypes::float32)
      : m(m_), k(k_), n(n_), a(m * k), b(k * n) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const bool bf16 = operands == dtypes::bfloat16;
    for (float& x : a) x = bf16 ? to_bfloat16(dist(rng)) : dist(rng);
    for (float& x : b) x = bf16 ? to_bfloat16(dist(rng)) : dist(rng);
    Tensor ta = Tensor::from_vector(a, {m, k}), tb = Tensor::from_vector(b, {k, n});
    if (bf16) ta = ta.cast(operands), tb = tb.cast(operands);  // exact: the values are bfloat16 already
    ta.realize(), tb.realize();
    if (bf16) ta = ta.cast(dtypes::float32), tb = tb.cast(dtypes::float32);
    planned.emplace(std::vector<ir::UOpPtr>{ta.matmul(tb).node()}, "CPU");
  }
  // x rounded to the nearest bfloat16 (ties to even), by its bits: the top 16 of the float32's
  static float to_bfloat16(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  const sched::ScheduleItem& item() const { return planned->items().at(0); }
  KirProgram lower(const std::optional<Opts>& actions) const {
    return lower_kernel(item().kernel, rt::Device::get("CPU").caps(), LowerOpts{actions});
  }
  // Runs `kir` on the kernel's buffers; the largest error against a float64 loop, in units of the float32
  // accumulation bound (k ulps of the sum of magnitudes): <= 1 passes.
  double run_error(const KirProgram& kir) const {
    run_lowered(kir, item(), planned->bufs(0));
    std::vector<float> got(m * n);
    planned->root().copy_out(got.data(), got.size() * sizeof(float));
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p)
          ref += double{a[i * k + p]} * b[p * n + j], mag += std::abs(double{a[i * k + p]} * b[p * n + j]);
        worst = std::max(worst, std::abs(got[i * n + j] - ref) / (mag * k * 0x1p-24));
      }
    return worst;
  }
};

// Stores of `lanes` lanes into the output (a parameter; accumulators are registers).
int output_stores(const KirProgram& k, int lanes) {
  int c = 0;
  for (const tg_kir_inst& in : k.insts)
    c += in.op == TG_KIR_STORE && in.vcount == lanes && k.insts[k.src_pool[in.src_start]].op == TG_KIR_PARAM;
  return c;
}

// A private array of at least two vectors of 8 per reduce step: a staged panel (accumulators are smaller).
bool has_panel(const KirProgram& k, int64_t reduce) {
  for (const tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_DEFINE_REG && in.arg.i >= reduce * 16) return true;
  return false;
}

uint64_t print_seed(const char* what) {
  const uint64_t seed = std::random_device{}();
  std::cout << what << " seed=" << seed << "\n";
  return seed;
}

// Each list on its own: what it asks for shows in the KIR (vector width, accumulators, the staged panel, the gated
// stores of padded vectors) and the product is right. Axis 0 is the rows (m), axis 1 the columns (n).
TEST(Opt, EachListLowersWhatItSaysAndComputesTheProduct) {
  const Matmul mm(64, 96, 200, print_seed("action lists"));  // 200 columns: 25 vectors of 8
  struct Case {
    Opts opts;
    int vector_stores;  // output stores of 8 lanes (one per tile entry)
    bool staged;
  } cases[] = {
      {{}, 0, false},
      {{{UPCAST, 1, 8}}, 1, false},
      {{{UPCAST, 1, 4}}, 0, false},                                   // 4 lanes: stores of 4, none of 8
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}}, 4, false},                   // 4 rows x 1 vector
      {{{UPCAST, 1, 8}, {UPCAST, 0, 2}, {UPCAST, 1, 5}}, 10, false},  // 2 x 5: 25 vectors are 5 tiles
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {UPCAST, 1, 5}, {STAGE, 0, 0}}, 20, true},
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {PADTO, 1, 3}, {UPCAST, 1, 3}, {STAGE, 0, 0}},
       12,
       true},  // 27 vectors, 2 gated
      {{{UPCAST, 1, 8}, {PADTO, 0, 6}, {UPCAST, 0, 6}, {UPCAST, 1, 5}, {STAGE, 0, 0}}, 30, true},  // 66 rows, 2 gated
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str(c.opts));
    const KirProgram kir = mm.lower(c.opts);
    EXPECT_EQ(kir.opts, c.opts) << "the lowered program does not record its list";
    EXPECT_EQ(output_stores(kir, 8), c.vector_stores) << kir.dump();
    EXPECT_EQ(has_panel(kir, mm.k), c.staged) << kir.dump();
    if (c.opts.size() == 1 && c.opts[0].amount == 4) {
      EXPECT_EQ(output_stores(kir, 4), 1);
    }
    EXPECT_LE(mm.run_error(kir), 1.0);
  }
}

// bfloat16 operands of a float32 product: the staged panel holds the operand converted to float32 (converted once
// per copy, not once per row tile), and the product is right.
TEST(Opt, StagedPanelHoldsTheConvertedOperand) {
  const Matmul mm(64, 96, 200, print_seed("bfloat16 operands"), dtypes::bfloat16);
  const Opts staged{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {PADTO, 1, 3}, {UPCAST, 1, 3}, {STAGE, 0, 0}};
  const KirProgram kir = mm.lower(staged);
  EXPECT_EQ(kir.opts, staged);
  bool float_panel = false;
  for (const tg_kir_inst& in : kir.insts)
    float_panel |= in.op == TG_KIR_DEFINE_REG && in.arg.i >= mm.k * 16 && in.dtype == TG_DTYPE_FLOAT32;
  EXPECT_TRUE(float_panel) << kir.dump();
  EXPECT_LE(mm.run_error(kir), 1.0);
}

// A sum over each row of x (rows x cols) or over each column, lowered with a list; the sums checked against float64.
struct Sum {
  int64_t rows, cols;
  bool over_rows;  // x.sum({1}) (each row's sum), else x.sum({0})
  std::vector<float> x;
  std::optional<PlannedSchedule> planned;
  Sum(int64_t r, int64_t c, bool rowwise, uint64_t seed) : rows(r), cols(c), over_rows(rowwise), x(r * c) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : x) v = dist(rng);
    Tensor t = Tensor::from_vector(x, {rows, cols});
    t.realize();
    planned.emplace(std::vector<ir::UOpPtr>{t.sum({over_rows ? 1 : 0}).node()}, "CPU");
  }
  KirProgram lower(const std::optional<Opts>& actions) const {
    return lower_kernel(planned->items().at(0).kernel, rt::Device::get("CPU").caps(), LowerOpts{actions});
  }
  // largest error in units of the float32 accumulation bound (n ulps of the sum of magnitudes)
  double run_error(const KirProgram& kir) const {
    run_lowered(kir, planned->items().at(0), planned->bufs(0));
    const int64_t n_out = over_rows ? rows : cols, n = over_rows ? cols : rows;
    std::vector<float> got(n_out);
    planned->root().copy_out(got.data(), got.size() * sizeof(float));
    double worst = 0;
    for (int64_t o = 0; o < n_out; ++o) {
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = over_rows ? x[o * cols + i] : x[i * cols + o];
        ref += v, mag += std::abs(v);
      }
      worst = std::max(worst, std::abs(got[o] - ref) / (mag * n * 0x1p-24));
    }
    return worst;
  }
};

// The widest accumulator vector in the KIR: a private array of that many lanes (1 when every one is scalar).
int accumulator_lanes(const KirProgram& k) {
  int lanes = 1;
  for (const tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_DEFINE_REG && in.arg.i == 1) lanes = std::max(lanes, static_cast<int>(in.vcount));
  return lanes;
}

// UNROLL(axis, w) keeps w lanes of a reduce loop per iteration in one vector accumulator; reduce loops are numbered
// after the output loops (a row sum: axis 0 the rows, axis 1 the loop along each row).
TEST(Opt, UnrollKeepsLanesOfTheReduceLoopInOneVector) {
  const Sum sum(64, 256, true, print_seed("unroll"));
  for (int w : {4, 8, 16}) {
    const Opts list{{OptOp::UNROLL, 1, w}};
    SCOPED_TRACE(str(list));
    const KirProgram kir = sum.lower(list);
    EXPECT_EQ(kir.opts, list);
    EXPECT_EQ(accumulator_lanes(kir), w) << kir.dump();
    EXPECT_LE(sum.run_error(kir), 1.0);
  }
  const KirProgram plain = sum.lower(Opts{});
  EXPECT_EQ(accumulator_lanes(plain), 1) << "without UNROLL the reduction is scalar\n" << plain.dump();
  EXPECT_LE(sum.run_error(plain), 1.0);
  // the heuristic unrolls the row's loop (the widest vector the renderer has) and leaves the rows alone: their
  // lanes would be gathered (a row is 256 floats apart)
  const KirProgram chosen = sum.lower(std::nullopt);
  ASSERT_EQ(chosen.opts.size(), 1u) << str(chosen.opts);
  EXPECT_EQ(chosen.opts[0].op, OptOp::UNROLL);
  EXPECT_EQ(chosen.opts[0].axis, 1);
  EXPECT_EQ(accumulator_lanes(chosen), chosen.opts[0].amount);
  EXPECT_LE(sum.run_error(chosen), 1.0);
}

TEST(Opt, UnrollsThatDoNotApplySayWhy) {
  const Sum rows(64, 256, true, 3), columns(256, 64, false, 4);
  const struct {
    const Sum& sum;
    Opts opts;
    std::string message;
  } cases[] = {
      {rows, {{OptOp::UNROLL, 0, 8}}, "UNROLL(0,8) after [] does not apply: the kernel's reduce loops are axes 1 to 2"},
      {rows, {{OptOp::UNROLL, 1, 1}}, "an UNROLL takes 2 or more"},
      {rows, {{OptOp::UNROLL, 1, 3}}, "a reduction over it has no vector of 3 float32 accumulators"},
      {rows,
       {{OptOp::UNROLL, 1, 8}, {OptOp::UNROLL, 1, 4}},
       "UNROLL(1,4) after [UNROLL(1,8)] does not apply: the reduce loop is unrolled already"},
      {columns, {{OptOp::UNROLL, 1, 8}}, "its lanes would be gathered"},  // a column's values are 64 floats apart
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(str(c.opts));
    try {
      c.sum.lower(c.opts);
      ADD_FAILURE() << "applied";
    } catch (const OptError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

// A list that does not apply fails with the action, what came before it, and why.
TEST(Opt, ListsThatDoNotApplyNameTheActionAndWhy) {
  const Matmul mm(64, 96, 200, 7);
  const struct {
    Opts opts;
    std::string message;
  } cases[] = {
      {{{UPCAST, 0, 4}}, "UPCAST(0,4) after [] does not apply: the innermost loop is upcast first"},
      {{{UPCAST, 1, 8}, {UPCAST, 2, 2}},
       "UPCAST(2,2) after [UPCAST(1,8)] does not apply: the kernel has 2 output loops"},
      {{{UPCAST, 1, 3}}, "3 does not divide its 200 iterations"},
      {{{UPCAST, 1, 8}, {UPCAST, 0, 5}}, "5 rows do not divide the row loop's 64 iterations"},
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {PADTO, 1, 3}, {UPCAST, 1, 3}}, "a padded vector loop needs STAGE"},
      {{{UPCAST, 1, 8}, {PADTO, 0, 6}, {UPCAST, 0, 6}, {PADTO, 1, 3}, {UPCAST, 1, 3}, {STAGE, 0, 0}},
       "pads its rows or its vectors, not both"},
      {{{UPCAST, 1, 8}, {PADTO, 0, 64}, {PADTO, 0, 2}}, "a PADTO takes 2 or more, once per loop"},
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {UPCAST, 0, 2}}, "the axis is upcast already"},
      {{{OptOp::TC}}, "TC(0,0) after [] does not apply: the renderer has no work-groups"},
      {{{UPCAST, 1, 8}, {THREAD, 0, 2}}, "THREAD takes the loop's whole 64 iterations"},
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {THREAD, 0, 64}}, "THREAD takes the loop's whole 16 iterations"},
      {{{THREAD, 0, 64}, {THREAD, 1, 200}}, "a kernel takes one THREAD"},
      {{{THREAD, 2, 1}}, "the kernel has 2 output loops"},
      {{{THREAD, 0, 0}}, "a THREAD takes the loop's iteration count"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(str(c.opts));
    try {
      mm.lower(c.opts);
      ADD_FAILURE() << "lowered";
    } catch (const OptError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tg: kernel " + mm.item().kernel.name + ": "), std::string::npos)
          << e.what();
    }
  }
}

// The launch grid a host kernel takes: its SPECIAL instruction's extent (1 and none without THREAD).
int64_t grid_of(const KirProgram& k) {
  for (const tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_SPECIAL) return k.dims.global[0];
  return 1;
}

// THREAD(axis, n): the axis' loop, its n iterations once the tile is built, is the grid the CPU device spreads over
// its threads; without it the kernel is one work-item. Each way the product is right.
TEST(Opt, ThreadMakesTheAxisLoopTheGrid) {
  const Matmul mm(64, 96, 200, print_seed("thread"));
  const struct {
    Opts opts;
    int64_t grid;
  } cases[] = {
      {{{UPCAST, 1, 8}}, 1},
      {{{UPCAST, 1, 8}, {THREAD, 0, 64}}, 64},                                               // the rows
      {{{UPCAST, 1, 8}, {THREAD, 1, 25}}, 25},                                               // the 25 vectors of 8
      {{{THREAD, 0, 16}, {UPCAST, 1, 8}, {UPCAST, 0, 4}}, 16},                               // the rows in tiles of 4
      {{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {UPCAST, 1, 5}, {STAGE, 0, 0}, {THREAD, 1, 5}}, 5},  // the column panels
      {{{THREAD, 1, 200}}, 200},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(str(c.opts));
    const KirProgram kir = mm.lower(c.opts);
    EXPECT_EQ(kir.opts, c.opts);
    EXPECT_EQ(grid_of(kir), c.grid) << kir.dump();
    EXPECT_LE(mm.run_error(kir), 1.0);
  }
}

// (THREAD's other refusals are in ListsThatDoNotApplyNameTheActionAndWhy.)
TEST(Opt, ThreadNeedsHostThreads) {
  const Matmul mm(64, 96, 200, 5);
  tg_renderer_caps gpu = rt::Device::get("CPU").caps();
  gpu.has_threads = 0;
  try {
    lower_kernel(mm.item().kernel, gpu, LowerOpts{Opts{{THREAD, 0, 64}}});
    ADD_FAILURE() << "lowered";
  } catch (const OptError& e) {
    EXPECT_NE(std::string(e.what()).find("run on no host threads"), std::string::npos) << e.what();
  }
}

// The heuristic threads a kernel from 32K iterations (where spreading pays, heuristic.cpp) and leaves a smaller one
// on the submitting thread.
TEST(Opt, TheHeuristicThreadsOnlyKernelsWorthIt) {
  const Matmul small(16, 16, 64, 1), large(64, 96, 200, 2);  // 16K and 1.2M iterations
  auto threaded = [](const KirProgram& k) {
    return std::any_of(k.opts.begin(), k.opts.end(), [](const Opt& o) { return o.op == THREAD; });
  };
  const KirProgram s = small.lower(std::nullopt), l = large.lower(std::nullopt);
  EXPECT_FALSE(threaded(s)) << str(s.opts);
  EXPECT_EQ(grid_of(s), 1);
  EXPECT_TRUE(threaded(l)) << str(l.opts);
  EXPECT_GT(grid_of(l), 1);
  EXPECT_LE(small.run_error(s), 1.0);
  EXPECT_LE(large.run_error(l), 1.0);
}

// The heuristic's list, worked out by hand from heuristic.hpp for a host with 32-byte vectors, 16 registers and
// 512 KiB of L2 (the CPU device reports its own caps; this test gives these):
//  - lanes: one register of float32 = 8, and 1024 columns divide by 8;
//  - tiles: (u*c + c) + 1 <= 16 registers, fewest loads per FMA first: 4 x 3 (7 loads / 12 FMAs) ranks first;
//  - 128 vectors do not divide by 3, but B (1024 x 1024 x 4 bytes) exceeds L2, 256 rows / 4 = 64 row tiles >= 16
//    reuse each panel, and the panel (1024 x 3 x 8 x 4 = 96 KiB) fits half of L2: staged, the vector loop padded
//    to 129 vectors (1 of 128 wasted <= 1/8);
//  - threads: 256 x 1024 x 1024 iterations are far past 32K; the first loop of constant length is the column
//    panels' (the tile puts the vector loop outermost), 129 / 3 = 43 of them: THREAD(1,43).
TEST(Opt, TheHeuristicsListIsTheOneItsRulesGive) {
  const Matmul mm(256, 1024, 1024, 3);
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.simd_bytes = 32, caps.simd_registers = 16, caps.l2_bytes = 512 * 1024;
  const KirProgram kir = lower_kernel(mm.item().kernel, caps, LowerOpts{});
  const Opts want{{UPCAST, 1, 8}, {UPCAST, 0, 4}, {PADTO, 1, 3}, {UPCAST, 1, 3}, {STAGE, 0, 0}, {THREAD, 1, 43}};
  EXPECT_EQ(str(kir.opts), str(want));
  // and the same list given explicitly lowers to the same program
  EXPECT_EQ(lower_kernel(mm.item().kernel, caps, LowerOpts{want}).hash(), kir.hash());
  // NOOPT's empty list: no vector instructions at all
  for (const tg_kir_inst& in : mm.lower(Opts{}).insts) ASSERT_EQ(in.vcount, 1) << kir_op_name(in.op);
}

// BEAM's space: the heuristic's list first, the plain loops among the rest, no two candidates with the same KIR,
// and every candidate's list lowers to that candidate again (the list is all BEAM keeps).
TEST(Opt, TheSearchSpaceIsDistinctListsHeuristicFirst) {
  const Matmul mm(64, 96, 200, 11);
  const tg_renderer_caps& caps = rt::Device::get("CPU").caps();
  const std::vector<KirProgram> space = search_space(mm.item().kernel, caps, {});
  ASSERT_GT(space.size(), 10u);
  EXPECT_EQ(space[0].opts, mm.lower(std::nullopt).opts);
  std::set<uint64_t> hashes;
  bool plain = false;
  for (const KirProgram& k : space) {
    SCOPED_TRACE(str(k.opts));
    EXPECT_TRUE(hashes.insert(k.hash()).second) << "two candidates lower alike";
    EXPECT_EQ(mm.lower(k.opts).hash(), k.hash());
    plain |= k.opts.empty();
  }
  EXPECT_TRUE(plain) << "the plain loop nest is not a candidate";
}

TEST(Opt, ListsSurviveTheBeamCacheEncoding) {
  const Opts lists[] = {{},
                        {{UPCAST, 1, 8}, {UPCAST, 0, 4}, {PADTO, 1, 3}, {UPCAST, 1, 3}, {STAGE, 0, 0}},
                        {{OptOp::TC}, {UPCAST, 0, 1}, {UPCAST, 1, 2}},
                        {{OptOp::GROUP}},
                        {{OptOp::LOCAL, 0, 0}},
                        {{OptOp::UNROLL, 1, 16}}};
  for (const Opts& os : lists) {
    const std::vector<int32_t> v = encode(os);
    const std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(v.data()),
                                     reinterpret_cast<const uint8_t*>(v.data() + v.size()));
    ASSERT_EQ(decode(bytes), std::optional<Opts>(os)) << str(os);
  }
  EXPECT_EQ(str(lists[1]), "[UPCAST(1,8) UPCAST(0,4) PADTO(1,3) UPCAST(1,3) STAGE(0,0)]");
  // what is not a list: a torn triple, an op past the last, a negative axis
  EXPECT_FALSE(decode(std::vector<uint8_t>(11, 0)));
  const int32_t bad_op[] = {kOptOps, 0, 0}, bad_axis[] = {0, -1, 4};
  EXPECT_FALSE(decode(
      std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(bad_op), reinterpret_cast<const uint8_t*>(bad_op + 3))));
  EXPECT_FALSE(decode(std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(bad_axis),
                                           reinterpret_cast<const uint8_t*>(bad_axis + 3))));
}

}  // namespace
}  // namespace tg::codegen
