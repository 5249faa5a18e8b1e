#include "model/blocks/recurrent_kernels.hpp"

#include <vector>

#include "tg/custom_kernel.hpp"
#include "tg/error.hpp"

namespace tg::llm {

namespace {

// The slot of sequence s, whether its state is read (position > 0), and its real tokens (the rest pad the chunk:
// they leave the state as it is), from the (B, 3) table.
struct SeqSlot {
  KExpr slot, keep, valid;
};
SeqSlot seq_slot(CustomKernel& k, const KExpr& seqs, const KExpr& s, int64_t rows_per_slot) {
  const KExpr base = k.load(seqs, s * 3).cast(s.dtype()), pos = k.load(seqs, s * 3 + 1);
  return {base / k.constant(static_cast<double>(rows_per_slot), s.dtype()), pos != k.constant(0, dtypes::int32),
          k.load(seqs, s * 3 + 2).cast(s.dtype())};
}

}  // namespace

Tensor causal_conv(const Tensor& x, const Tensor& w, const Tensor& state, const Tensor& seqs, int64_t rows_per_slot) {
  const int64_t B = seqs.shape()[0], C = x.shape()[1], K = w.shape()[1], Tq = x.shape()[0] / B;
  if (w.shape()[0] != C || state.shape()[1] != C || Tq * B != x.shape()[0] || K < 2)
    throw std::invalid_argument("tg-llm: causal_conv of " + std::to_string(x.shape()[0]) + "x" + std::to_string(C) +
                                " by " + std::to_string(w.shape()[0]) + "x" + std::to_string(K));
  const DType f32 = dtypes::float32;
  CustomKernel k("ssm_conv");
  const DType sdt = state.dtype();  // float32 or float16, computed in float32
  KExpr out = k.buffer(0, f32), xb = k.buffer(1, f32), wb = k.buffer(2, f32), st = k.buffer(3, sdt),
        sq = k.buffer(4, dtypes::int32);
  // channels in lanes of 16 (a cache line of each row): a work item a channel walked the rows C x 4 bytes apart, and
  // loaded each line 16 times (Qwen3.6-35B-A3B's 8192 channels, 512 tokens: 35 ms a layer)
  const int64_t lanes = C % 16 == 0 ? 16 : 1;
  KExpr s = k.range(B, Axis::GLOBAL), cb = k.range(C / lanes, Axis::GLOBAL);
  auto lane = [&] { return k.range(lanes, Axis::UPCAST); };  // one a loop
  auto channel = [&](const KExpr& cl) { return cb * k.constant(static_cast<double>(lanes), cb.dtype()) + cl; };
  const SeqSlot at = seq_slot(k, sq, s, rows_per_slot);
  // input row tau of the sequence (tau < 0: row K-1+tau of the state), as two exclusive gated loads
  auto input = [&](const KExpr& tau, const KExpr& ch) {
    KExpr before = tau < 0, after = k.constant(-1, tau.dtype()) < tau;
    KExpr from_state = k.load(st, (at.slot * (K - 1) + tau + (K - 1)) * C + ch, before && at.keep).cast(f32);
    KExpr from_x = k.load(xb, (s * Tq + tau) * C + ch, after);
    return from_state + from_x;
  };
  KExpr t = k.range(Tq, Axis::LOOP), cl = lane(), ch = channel(cl), acc = k.constant(0, f32);
  for (int64_t j = 0; j < K; ++j)  // y[t] = sum_j w[j] x[t + j - (K-1)]
    acc = KExpr::fma(k.load(wb, ch * K + j), input(t - (K - 1 - j), ch), acc);
  k.run(k.loop({k.store(out, (s * Tq + t) * C + ch, acc)}, {t, cl}));
  // the new state: the last K-1 rows of the real input (valid - (K-1) .. valid - 1), gathered before any is
  // overwritten
  KExpr keep = k.reg(f32, (K - 1) * lanes);
  auto kept = [&](int64_t r, const KExpr& l) { return k.constant(static_cast<double>(r * lanes), s.dtype()) + l; };
  std::vector<KExpr> gathered;
  for (int64_t r = 0; r < K - 1; ++r) {
    KExpr l = lane();
    gathered.push_back(k.loop({k.store(keep, kept(r, l), input(at.valid - (K - 1 - r), channel(l)))}, {l}));
    k.run(gathered.back());
  }
  for (int64_t r = 0; r < K - 1; ++r) {
    KExpr l = lane(), rr = k.constant(static_cast<double>(r), s.dtype());
    k.run(k.loop(
        {k.store(st, (at.slot * (K - 1) + rr) * C + channel(l), k.load(k.after(keep, gathered), kept(r, l)).cast(sdt))},
        {l}));
  }
  k.parallel();
  return k({{{B * Tq, C}, f32}}, {x.contiguous(), w.contiguous(), state, seqs})[0];
}

Tensor gated_delta(const Tensor& q, const Tensor& kk, const Tensor& v, const Tensor& alpha, const Tensor& beta,
                   const Tensor& state, const Tensor& seqs, int64_t rows_per_slot) {
  const int64_t B = seqs.shape()[0], T = q.shape()[0], nk = q.shape()[1], dk = q.shape()[2], nv = v.shape()[1],
                dv = v.shape()[2];
  const int64_t Tq = T / B;
  if (kk.shape() != q.shape() || v.shape()[0] != T || alpha.shape() != Shape{T, nv} || beta.shape() != Shape{T, nv} ||
      nv % nk != 0 || Tq * B != T || state.shape()[1] != dk)
    throw std::invalid_argument("tg-llm: gated_delta shapes (q " + std::to_string(T) + "x" + std::to_string(nk) + "x" +
                                std::to_string(dk) + ", v heads " + std::to_string(nv) + ")");
  const DType f32 = dtypes::float32;
  CustomKernel k("gated_delta");
  KExpr out = k.buffer(0, f32), qb = k.buffer(1, f32), kb = k.buffer(2, f32), vb = k.buffer(3, f32),
        ab = k.buffer(4, f32), bb = k.buffer(5, f32), st = k.buffer(6, state.dtype()), sq = k.buffer(7, dtypes::int32);
  // L state rows a work item, in lanes: row i = ib L + l holds S[i][c] at register c L + l, so S k, S q and the update
  // are vector FMAs over c with k[c] and q[c] broadcast, and k . q is computed once for the L rows. Qwen3.6-35B-A3B
  // shape, 512 tokens, a layer: a row a work item (each product a horizontal sum of dk values per token) 127 ms; L = 8
  // 53 ms, 16 33 ms, 32 22-31 ms (fewer work items: 16 keeps 256 for a GPU). Decode: 0.55 -> 0.38 ms.
  const int64_t L = dv % 16 == 0 ? 16 : 1;
  KExpr s = k.range(B, Axis::GLOBAL), j = k.range(nv, Axis::GLOBAL), ib = k.range(dv / L, Axis::GLOBAL);
  const SeqSlot at = seq_slot(k, sq, s, rows_per_slot);
  auto lane = [&] { return k.range(L, Axis::UPCAST); };  // one a loop
  auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), ib.dtype()); };
  auto row_of = [&](const KExpr& l) { return ib * c64(L) + l; };
  // the slot's state of head j is stored key-major, S^T (dk x dv): lane l of column c is element (c, ib L + l), so the
  // L lanes load and store as one vector (row-major, each lane was a row dk values apart: a decode step's kernel ran
  // at 6 GB/s of state)
  auto state_at = [&](const KExpr& c, const KExpr& l) { return ((at.slot * nv + j) * dk + c) * dv + row_of(l); };
  KExpr g = j % c64(nk);
  KExpr S = k.reg(f32, dk * L), c0 = k.range(dk, Axis::LOOP), l0 = lane();
  KExpr init = k.loop({k.store(S, c0 * c64(L) + l0, k.load(st, state_at(c0, l0), at.keep).cast(f32))}, {c0, l0});
  k.run(init);
  KExpr t = k.range(Tq, Axis::LOOP), tok = s * Tq + t, r = k.after(S, {init});
  auto key = [&](const KExpr& c) { return k.load(kb, (tok * nk + g) * dk + c); };
  auto query = [&](const KExpr& c) { return k.load(qb, (tok * nk + g) * dk + c); };
  // per lane: S k (acc[l]) and S q (acc[L + l])
  KExpr acc = k.reg(f32, 2 * L), l1 = lane();
  KExpr zero = k.loop({k.store(acc, l1, k.constant(0, f32)), k.store(acc, c64(L) + l1, k.constant(0, f32))}, {l1});
  KExpr c1 = k.range(dk, Axis::LOOP), l2 = lane(), a0 = k.after(acc, {zero}), s_c = k.load(r, c1 * c64(L) + l2);
  KExpr dots = k.loop({k.store(acc, l2, KExpr::fma(s_c, key(c1), k.load(a0, l2))),
                       k.store(acc, c64(L) + l2, KExpr::fma(s_c, query(c1), k.load(a0, c64(L) + l2)))},
                      {c1, l2});
  KExpr c3 = k.range(dk, Axis::REDUCE);
  KExpr kq = k.reduce(key(c3) * query(c3), Reduce::SUM, {c3});
  // a padding token (t >= valid) leaves the state as it is: no decay (a = 1), no write (b = 0)
  KExpr real = t < at.valid;
  KExpr a = KExpr::where(real, k.load(ab, tok * nv + j), k.constant(1, f32)),
        b = KExpr::where(real, k.load(bb, tok * nv + j), k.constant(0, f32));
  // with S' = a S + delta k^T: S' k = a S k + delta |k|^2 is not needed; delta = b (v - a S k), o = a S q + delta (k.q)
  KExpr d = k.reg(f32, L), l3 = lane(), a1 = k.after(acc, {dots});
  KExpr delta = b * (k.load(vb, (tok * nv + j) * dv + row_of(l3)) - a * k.load(a1, l3));
  KExpr outs = k.loop(
      {k.store(d, l3, delta), k.store(out, (tok * nv + j) * dv + row_of(l3), a * k.load(a1, c64(L) + l3) + delta * kq)},
      {l3});
  KExpr c4 = k.range(dk, Axis::LOOP), l4 = lane(), at4 = c4 * c64(L) + l4;
  KExpr update =
      k.loop({k.store(S, at4, KExpr::fma(k.load(k.after(d, {outs}), l4), key(c4), a * k.load(r, at4)))}, {c4, l4});
  KExpr step = k.loop({zero, dots, outs, update}, {t});
  k.run(step);
  KExpr c5 = k.range(dk, Axis::LOOP), l5 = lane();
  k.run(k.loop({k.store(st, state_at(c5, l5), k.load(k.after(S, {step}), c5 * c64(L) + l5).cast(state.dtype()))},
               {c5, l5}));
  k.parallel();
  return k({{{T, nv, dv}, f32}},
           {q.contiguous(), kk.contiguous(), v.contiguous(), alpha.contiguous(), beta.contiguous(), state, seqs})[0];
}

}  // namespace tg::llm
