// GPU plan TC: a matmul on the renderer's tensor cores (plan_tc_matmul).
#include <tg/sdk/tensor_cores.hpp>

#include <algorithm>

#include "codegen/gpu/plan_parts.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

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

}  // namespace tg::codegen
