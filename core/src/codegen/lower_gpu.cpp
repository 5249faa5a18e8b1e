// Kernel planning for work-group devices: grid binding, group-shared reductions and matmuls tiled through local
// memory as kernel graphs of work-groups, matmuls on tensor cores.
#include "codegen/lower_gpu.hpp"

#include <tg/sdk/tensor_cores.hpp>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <set>

namespace tg::codegen {

using namespace ir;

int64_t next_range_id(const UOpPtr& sink) {
  int64_t id = 0;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
    if (n->op == Op::RANGE) id = std::max(id, n->range().id + 1);
  return id;
}

bool is_gpu(const tg_renderer_caps& caps) {
  return caps.has_local && !caps.has_threads && caps.max_local_threads > 1 && caps.max_global_dims >= 1;
}

namespace {

// The largest power of two <= limit that divides n (1 when n is odd): work-groups then tile a loop exactly, so no
// work-item needs a bounds check (a guard before a barrier would deadlock the group).
uint32_t local_size_for(int64_t n, uint64_t limit) {
  uint32_t l = 1;
  while (static_cast<uint64_t>(l) * 2 <= limit && n % (static_cast<int64_t>(l) * 2) == 0) l *= 2;
  return l;
}

// The top-level REDUCEs of a kernel (those not inside another reduce's value).
std::vector<UOpPtr> top_reduces(const UOpPtr& sink) {
  std::vector<UOpPtr> out;
  std::set<const UOp*> seen;
  std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return;
    if (u->op == Op::REDUCE) return out.push_back(u);
    for (const auto& s : u->src) walk(s);
  };
  walk(sink);
  return out;
}

// GROUPTOP: each reduce is shared by the L work-items of a group. Work-item `lid` folds the elements lid, lid+L,
// lid+2L, ... of the reduce's innermost range into a partial and writes it to a local array of its own reduce (two
// grouped reduces in one kernel never share an array or a barrier); after that array's barrier every work-item
// folds the L partials. Returns the sink with the reduces replaced.
UOpPtr group_reduces(const UOpPtr& sink, const UOpPtr& lid, int64_t L, int64_t& next_id) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const UOpPtr& u : top_reduces(sink)) {
    const UOpPtr& r = u->src.back();
    if (r->op != Op::RANGE || !is_const_end(r)) continue;
    const int64_t R = r->src[0]->arg_int();
    auto rop = static_cast<ReduceOp>(u->arg_int());
    UOpPtr outer =
        UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, (R + L - 1) / L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr idx = alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, L)), cast(lid, r->dtype));
    UOpPtr value = simplify(substitute(u->src[0], {{r.get(), idx}}));
    if (R % L) {  // the last pass is partial: past R the index is clamped (every load stays inside) and folds nothing
      UOpPtr inside = alu(Op::CMPLT, idx, const_int(r->dtype, R));
      UOpPtr clamped = alu(Op::WHERE, inside, idx, const_int(r->dtype, R - 1));
      value =
          alu(Op::WHERE, inside, simplify(substitute(u->src[0], {{r.get(), clamped}})), reduce_identity(rop, u->dtype));
    }
    std::vector<UOpPtr> psrc{value};
    psrc.insert(psrc.end(), u->src.begin() + 1, u->src.end() - 1);
    psrc.push_back(outer);
    UOpPtr partial = UOp::make(Op::REDUCE, u->dtype, std::move(psrc), u->arg);
    UOpPtr temp = UOp::make(Op::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{L, next_id++});
    UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_,
                              {UOp::make(Op::STORE, u->dtype, {temp, cast(lid, dtypes::int64), partial})});
    UOpPtr j =
        UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr ready = UOp::make(Op::AFTER, u->dtype, {temp, staged}, temp->arg);
    map.emplace_back(u.get(), UOp::make(Op::REDUCE, u->dtype, {UOp::make(Op::LOAD, u->dtype, {ready, j}), j}, u->arg));
  }
  return map.empty() ? sink : substitute(sink, map);
}

// A matmul-shaped kernel: one store of an expression of one SUM over a single range k whose value is a * b,
// with a depending on the output range m and not on n, b on n and not on m (m and n the two innermost output
// loops; one more output loop is a batch).
struct Matmul {
  UOpPtr reduce, m, n, k, a, b, batch;
};

bool depends_on(const UOpPtr& u, const UOpPtr& r) { return ir::depends_on(u, r.get()); }

int64_t extent(const UOpPtr& range) { return range->src[0]->arg_int(); }

std::optional<Matmul> match_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges) {
  if (sink->src.size() != 1 || ranges.size() < 2 || ranges.size() > 3) return std::nullopt;
  for (const auto& r : ranges)
    if (!is_const_end(r)) return std::nullopt;
  const std::vector<UOpPtr> reduces = top_reduces(sink);
  if (reduces.size() != 1) return std::nullopt;
  const UOpPtr& u = reduces[0];
  if (static_cast<ReduceOp>(u->arg_int()) != ReduceOp::SUM || u->src.size() != 2 || u->src[1]->op != Op::RANGE ||
      !is_const_end(u->src[1]) || u->src[0]->op != Op::MUL || !u->dtype.is_float())
    return std::nullopt;
  Matmul mm{u,
            ranges[ranges.size() - 2],
            ranges.back(),
            u->src[1],
            u->src[0]->src[0],
            u->src[0]->src[1],
            ranges.size() == 3 ? ranges[0] : nullptr};
  if (depends_on(mm.a, mm.n)) std::swap(mm.a, mm.b);
  if (depends_on(mm.a, mm.n) || depends_on(mm.b, mm.m) || !depends_on(mm.a, mm.m) || !depends_on(mm.b, mm.n))
    return std::nullopt;
  // a factor with a reduction of its own (a fused softmax) would be recomputed for every staged element
  for (const UOpPtr& f : {mm.a, mm.b})
    for (const UOp* n : toposort(std::vector<UOpPtr>{f}))
      if (n->op == Op::REDUCE) return std::nullopt;
  return mm;
}

// `value` with the ranges replaced by index expressions (int32 here; cast to each range's dtype).
UOpPtr at(const UOpPtr& value, std::initializer_list<std::pair<const UOpPtr*, UOpPtr>> where) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const auto& [range, idx] : where) map.emplace_back(range->get(), cast(idx, (*range)->dtype));
  return simplify_substituted(value, map);
}

// Copies a rows x cols tile, element (r, c) = value(r, c), into local memory at slot(r, c): `threads` work-items
// (thread id tid; rows * cols must be a multiple of threads) each take w consecutive elements of a row per pass,
// consecutive ids along c so the global reads coalesce; the w lanes are an UPCAST range, so they are one vector load
// where the source is contiguous (and one vector store where the slots are). w is the widest of 4, 2, 1 the
// renderer takes that tiles the copy exactly. The copy's statements, one per pass.
std::vector<UOpPtr> stage_tile(const tg_renderer_caps& caps, const UOpPtr& local, int64_t rows, int64_t cols,
                               const UOpPtr& tid, int64_t threads, int64_t& id,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& value,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& slot) {
  if ((rows * cols) % threads)
    throw Error("tg: internal: a " + std::to_string(rows) + " x " + std::to_string(cols) +
                " tile does not split over " + std::to_string(threads) + " work-items");
  int64_t w = 4;
  while (w > 1 && (cols % w || (rows * cols) % (threads * w) || !e_vector_ok(caps, local->dtype, static_cast<int>(w))))
    w /= 2;
  std::vector<UOpPtr> stmts;
  for (int64_t first = 0; first < rows * cols; first += threads * w) {
    const UOpPtr lin = tid * w + first, r = simplify(lin / cols), c = simplify(lin % cols);
    if (w == 1) {
      stmts.push_back(UOp::make(Op::STORE, local->dtype, {local, simplify(slot(r, c)), value(r, c)}));
      continue;
    }
    const UOpPtr l =
        UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, w)}, RangeInfo{id++, AxisType::UPCAST});
    const UOpPtr st = UOp::make(Op::STORE, local->dtype, {local, simplify(slot(r, c + l)), value(r, simplify(c + l))});
    stmts.push_back(UOp::make(Op::END, dtypes::bool_, {st, l}, int64_t{1}));
  }
  return stmts;
}

// The kernel's store for output (m, n) with `result` in place of the reduce's value (`at` leaves the plan's
// statements that `result` reaches through AFTER as they are).
UOpPtr output_store(const UOpPtr& sink, const Matmul& mm, const UOpPtr& m, const UOpPtr& n, const UOpPtr& result) {
  return at(substitute(sink->src[0], {{mm.reduce.get(), result}}), {{&mm.m, m}, {&mm.n, n}});
}

// A fresh int32 range (a work-item id or a loop of the plan) with the next free id.
UOpPtr new_range(int64_t n, AxisType type, int64_t& id) {
  return UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, n)}, RangeInfo{id++, type});
}

// What both matmul plans share: block ids (gx over N / BN blocks, the grid's dim 0; gy over M / BM, dim 1; the
// batch on dim 2) and the A and B tiles in local memory.
struct Blocks {
  UOpPtr gx, gy, as, bs;
};
Blocks blocks(const Matmul& mm, int64_t BM, int64_t BN, DType tile, int64_t a_elems, int64_t b_elems, int64_t& id) {
  Blocks b{new_range(extent(mm.n) / BN, AxisType::GLOBAL, id), new_range(extent(mm.m) / BM, AxisType::GLOBAL, id),
           nullptr, nullptr};
  b.as = UOp::make(Op::DEFINE_LOCAL, tile, {}, std::vector<int64_t>{a_elems, id++});
  b.bs = UOp::make(Op::DEFINE_LOCAL, tile, {}, std::vector<int64_t>{b_elems, id++});
  return b;
}

// The value a factor of the product multiplies when a tensor core with input dtype `in` can take it: the
// factor itself, or the operand of a widening cast from `in` (16-bit floats are multiplied in float32).
UOpPtr tensor_core_input(const UOpPtr& factor, uint32_t in) {
  if (factor->dtype.scalar == static_cast<ScalarType>(in)) return factor;
  if (factor->op == Op::CAST && factor->src[0]->dtype.scalar == static_cast<ScalarType>(in)) return factor->src[0];
  return nullptr;
}

// The (row, col) a fragment lane holds, as index expressions of the work-item's lane (sdk::tc_coord on nodes).
std::pair<UOpPtr, UOpPtr> tc_coord(const uint8_t* map, int row_bits, int col_bits, const UOpPtr& lane, uint32_t elem) {
  UOpPtr coord[2] = {const_int(dtypes::int32, 0), const_int(dtypes::int32, 0)};
  for (int i = 0; i < row_bits + col_bits; ++i) {
    const int at = i < row_bits ? i : i - row_bits;
    UOpPtr& c = coord[i < row_bits ? 0 : 1];
    if (map[i] >= 32)
      c = c + static_cast<int64_t>(((elem >> (map[i] - 32)) & 1u) << at);
    else
      c = c + (lane / (int64_t{1} << map[i]) % 2) * (int64_t{1} << at);
  }
  return {simplify(coord[0]), simplify(coord[1])};
}

}  // namespace

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

// A matmul on tensor cores (caps.tensor_cores, ABI 1.2): a work-group of 2 x 2 warps computes a BM x BN block,
// each warp FM x FN tensor-core tiles of it. Per K tile the group copies the A and B tiles it needs into local
// memory in the tensor core's input dtype (the factors without their widening casts), waits, and each warp
// gathers its fragments from there lane by lane as the core's bit maps say and issues one WMMA per tile and
// k-step. nullopt where no tensor core fits the product's dtypes or the shape does not tile.
std::optional<WorkGroupPlan> plan_tc_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                            const tg_renderer_caps& caps, GpuTile tile) {
  if (!TG_ABI_HAS(&caps, tg_renderer_caps, ntensor_cores) || caps.ntensor_cores == 0) return std::nullopt;
  const std::optional<Matmul> mm = match_matmul(sink, ranges);
  if (!mm) return std::nullopt;
  const int64_t M = extent(mm->m), N = extent(mm->n), K = extent(mm->k), B = mm->batch ? extent(mm->batch) : 1;
  for (uint32_t t = 0; t < caps.ntensor_cores; ++t) {
    const std::optional<tg_tensor_core> unit = sdk::tensor_core_at(caps, t);
    if (!unit) continue;
    const tg_tensor_core& tc = *unit;
    if (!sdk::tc_problem(tc).empty() || tc.dtype_acc != static_cast<uint32_t>(mm->reduce->dtype.scalar)) continue;
    const UOpPtr a = tensor_core_input(mm->a, tc.dtype_in), b = tensor_core_input(mm->b, tc.dtype_in);
    if (!a || !b) continue;
    const int64_t tm = tc.m, tn = tc.n, tk = tc.k, warp = tc.threads, threads = 4 * warp;
    if (K % tk || threads > caps.max_local_threads || threads > caps.max_local[0]) continue;
    // tensor-core tiles per warp: 2 x 4 of m16n8 is a 32 x 32 warp tile (BEAM tries others)
    int64_t FM = tile.rows > 0 ? std::min(tile.rows, 8) : 2, FN = tile.cols > 0 ? std::min(tile.cols, 8) : 4;
    while (FM > 1 && M % (2 * FM * tm)) FM /= 2;
    while (FN > 1 && N % (2 * FN * tn)) FN /= 2;
    const int64_t WM = FM * tm, WN = FN * tn, BM = 2 * WM, BN = 2 * WN, BK = K % (2 * tk) == 0 ? 2 * tk : tk;
    const DType in = a->dtype;
    const int64_t pad = std::max<int64_t>(1, 16 / in.itemsize());  // a 16-byte pad spreads rows over banks
    // both tiles k-contiguous (A as [m][k], B as [n][k]): the lanes of a fragment that are neighbours along k
    // (mma's a0/a1, b0/b1) are then neighbours in local memory, one 2-lane load
    const int64_t lda = BK + pad, ldb = BK + pad;
    const uint64_t local_bytes = static_cast<uint64_t>((BM * lda + BN * ldb) * in.itemsize());
    if (M % BM || N % BN || (BM * BK) % threads || (BK * BN) % threads || local_bytes > caps.local_mem_bytes ||
        caps.max_global_dims < (mm->batch ? 3u : 2u) || N / BN > caps.max_global[0] || M / BM > caps.max_global[1] ||
        (mm->batch && B > caps.max_global[2]))
      continue;

    int64_t id = next_range_id(sink);
    WorkGroupPlan w;
    const UOpPtr lx = new_range(threads, AxisType::LOCAL, id);
    const auto [gx, gy, as, bs] = blocks(*mm, BM, BN, in, BM * lda, BN * ldb, id);
    w.items = {lx};
    w.groups = {gx, gy};
    if (mm->batch) w.groups.push_back(mm->batch);
    const int mb = sdk::tc_log2(tc.m), nb = sdk::tc_log2(tc.n), kb = sdk::tc_log2(tc.k);
    const uint32_t na = sdk::tc_lanes(tc.a_map, mb + kb), nbl = sdk::tc_lanes(tc.b_map, kb + nb),
                   nc = sdk::tc_lanes(tc.c_map, mb + nb);
    const DType acc_t = mm->reduce->dtype, frag_t = acc_t.vec(static_cast<int>(nc));
    // one register of nc lanes per tensor-core tile of the warp, from 0
    const UOpPtr acc = UOp::make(Op::DEFINE_REG, frag_t, {}, std::vector<int64_t>{FM * FN, id++});
    auto slot = [](int64_t q) { return const_int(dtypes::int32, q); };
    const UOpPtr zero =
        UOp::make(Op::VECTORIZE, frag_t, std::vector<UOpPtr>(nc, reduce_identity(ReduceOp::SUM, acc_t)));
    std::vector<UOpPtr> init;
    for (int64_t q = 0; q < FM * FN; ++q) init.push_back(UOp::make(Op::STORE, frag_t, {acc, slot(q), zero}));

    // per K tile: the group copies A's and B's tiles into local memory, waits, and each warp issues its WMMAs
    const UOpPtr kt = new_range(K / BK, AxisType::LOOP, id);
    std::vector<UOpPtr> copy = stage_tile(
        caps, as, BM, BK, lx, threads, id,
        [&](const UOpPtr& r, const UOpPtr& c) { return at(a, {{&mm->m, gy * BM + r}, {&mm->k, kt * BK + c}}); },
        [&](const UOpPtr& r, const UOpPtr& c) { return r * lda + c; });
    for (const UOpPtr& st : stage_tile(
             caps, bs, BK, BN, lx, threads, id,
             [&](const UOpPtr& r, const UOpPtr& c) { return at(b, {{&mm->k, kt * BK + r}, {&mm->n, gx * BN + c}}); },
             [&](const UOpPtr& r, const UOpPtr& c) { return c * ldb + r; }))
      copy.push_back(st);
    const UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_, copy);
    const UOpPtr as_ready = after(as, {staged}), bs_ready = after(bs, {staged});
    const UOpPtr lane = lx % warp, wm = lx / warp / 2, wn = lx / warp % 2;
    // a fragment of `lanes` lanes: lane el holds (r, c) of the unit's matrix, which `at` places in a local tile;
    // neighbouring lanes at neighbouring addresses are read as one 2-lane load where the renderer has such vectors
    auto fragment = [&](const uint8_t* map, int row_bits, int col_bits, uint32_t lanes, const UOpPtr& tile,
                        const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& at) {
      std::vector<UOpPtr> loads, parts;
      for (uint32_t el = 0; el < lanes; ++el) {
        auto [r, c] = tc_coord(map, row_bits, col_bits, lane, el);
        loads.push_back(UOp::make(Op::LOAD, in, {tile, simplify(at(r, c))}));
      }
      for (size_t el = 0; el < loads.size(); ++el) {
        if (el + 1 < loads.size() && e_vector_ok(caps, in, 2) &&
            consecutive_index({loads[el]->src[1], loads[el + 1]->src[1]})) {
          const UOpPtr pair = UOp::make(Op::VECTORIZE, in.vec(2), {loads[el], loads[el + 1]});
          parts.push_back(UOp::make(Op::GEP, in, {pair}, int64_t{0}));
          parts.push_back(UOp::make(Op::GEP, in, {pair}, int64_t{1}));
          ++el;
          continue;
        }
        parts.push_back(loads[el]);
      }
      return UOp::make(Op::VECTORIZE, in.vec(static_cast<int>(lanes)), std::move(parts));
    };
    std::vector<UOpPtr> body{staged}, last = init;  // the updates each k-step's loads of the accumulators follow
    for (int64_t ks = 0; ks < BK / tk; ++ks) {
      std::vector<UOpPtr> afrag, bfrag, updates;
      for (int64_t f = 0; f < FM; ++f)  // A[m][k] at (wm * WM + f * tm + r) * lda + ks * tk + c
        afrag.push_back(fragment(tc.a_map, mb, kb, na, as_ready, [&](const UOpPtr& r, const UOpPtr& c) {
          return (wm * WM + (r + f * tm)) * lda + (c + ks * tk);
        }));
      for (int64_t f = 0; f < FN; ++f)  // B[k][n] kept as [n][k]: (wn * WN + f * tn + c) * ldb + ks * tk + r
        bfrag.push_back(fragment(tc.b_map, kb, nb, nbl, bs_ready, [&](const UOpPtr& r, const UOpPtr& c) {
          return (wn * WN + (c + f * tn)) * ldb + (r + ks * tk);
        }));
      const UOpPtr acc_ready = after(acc, last);
      for (int64_t i = 0; i < FM; ++i)
        for (int64_t j = 0; j < FN; ++j) {
          const UOpPtr cur = UOp::make(Op::LOAD, frag_t, {acc_ready, slot(i * FN + j)});
          const UOpPtr d = UOp::make(Op::WMMA, frag_t, {afrag[i], bfrag[j], cur}, static_cast<int64_t>(t));
          updates.push_back(UOp::make(Op::STORE, frag_t, {acc, slot(i * FN + j), d}));
        }
      body.insert(body.end(), updates.begin(), updates.end());
      last = std::move(updates);
    }
    // the second barrier: the next tile's copy overwrites what other warps may still read
    body.push_back(UOp::make(Op::BARRIER, dtypes::bool_, last));
    body.push_back(kt);
    const UOpPtr tiles = UOp::make(Op::END, dtypes::bool_, body, static_cast<int64_t>(body.size() - 1));

    std::vector<UOpPtr> stmts = init;
    stmts.push_back(tiles);
    const UOpPtr done = after(acc, {tiles});
    for (int64_t i = 0; i < FM; ++i)
      for (int64_t j = 0; j < FN; ++j) {
        const UOpPtr v = UOp::make(Op::LOAD, frag_t, {done, slot(i * FN + j)});
        for (uint32_t el = 0; el < nc; ++el) {
          auto [r, c] = tc_coord(tc.c_map, mb, nb, lane, el);
          stmts.push_back(output_store(sink, *mm, gy * BM + (wm * WM + (r + i * tm)),
                                       gx * BN + (wn * WN + (c + j * tn)),
                                       UOp::make(Op::GEP, acc_t, {v}, static_cast<int64_t>(el))));
        }
      }
    w.sink = UOp::make(Op::SINK, dtypes::bool_, std::move(stmts));
    w.flops = 2.0 * static_cast<double>(M * N * K * B);
    return w;
  }
  return std::nullopt;
}

// One output per work-item: the innermost constant output loops go on the grid's dims (dim 0 innermost, for
// coalesced access), each split into work-groups of a power of two that divides it, up to 256 work-items per
// group. When there are more loops than dims, the outer ones are collapsed into the last dim (one id, divided back
// into each loop's index); a loop whose groups would exceed a dim's limit stays a loop.
void bind_gpu_grid(Emitter& e, const std::vector<UOpPtr>& ranges, const tg_renderer_caps& caps, int64_t next_id) {
  constexpr uint64_t kGroupThreads = 256;
  const uint32_t dims = std::min(caps.max_global_dims, 3u);
  std::vector<UOpPtr> loops;  // the constant loops, innermost first
  for (size_t i = ranges.size(); i-- > 0;)
    if (is_const_end(ranges[i])) loops.push_back(ranges[i]);
  uint64_t threads = 1;
  uint32_t dim = 0;
  auto local = [&](int64_t n) {
    return local_size_for(
        n, std::min<uint64_t>({kGroupThreads / threads, caps.max_local[dim], caps.max_local_threads / threads}));
  };
  for (size_t i = 0; i < loops.size() && dim < dims; ++i) {
    if (dim + 1 == dims && i + 1 < loops.size()) {  // the last dim and loops to spare: one id for all of them
      int64_t n = 1;
      for (size_t j = i; j < loops.size(); ++j) n *= extent(loops[j]);
      const uint32_t l = local(n);
      if (n / l <= caps.max_global[dim]) {
        const DType t = n <= INT32_MAX ? dtypes::int32 : dtypes::int64;  // 32-bit division where it fits
        const UOpPtr flat = UOp::make(Op::RANGE, t, {const_int(t, n)}, RangeInfo{next_id, AxisType::GLOBAL});
        e.special(flat, TG_SPECIAL_GLOBAL, dim++, l);
        int64_t stride = 1;  // loops[i] varies fastest
        for (size_t j = i; j < loops.size(); ++j) {
          const UOpPtr index = simplify(cast(flat / stride % extent(loops[j]), loops[j]->dtype));
          e.set(loops[j], e.emit(index));
          stride *= extent(loops[j]);
        }
        return;
      }
    }
    const int64_t n = extent(loops[i]);
    const uint32_t l = local(n);
    if (n / l > caps.max_global[dim]) continue;
    e.special(loops[i], TG_SPECIAL_GLOBAL, dim++, l);
    threads *= l;
  }
}

// A reduction with few outputs and a long reduce axis on a GPU: one work-group per output (the output loops are
// group ids, as many as the grid has dims; the rest stay loops), each reduce spread over the group
// (group_reduces), the store made by work-item 0. nullopt when one output per work-item serves better.
std::optional<WorkGroupPlan> plan_grouped(const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                          const tg_renderer_caps& caps, int64_t group) {
  const std::vector<UOpPtr> reduces = top_reduces(sink);
  if (reduces.empty()) return std::nullopt;
  int64_t outputs = 1, longest = 0, local_bytes = 0;
  for (const auto& r : ranges) {
    if (!is_const_end(r)) return std::nullopt;
    outputs *= r->src[0]->arg_int();
  }
  for (const auto& u : reduces) {
    const UOpPtr& r = u->src.back();
    if (r->op == Op::RANGE && is_const_end(r)) longest = std::max(longest, r->src[0]->arg_int());
    local_bytes += u->dtype.itemsize();
  }
  // enough outputs to fill the device one per work-item, or too short a reduce to share: the plain path
  // (a size asked for is taken wherever the device can run it)
  constexpr int64_t kMaxOutputs = 4096, kMinReduce = 256;
  if (group == 0 && (outputs > kMaxOutputs || longest < kMinReduce)) return std::nullopt;
  const uint64_t limit =
      std::min<uint64_t>({caps.max_local_threads, caps.max_local[0],
                          caps.local_mem_bytes / static_cast<uint64_t>(std::max<int64_t>(local_bytes, 1))});
  int64_t L = group;
  if (group == 0) {
    L = 1;
    while (static_cast<uint64_t>(L) * 2 <= std::min<uint64_t>(256, limit)) L *= 2;
    if (L < 16) return std::nullopt;
  }
  if (L < 2 || static_cast<uint64_t>(L) > limit) return std::nullopt;

  int64_t next_id = next_range_id(sink);
  WorkGroupPlan w;
  const UOpPtr lid = new_range(L, AxisType::LOCAL, next_id);
  const UOpPtr grouped = group_reduces(sink, lid, L, next_id);
  w.items = {lid};
  std::vector<UOpPtr> loops;  // output loops beyond the grid's dims (or its limits), outermost first
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)  // the innermost output loop on dim 0
    if (w.groups.size() < caps.max_global_dims && (*it)->src[0]->arg_int() <= caps.max_global[w.groups.size()])
      w.groups.push_back(*it);
    else
      loops.insert(loops.begin(), *it);
  // work-item 0 stores each output
  const UOpPtr first = alu(Op::CMPEQ, lid, const_int(dtypes::int32, 0));
  std::vector<UOpPtr> stores;
  for (const auto& st : grouped->src)
    stores.push_back(UOp::make(Op::STORE, st->dtype, {st->src[0], st->src[1], st->src[2], first}));
  if (loops.empty()) {
    w.sink = UOp::make(Op::SINK, dtypes::bool_, std::move(stores));
    return w;
  }
  // output loops around the reduce: every work-item must be done folding the local arrays before the next
  // iteration writes them again
  std::vector<UOpPtr> body{UOp::make(Op::BARRIER, dtypes::bool_, std::move(stores))};
  body.insert(body.end(), loops.begin(), loops.end());
  w.sink = UOp::make(Op::SINK, dtypes::bool_, {UOp::make(Op::END, dtypes::bool_, std::move(body), int64_t{1})});
  return w;
}

}  // namespace tg::codegen
