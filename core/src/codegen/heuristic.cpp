// The heuristic's choices from the machine a renderer describes (see heuristic.hpp).
#include "codegen/heuristic.hpp"

#include <algorithm>

#include "codegen/gpu/plans.hpp"
#include "codegen/plan.hpp"
#include "codegen/stage_panel.hpp"

namespace tg::codegen {

using namespace ir;

Machine machine_of(const tg_renderer_caps& caps) {
  Machine m{64, 32, 0};
  if (!TG_ABI_HAS(&caps, tg_renderer_caps, l2_bytes)) return m;
  if (caps.simd_bytes) m.vector_bytes = static_cast<int>(caps.simd_bytes);
  if (caps.simd_registers) m.registers = static_cast<int>(caps.simd_registers);
  m.l2_bytes = caps.l2_bytes;
  return m;
}

int widest_lanes(const tg_renderer_caps& caps, DType d) {
  if (is_gpu(caps)) return 4;
  return std::clamp(machine_of(caps).vector_bytes / static_cast<int>(d.itemsize()), 2, 16);
}

std::vector<std::pair<int, int>> register_tiles(const tg_renderer_caps& caps, DType d, int lanes, int64_t rows,
                                                int64_t vecs, int broadcast_cost) {
  if (is_gpu(caps)) return {{4, 1}, {2, 1}};  // a work-item's registers are few; the grid supplies the parallelism
  const Machine m = machine_of(caps);
  // a vector wider than a register takes several
  const int per_vec = std::max(1, (lanes * static_cast<int>(d.itemsize()) + m.vector_bytes - 1) / m.vector_bytes);
  std::vector<std::pair<int, int>> tiles;
  for (int u = 1; u <= 16; ++u)
    for (int c = 1; c <= 4; ++c) {
      if ((u == 1 && c == 1) || (rows && rows % u) || (vecs && vecs % c)) continue;
      if ((u * c + c) * per_vec + 1 <= m.registers) tiles.emplace_back(u, c);
    }
  // a step loads c vectors and broadcasts u values for u x c FMAs: fewest loads per FMA first, then more
  // accumulators (more FMAs in flight to cover their latency)
  std::stable_sort(tiles.begin(), tiles.end(), [broadcast_cost](auto a, auto b) {
    const int64_t loads_a = a.first * broadcast_cost + a.second, fmas_a = a.first * a.second;
    const int64_t loads_b = b.first * broadcast_cost + b.second, fmas_b = b.first * b.second;
    return loads_a * fmas_b != loads_b * fmas_a ? loads_a * fmas_b < loads_b * fmas_a : fmas_a > fmas_b;
  });
  return tiles;
}

bool stages_pay(const tg_renderer_caps& caps, int64_t row_tiles, int64_t operand_bytes, int64_t panel_bytes) {
  if (!caps.has_threads || is_gpu(caps)) return false;
  const Machine mach = machine_of(caps);
  // 1 MiB of L2 where the renderer does not say; the copy lives on the worker's stack, so never more than 1 MiB
  const int64_t l2 = mach.l2_bytes ? static_cast<int64_t>(mach.l2_bytes) : int64_t{1} << 20;
  return operand_bytes >= l2 / 2 && row_tiles >= 16 && panel_bytes <= std::min(l2 / 2, int64_t{1} << 20);
}

int64_t padded_loop(int64_t n, int c) {
  const int64_t padded = (n + c - 1) / c * c;
  return (padded - n) * 8 <= n ? padded : 0;
}

}  // namespace tg::codegen

namespace tg::codegen {

// tinygrad's hand_coded_optimizations: a GPU plan where one fits; else the output vector one register wide (the
// widest that applies), then the register tile that fits the register file beside its loads, its vector loop
// padded and its shared panel staged where the copy pays.
void hand_coded_opts(Plan& p) {
  if (is_gpu(p.caps))
    for (OptOp plan : {OptOp::TC, OptOp::LOCAL, OptOp::GROUP}) {
      if (plan == OptOp::TC && !p.opts.switches.tensor_cores) continue;
      if (run_gpu_plan(p, plan, {}).empty()) return p.applied.push_back({plan});
    }
  // each reduction's loop: the widest vector of accumulators that fits (apply_opt checks that its lanes vectorize)
  for (size_t i = 0; i < p.reduce_axes.size(); ++i)
    if (const int w = widest_unroll(p.caps, reductions_over(p, p.reduce_axes[i])))
      apply_opt(p, {OptOp::UNROLL, static_cast<int>(p.axes.size() + i), w});
  if (p.axes.empty()) return;
  const int last = static_cast<int>(p.axes.size()) - 1;
  const DType out = p.sink->src[0]->src[2]->dtype;
  for (int w : {16, 8, 4, 2})
    if (w <= widest_lanes(p.caps, out) && apply_opt(p, {OptOp::UPCAST, last, w}).empty()) break;
  const TileLoops t = tile_loops(p);
  if (!t.reduces || !t.row) return;
  const int lanes = static_cast<int>(p.lanes.size());
  const UOpPtr shared_k = t.vec ? shared_reduce_range(p.lanes, t.row, t.vec) : nullptr;
  auto stages = [&](int u, int c) {
    const int64_t bytes = shared_k ? shared_k->src[0]->arg_int() * lanes * static_cast<int64_t>(out.itemsize()) : 0;
    return shared_k && u > 1 && c > 1 && t.vecs > c && stages_pay(p.caps, t.rows / u, bytes * t.vecs, bytes * c);
  };
  // a tile's actions; where they do not build (a shared operand that is computed, not loaded, has no panel to
  // stage), they are taken back: build_planned changes the loops only when it succeeds
  auto try_tile = [&](int u, int c, bool stage, bool pad, bool pad_rows) {
    const size_t before = p.applied.size();
    Opts tile;
    if (pad_rows) tile.push_back({OptOp::PADTO, t.row_axis, u});
    if (u > 1) tile.push_back({OptOp::UPCAST, t.row_axis, u});
    if (pad) tile.push_back({OptOp::PADTO, t.vec_axis, c});
    if (c > 1) tile.push_back({OptOp::UPCAST, t.vec_axis, c});
    if (stage) tile.push_back({OptOp::STAGE, t.row_axis, 0});
    std::string why;
    for (const Opt& o : tile)
      if (why.empty()) why = apply_opt(p, o);
    if (why.empty()) why = build_planned(p);
    if (why.empty()) return true;
    forget_tile(p, before);
    return false;
  };
  const int broadcast_cost = t.vec && converted_broadcast(p.lanes, t.row, t.vec) ? 2 : 1;
  // a staged panel's tile may pad its rows or its vectors (a few gated-off entries) to take the tile with the fewest
  // loads per FMA: 1024 x 1024 float32 on AVX-512 takes 6 x 4 vectors (10 loads for 24 FMAs), 6 not dividing 1024,
  // instead of 8 x 3 (11 for 24) with the vector loop padded from 64 to 66 vectors
  for (auto [u, c] : register_tiles(p.caps, out, lanes, shared_k ? 0 : t.rows, shared_k ? 0 : t.vecs, broadcast_cost)) {
    const bool stage = stages(u, c);
    const int64_t vpad = t.vecs % c == 0 ? t.vecs : stage ? padded_loop(t.vecs, c) : 0;
    const int64_t rpad = t.rows % u == 0 ? t.rows : stage && vpad == t.vecs && t.rows > u ? padded_loop(t.rows, u) : 0;
    if (!rpad || !vpad) continue;
    if (try_tile(u, c, stage, vpad != t.vecs, rpad != t.rows) ||
        (stage && vpad == t.vecs && rpad == t.rows && try_tile(u, c, false, false, false)))
      return;
  }
}

bool host_threads(const tg_renderer_caps& caps) {
  return caps.has_threads && caps.max_global_dims >= 1 && !is_gpu(caps);
}

// tinygrad threads a kernel from about 128K operations per thread; here the count is the iterations of every loop
// (the thread count is the device's, not the renderer's), from where spreading them pays on our plugin: a Jit
// replay of x * 2 + 1 on 2 threads (AVX-512 Xeon) took 1.3-1.7 / 3.3 / 4.0 us spread at 4K / 16K / 32K elements,
// 0.8 / 2.1 us on one. A symbolic loop counts as large.
std::optional<Opt> thread_opt(const Plan& p) {
  constexpr int64_t kThreadWork = int64_t{32} << 10;
  if (!host_threads(p.caps) || p.gpu_plan || p.form != Plan::Form::planned || !p.kernel.parallel) return std::nullopt;
  int64_t work = 1;
  for (const UOp* n : toposort(std::vector<UOpPtr>{p.kernel.sink}))
    if (n->op == Op::RANGE)
      work = n->src[0]->op == Op::CONST ? work * std::max<int64_t>(n->src[0]->arg_int(), 1) : kThreadWork;
  if (work < kThreadWork) return std::nullopt;
  for (const UOpPtr& r : p.ranges) {
    if (r->op != Op::RANGE || !is_const_end(r)) continue;
    for (size_t a = 0; a < p.axes.size(); ++a)
      if (p.axes[a]->range().id == r->range().id)
        return Opt{OptOp::THREAD, static_cast<int>(a), static_cast<int>(r->src[0]->arg_int())};
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace tg::codegen
