// GPU plan LOCAL: a matmul tiled through local memory (plan_tiled_matmul).
#include "codegen/gpu/plan_parts.hpp"

#include <algorithm>

namespace tg::codegen {

using namespace ir;

// A matmul on a GPU, tiled through local memory: a T x T work-group (T = 16, or LOCAL's amount) computes a BM x BN
// block of outputs (each work-item TM x TN of them, rows ly + Ti and columns lx + Tj, so neighbours read
// neighbouring local words); per K tile of 16 the group copies the A and B tiles it needs into local memory once
// (every element is then read BN/TN resp. BM/TM times from there instead of from global memory), waits,
// multiplies, and waits again before the next copy. nullopt where the shape does not tile or the device lacks the
// room.
std::optional<WorkGroupPlan> plan_tiled_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                               const tg_renderer_caps& caps, GpuTile tile) {
  const std::optional<Matmul> mm = match_matmul(sink, ranges);
  if (!mm) return std::nullopt;
  constexpr int64_t TK = 16;
  const int64_t T = tile.group > 0 ? tile.group : 16, kThreads = T * T;  // the work-group's edge
  if (T != 8 && T != 16 && T != 32) return std::nullopt;
  const int64_t M = extent(mm->m), N = extent(mm->n), K = extent(mm->k), B = mm->batch ? extent(mm->batch) : 1;
  if (M % T || N % T || K % TK || K < 4 * TK) return std::nullopt;
  int64_t TM = tile.rows > 0 ? std::min(tile.rows, 8) : 4, TN = tile.cols > 0 ? std::min(tile.cols, 8) : 4;
  while (M % (T * TM)) TM /= 2;
  while (N % (T * TN)) TN /= 2;
  const int64_t BM = T * TM, BN = T * TN, lda = BM + 1;  // A is kept k-major; the pad spreads the copy's stores
  if ((BM * TK) % kThreads || (TK * BN) % kThreads) return std::nullopt;  // each work-item copies whole elements
  const DType d = mm->reduce->dtype;
  const uint64_t local_bytes = static_cast<uint64_t>((lda * TK + TK * BN) * d.itemsize());
  if (caps.max_local_threads < kThreads || caps.max_local[0] < T || caps.max_local[1] < T ||
      caps.local_mem_bytes < local_bytes || caps.max_global_dims < (mm->batch ? 3u : 2u) ||
      N / BN > caps.max_global[0] || M / BM > caps.max_global[1] || (mm->batch && B > caps.max_global[2]))
    return std::nullopt;

  int64_t id = next_range_id(sink);
  WorkGroupPlan w;
  const UOpPtr lx = new_range(T, AxisType::LOCAL, id), ly = new_range(T, AxisType::LOCAL, id);
  const auto [gx, gy, as, bs] = blocks(*mm, BM, BN, d, lda * TK, TK * BN, id);
  w.items = {lx, ly};
  w.groups = {gx, gy};
  if (mm->batch) w.groups.push_back(mm->batch);
  const UOpPtr acc = UOp::make(Op::DEFINE_REG, d, {}, std::vector<int64_t>{TM * TN, id++});
  auto slot = [](int64_t q) { return const_int(dtypes::int32, q); };
  std::vector<UOpPtr> init;  // every accumulator starts at 0
  for (int64_t q = 0; q < TM * TN; ++q)
    init.push_back(UOp::make(Op::STORE, d, {acc, slot(q), reduce_identity(ReduceOp::SUM, d)}));

  // per K tile: the group copies A's and B's tiles into local memory, waits, multiplies from there, waits again
  const UOpPtr kt = new_range(K / TK, AxisType::LOOP, id), tid = ly * T + lx;
  std::vector<UOpPtr> copy = stage_tile(
      caps, as, BM, TK, tid, kThreads, id,
      [&](const UOpPtr& r, const UOpPtr& c) { return at(mm->a, {{&mm->m, gy * BM + r}, {&mm->k, kt * TK + c}}); },
      [&](const UOpPtr& r, const UOpPtr& c) { return c * lda + r; });
  for (const UOpPtr& st : stage_tile(
           caps, bs, TK, BN, tid, kThreads, id,
           [&](const UOpPtr& r, const UOpPtr& c) { return at(mm->b, {{&mm->k, kt * TK + r}, {&mm->n, gx * BN + c}}); },
           [&](const UOpPtr& r, const UOpPtr& c) { return r * BN + c; }))
    copy.push_back(st);
  const UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_, copy);
  const UOpPtr as_ready = after(as, {staged}), bs_ready = after(bs, {staged}), acc_ready = after(acc, init);
  const UOpPtr kk = new_range(TK, AxisType::LOOP, id);
  std::vector<UOpPtr> av, bv, update;
  for (int64_t i = 0; i < TM; ++i) av.push_back(UOp::make(Op::LOAD, d, {as_ready, kk * lda + (ly + i * T)}));
  for (int64_t j = 0; j < TN; ++j) bv.push_back(UOp::make(Op::LOAD, d, {bs_ready, kk * BN + (lx + j * T)}));
  const bool fma = e_supports(caps, Op::FMA, d);
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) {
      const UOpPtr cur = UOp::make(Op::LOAD, d, {acc_ready, slot(i * TN + j)});
      const UOpPtr next =
          fma ? UOp::make(Op::FMA, d, {av[i], bv[j], cur}) : alu(Op::ADD, cur, alu(Op::MUL, av[i], bv[j]));
      update.push_back(UOp::make(Op::STORE, d, {acc, slot(i * TN + j), next}));
    }
  update.push_back(kk);
  const UOpPtr multiply = UOp::make(Op::END, dtypes::bool_, update, static_cast<int64_t>(update.size() - 1));
  // the second barrier: the next tile's copy overwrites what slower work-items may still read
  const UOpPtr tiles =
      UOp::make(Op::END, dtypes::bool_, {staged, UOp::make(Op::BARRIER, dtypes::bool_, {multiply}), kt}, int64_t{2});

  std::vector<UOpPtr> stmts = init;
  stmts.push_back(tiles);
  const UOpPtr done = after(acc, {tiles});
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j)
      stmts.push_back(output_store(sink, *mm, gy * BM + (ly + i * T), gx * BN + (lx + j * T),
                                   UOp::make(Op::LOAD, d, {done, slot(i * TN + j)})));
  w.sink = UOp::make(Op::SINK, dtypes::bool_, std::move(stmts));
  w.flops = 2.0 * static_cast<double>(M * N * K * B);
  return w;
}

}  // namespace tg::codegen
