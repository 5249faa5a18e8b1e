// The int8 product: activations quantized per 32 values, weights read as unsigned bytes, DOT4 inner products.
#include "quant_int8.hpp"

#include <functional>

#include "quant_kernels.hpp"

namespace tg::llm {

using namespace detail;

namespace {

KExpr i32(CustomKernel& k, int64_t v) { return k.constant(static_cast<double>(v), dtypes::int32); }
KExpr f32c(CustomKernel& k, double v) { return k.constant(v, dtypes::float32); }

}  // namespace

// v rounded half away from zero, exactly as roundf: the integer part (the cast truncates toward zero) plus the
// truncation of twice the fraction (both exact: 1 from a half up, -1 from a half down, no selects). trunc(v + 0.5)
// would round up a v just below a half step whenever the sum rounds.
KExpr round_half_away(const KExpr& v) {
  KExpr t = v.cast(dtypes::int32), frac = v - t.cast(dtypes::float32);
  return t + (frac + frac).cast(dtypes::int32);
}

namespace {

// x * (1 / d) as quantize_row_q8_0 rounds it.
KExpr quantized(const KExpr& x, const KExpr& inv) { return round_half_away(x * inv); }

}  // namespace

Int8Activation quantize_int8(const Tensor& x) {
  if (x.ndim() != 2 || x.shape()[1] % 32 != 0 || x.dtype() != dtypes::float32)
    throw std::invalid_argument("tg-llm: int8 activations are (T, a multiple of 32) float32, got " + x.dtype().name() + " " + shape_str(x.shape()));
  const int64_t T = x.shape()[0], cols = x.shape()[1], blocks = T * cols / 32;
  const CustomKernel& k = cached({KernelKind::int8_quantize, GGMLType::F32, T, cols, 0}, [&] {
    CustomKernel k("quantize_int8");
    KExpr b = k.range(blocks, Axis::GLOBAL), xs = k.buffer(2, dtypes::float32);  // outputs 0 and 1, then x
    auto value = [&](const KExpr& e) { return k.load(xs, b * 32 + e); };
    KExpr e = k.range(32, Axis::REDUCE);
    KExpr amax = k.reduce(KExpr::max(value(e), value(e) * f32c(k, -1)), Reduce::MAX, {e});
    KExpr d = amax / f32c(k, 127);
    KExpr inv = KExpr::where(d == f32c(k, 0), f32c(k, 0), f32c(k, 1) / d);
    k.run(k.store(k.buffer(1, dtypes::float32), b, d));
    // word j: q[4j .. 4j + 3] as bytes
    KExpr j = k.range(8, Axis::UPCAST), word;
    for (int64_t i = 0; i < 4; ++i) {
      KExpr byte = (quantized(value(j * 4 + i), inv) & 255) << (8 * i);
      word = i == 0 ? byte : word | byte;
    }
    k.run(k.loop({k.store(k.buffer(0, dtypes::int32), b * 8 + j, word)}, {j}));
    k.parallel();
    return k;
  });
  auto out = k({{{T, cols / 4}, dtypes::int32}, {{T, cols / 32}, dtypes::float32}}, {x});
  return {out[0], out[1]};
}

bool has_int8_product(const QuantMatrix& w) {
  const Format* f = find_format(w.type);
  return f && f->bytes;
}

// Per row and token: 8 int32 lanes per 32-value sub-block (word j of it each) take one DOT4, and one float FMA adds
// them times the weight scale x the activation scale; two sub-blocks go together where their count is even (16
// lanes, one 512-bit vpdpbusd: on Gemma 3 270M the Q8_0 output head 12.0 -> 8.7 ms a token, the Q5_0 products
// 5.4 -> 4.2 ms). A fixed zero point is subtracted in integers (offset x the activation's bytes: one more DOT4 by a
// word of offset bytes); a minimum m adds m x d x (the activation's bytes, by a word of ones) per lane. The U
// tokens share each decoded word.
Tensor int8_matmul(const QuantMatrix& w, ProductInput& in) {
  const Format& f = format_of(w);
  if (!f.bytes) throw std::invalid_argument("tg-llm: " + type_name(w.type) + " has no int8 product");
  const ByteForm& bf = *f.bytes;
  const int64_t T = in.x.shape()[0], rows = w.rows, cols = w.cols, rw = w.row_words();
  const int64_t U = T >= 16 ? 16 : T >= 8 ? 8 : T >= 4 ? 4 : T >= 2 ? 2 : 1, Tp = (T + U - 1) / U * U;
  const int64_t subs = f.group_elems / 32, nb32 = cols / 32, P = nb32 % 2 == 0 ? 2 : 1, L = 8 * P;
  const CustomKernel& k = cached({KernelKind::int8_product, w.type, rows, cols, Tp}, [&] {
    CustomKernel k(std::string("qdot_") + type_traits(w.type).name);
    int64_t R = 1;  // rows in blocks of R with several token groups: their activations stay in L1 (as qmatmul)
    while (Tp > U && R < 64 && rows % (R * 2) == 0 && rows / (R * 2) >= 16) R *= 2;
    KExpr ro = k.range(rows / R, Axis::GLOBAL), tg = k.range(Tp / U, Axis::GLOBAL), ri = k.range(R, Axis::GLOBAL);
    KExpr r = ro * R + ri;
    KExpr words = k.buffer(1, dtypes::uint8), xq = k.buffer(2, dtypes::int32), xd = k.buffer(3, dtypes::float32);
    if (Tp == U) k.run(prefetch_ahead(k, words, r * rw, rw, rows * rw));
    KExpr acc = k.reg(dtypes::float32, L * U), z = k.range(L * U, Axis::LOOP);
    KExpr init = k.loop({k.store(acc, z, f32c(k, 0))}, {z});
    k.run(init);
    // lane jj: word jj % 8 of sub-block P * p + jj / 8 of the row
    KExpr p = k.range(nb32 / P, Axis::LOOP), u = k.range(U, Axis::UPCAST), jj = k.range(L, Axis::UPCAST);
    auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
    KExpr j = jj % c64(8), zero = i32(k, 0);
    // what is the same for the 8 lanes of a sub-block (its scales, the activation's scale) is computed once per
    // sub-block q and chosen per lane: lanes of one sub-block then share one scalar, broadcast
    auto sub_of = [&](const KExpr& q) { return (p * P + q) % c64(subs); };
    auto reader = [&](const KExpr& q) { return GroupReader{k, words, r * rw + ((p * P + q) / c64(subs)) * f.group_bytes, KExpr()}; };
    auto per_sub_block = [&](const std::function<KExpr(const KExpr& q)>& fn) {
      return P == 1 ? fn(c64(0)) : KExpr::where(jj < 8, fn(c64(0)), fn(c64(1)));
    };
    KExpr blk = (tg * U + u) * nb32 + p * P;  // the activation's 32-block of the first sub-block
    KExpr x = k.load(xq, blk * 8 + jj);
    KExpr dx = per_sub_block([&](const KExpr& q) { return k.load(xd, blk + q); });
    KExpr dot = KExpr::dot4(zero, bf.word(reader(jj / c64(8)), sub_of(jj / c64(8)), j), x);
    if (bf.offset) dot = dot - KExpr::dot4(zero, i32(k, bf.offset * 0x01010101), x);
    KExpr a = per_sub_block([&](const KExpr& q) {
      KExpr a0 = bf.scale(reader(q), sub_of(q), 0).first;
      return bf.split_halves ? KExpr::where(j < 4, a0, bf.scale(reader(q), sub_of(q), 1).first) : a0;
    });
    KExpr m = bf.has_min ? per_sub_block([&](const KExpr& q) { return bf.scale(reader(q), sub_of(q), 0).second; }) : KExpr();
    KExpr slot = u * L + jj, next = KExpr::fma(dot.cast(dtypes::float32), a * dx, k.load(k.after(acc, {init}), slot));
    if (bf.has_min) next = KExpr::fma(KExpr::dot4(zero, i32(k, 0x01010101), x).cast(dtypes::float32), m * dx, next);
    KExpr step = k.loop({k.store(acc, slot, next)}, {p, u, jj});
    k.run(step);
    // the L lanes folded in place (lane l += lane l + L/2, then + L/4, ...)
    KExpr folded = k.after(acc, {step});
    for (int64_t half = L / 2; half >= 1; half /= 2) {
      KExpr uh = k.range(U, Axis::UPCAST), lh = k.range(half, Axis::UPCAST);
      KExpr fold = k.loop({k.store(acc, uh * L + lh, k.load(folded, uh * L + lh) + k.load(folded, uh * L + lh + half))}, {uh, lh});
      k.run(fold);
      folded = k.after(acc, {fold});
    }
    KExpr uo = k.range(U, Axis::UPCAST);
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), (tg * U + uo) * rows + r, k.load(folded, uo * L))}, {uo}));
    k.parallel();
    return k;
  });
  if (!in.int8) in.int8 = std::make_shared<Int8Activation>(quantize_int8(Tp == T ? in.x : in.x.pad({{0, Tp - T}, {0, 0}})));
  Tensor y = k({{{Tp, rows}, dtypes::float32}}, {w.words, in.int8->words, in.int8->scale})[0];
  return Tp == T ? y : y.shrink({{0, T}, {0, rows}});
}

}  // namespace tg::llm
