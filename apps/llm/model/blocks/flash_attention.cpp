#include "model/blocks/flash_attention.hpp"

#include <cmath>
#include <string>

#include "tg/custom_kernel.hpp"

namespace tg::llm {

namespace {
// below any score: an empty running maximum, and a masked key (finite, so that max - max never makes a NaN)
constexpr double kNone = -1e30;
}  // namespace

Tensor flash_attention(const Tensor& q, const KvCache& kc, const KvCache& vc, int64_t kv_heads, const SeqPos& at,
                       int64_t len, const FlashAttentionSpec& spec) {
  const int64_t T = q.shape()[0], H = q.shape()[1], hd = q.shape()[2], KV = kv_heads, G = H / KV, B = kFlashBlock;
  if (H % KV != 0 || len % B != 0 || len <= 0)
    throw std::invalid_argument("tg-llm: flash attention of " + std::to_string(H) + " heads over " +
                                std::to_string(KV) + " KV heads, " + std::to_string(len) + " keys");
  const int64_t blocks = len / B;
  int64_t S = spec.splits;
  if (S <= 0)  // split the keys while the (KV head, token) pairs are fewer than 8 and each range keeps 4 blocks
    for (S = 1; T * KV * S < 8 && blocks % (S * 2) == 0 && blocks / (S * 2) >= 4;) S *= 2;
  if (blocks % S != 0)
    throw std::invalid_argument("tg-llm: flash attention splits " + std::to_string(S) + " do not divide " +
                                std::to_string(blocks) + " blocks");
  const int64_t per = blocks / S;
  const DType f32 = dtypes::float32;
  const std::vector<Tensor> kt = kc.tensors(), vt = vc.tensors();
  const int kfirst = 4, vfirst = kfirst + static_cast<int>(kt.size());

  CustomKernel k("flash_attention");
  KExpr s = k.range(S, Axis::GLOBAL), t = k.range(T, Axis::GLOBAL), kvh = k.range(KV, Axis::GLOBAL);
  const DType idx = t.dtype();
  auto c = [&](int64_t v) { return k.constant(static_cast<double>(v), idx); };
  auto f = [&](double v) { return k.constant(v, f32); };
  KExpr base = k.variable(at.base.var()).cast(idx), qpos = k.variable(at.pos.var()).cast(idx) + t;
  // the G query heads of this KV head: q pre-scaled by scale * log2(e), so the softmax runs in powers of two
  // the output accumulates per key lane (acc[(g * hd + d) * B + j]: a vector FMA a block, no horizontal sums),
  // folded over the lanes at the end
  KExpr qr = k.reg(f32, G * hd), acc = k.reg(f32, G * hd * B), mr = k.reg(f32, G), lr = k.reg(f32, G);
  KExpr sc = k.reg(f32, G * B), pr = k.reg(f32, G * B), mn = k.reg(f32, G);
  KExpr i0 = k.range(G * hd, Axis::LOOP), g0 = k.range(G, Axis::LOOP), z0 = k.range(G * hd * B, Axis::LOOP);
  KExpr init_q = k.loop(
      {k.store(qr, i0, k.load(k.buffer(3, f32), (t * c(H) + kvh * c(G)) * c(hd) + i0) * f(spec.scale / std::log(2.0)))},
      {i0});
  KExpr init_acc = k.loop({k.store(acc, z0, f(0))}, {z0});
  KExpr init_m = k.loop({k.store(mr, g0, f(kNone)), k.store(lr, g0, f(0))}, {g0});
  k.run(init_q);
  k.run(init_acc);
  k.run(init_m);
  KExpr jb = k.range(per, Axis::LOOP), j0 = (s * c(per) + jb) * c(B);
  KExpr q_ = k.after(qr, {init_q}), acc_ = k.after(acc, {init_acc}), m_ = k.after(mr, {init_m}),
        l_ = k.after(lr, {init_m});
  // 1. the block's scores (masked: causal, and the window)
  // the query heads unrolled (up to 8) where the keys and values are loaded: one load of a block's row serves all
  const Axis heads = G <= 8 ? Axis::UPCAST : Axis::LOOP;
  KExpr g1 = k.range(G, heads), jj = k.range(B, Axis::UPCAST), d1 = k.range(hd, Axis::REDUCE), col = j0 + jj;
  KExpr dot =
      k.reduce(k.load(q_, g1 * c(hd) + d1) * kc.element(k, kfirst, kvh * c(hd) + d1, base + col), Reduce::SUM, {d1});
  KExpr visible = col < qpos + 1;
  if (spec.window > 0) visible = visible && (qpos - col < c(spec.window));
  KExpr scores = k.loop({k.store(sc, g1 * c(B) + jj, KExpr::where(visible, dot, f(kNone)))}, {g1, jj});
  KExpr sc_ = k.after(sc, {scores});
  // 2. the new running maximum per head
  KExpr g2 = k.range(G, Axis::LOOP), jr = k.range(B, Axis::REDUCE);
  KExpr maxima = k.loop(
      {k.store(mn, g2, KExpr::max(k.load(m_, g2), k.reduce(k.load(sc_, g2 * c(B) + jr), Reduce::MAX, {jr})))}, {g2});
  KExpr mn_ = k.after(mn, {maxima});
  // 3. the block's probabilities (relative to the new maximum; 0 for masked keys)
  KExpr g3 = k.range(G, Axis::LOOP), j3 = k.range(B, Axis::UPCAST);
  KExpr sv = k.load(sc_, g3 * c(B) + j3);
  KExpr probs = k.loop(
      {k.store(pr, g3 * c(B) + j3, KExpr::where(f(kNone / 2) < sv, (sv - k.load(mn_, g3)).exp2(), f(0)))}, {g3, j3});
  KExpr pr_ = k.after(pr, {probs});
  // 4. the output and 5. the sum rescaled by 2^(old max - new max), plus this block's share; 6. the maximum kept
  auto rescale = [&](const KExpr& g) { return (k.load(m_, g) - k.load(mn_, g)).exp2(); };
  KExpr g4 = k.range(G, heads), d4 = k.range(hd, Axis::LOOP), j4 = k.range(B, Axis::UPCAST),
        a4 = (g4 * c(hd) + d4) * c(B) + j4;
  KExpr pv = k.load(pr_, g4 * c(B) + j4) * vc.element(k, vfirst, kvh * c(hd) + d4, base + j0 + j4);
  KExpr out_update = k.loop({k.store(acc, a4, KExpr::fma(k.load(acc_, a4), rescale(g4), pv))}, {d4, g4, j4});
  KExpr g5 = k.range(G, Axis::LOOP), j5 = k.range(B, Axis::REDUCE);
  KExpr sum_update = k.loop(
      {k.store(lr, g5,
               KExpr::fma(k.load(l_, g5), rescale(g5), k.reduce(k.load(pr_, g5 * c(B) + j5), Reduce::SUM, {j5})))},
      {g5});
  KExpr g6 = k.range(G, Axis::LOOP);
  KExpr max_update = k.loop({k.store(mr, g6, k.load(mn_, g6))}, {g6});
  KExpr each_block = k.loop({scores, maxima, probs, out_update, sum_update, max_update}, {jb});
  k.run(each_block);
  // the partial results of this key range: output, maximum, sum
  KExpr o = k.range(G * hd, Axis::LOOP), go = k.range(G, Axis::LOOP), row = (s * c(T) + t) * c(H) + kvh * c(G);
  KExpr jo = k.range(B, Axis::REDUCE);
  k.run(k.loop({k.store(k.buffer(0, f32), row * c(hd) + o,
                        k.reduce(k.load(k.after(acc, {each_block}), o * c(B) + jo), Reduce::SUM, {jo}))},
               {o}));
  k.run(k.loop({k.store(k.buffer(1, f32), row + go, k.load(k.after(mr, {each_block}), go)),
                k.store(k.buffer(2, f32), row + go, k.load(k.after(lr, {each_block}), go))},
               {go}));
  k.parallel();
  std::vector<Tensor> inputs{q.contiguous()};
  inputs.insert(inputs.end(), kt.begin(), kt.end());
  inputs.insert(inputs.end(), vt.begin(), vt.end());
  auto r = k({{{S, T, H, hd}, f32}, {{S, T, H}, f32}, {{S, T, H}, f32}}, inputs, {at.base, at.pos});
  const Tensor &out = r[0], &m = r[1], &l = r[2];
  if (S == 1) return (out.reshape({T, H, hd}) / l.reshape({T, H, 1})).reshape({T, H * hd});
  // ranges combined: each weighted by 2^(its maximum - the largest)
  Tensor w = ((m - m.max({0}, true)) * std::log(2.0)).exp();  // (S, T, H)
  Tensor num = (out * w.reshape({S, T, H, 1})).sum({0}), den = (l * w).sum({0});
  return (num / den.reshape({T, H, 1})).reshape({T, H * hd});
}

}  // namespace tg::llm
