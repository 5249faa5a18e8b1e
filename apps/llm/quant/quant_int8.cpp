// The int8 product: activations quantized per 32 values, weights read as unsigned bytes, DOT4 inner products.
#include "quant/quant_int8.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>

#include "quant/quant_kernels.hpp"

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

KExpr abs_max(CustomKernel& k, const KExpr& x, const KExpr& range) {
  KExpr bits = x.bitcast(dtypes::int32) & 0x7FFFFFFF;
  return k.reduce(bits, Reduce::MAX, {range}).bitcast(dtypes::float32);
}

namespace {

// x * (1 / d) as quantize_row_q8_0 rounds it.
KExpr quantized(const KExpr& x, const KExpr& inv) { return round_half_away(x * inv); }

}  // namespace

Int8Activation quantize_int8(const Tensor& x, int64_t group, bool biased) {
  if (x.ndim() != 2 || x.shape()[1] % 32 != 0 || x.dtype() != dtypes::float32 || group < 1 || x.shape()[0] % group != 0)
    throw std::invalid_argument("tg-llm: int8 activations are (T, a multiple of 32) float32 with T a multiple of " +
                                std::to_string(group) + ", got " + x.dtype().name() + " " + shape_str(x.shape()));
  if (biased && group == 1)
    throw std::invalid_argument("tg-llm: biased int8 activations are grouped (the tiled product's)");
  const int64_t T = x.shape()[0], cols = x.shape()[1], nb32 = cols / 32, blocks = T * nb32, G = group;
  const CustomKernel& k =
      cached({biased ? KernelKind::int8_quantize_biased : KernelKind::int8_quantize, GGMLType::F32, T, cols, G}, [&] {
        CustomKernel k("quantize_int8");
        auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
        KExpr b = k.range(blocks, Axis::GLOBAL), xs = k.buffer(G == 1 ? 4 : 3, dtypes::float32);  // the outputs, then x
        auto value = [&](const KExpr& e) { return k.load(xs, b * 32 + e); };
        KExpr e = k.range(32, Axis::REDUCE);
        KExpr amax = abs_max(k, value(e), e);
        KExpr d = amax / f32c(k, 127);
        KExpr inv = KExpr::where(d == f32c(k, 0), f32c(k, 0), f32c(k, 1) / d);
        // where block b's scale, words and sums go: in token order, or as lane t % G of group t / G
        KExpr t = b / c64(nb32), at = (t / c64(G)) * c64(nb32) + b % c64(nb32), lane = t % c64(G);
        auto slot = [&](const KExpr& i, int64_t n) { return G == 1 ? b * n + i : (at * n + i) * c64(G) + lane; };
        k.run(k.store(k.buffer(1, dtypes::float32), slot(c64(0), 1), d));
        // word j: q[4j .. 4j + 3] as bytes
        KExpr j = k.range(8, Axis::UPCAST), word;
        for (int64_t i = 0; i < 4; ++i) {
          KExpr byte = (quantized(value(j * 4 + i), inv) & 255) << (8 * i);
          word = i == 0 ? byte : word | byte;
        }
        if (biased) word = word ^ i32(k, static_cast<int32_t>(0x80808080u));  // q + 128 in each byte
        k.run(k.loop({k.store(k.buffer(0, dtypes::int32), slot(j, 8), word)}, {j}));
        for (int64_t h = 0; h < 2; ++h) {
          KExpr e16 = k.range(16, Axis::REDUCE);
          k.run(k.store(k.buffer(2, dtypes::int32), slot(c64(h), 2),
                        k.reduce(quantized(value(e16 + 16 * h), inv), Reduce::SUM, {e16})));
        }
        if (G == 1) {
          KExpr e = k.range(32, Axis::REDUCE);
          k.run(k.store(k.buffer(3, dtypes::float32), b,
                        d * k.reduce(quantized(value(e), inv), Reduce::SUM, {e}).cast(dtypes::float32)));
        }
        k.parallel();
        return k;
      });
  if (G == 1) {
    auto out = k({{{T, cols / 4}, dtypes::int32},
                  {{T, nb32}, dtypes::float32},
                  {{T, nb32, 2}, dtypes::int32},
                  {{T, nb32}, dtypes::float32}},
                 {x});
    return {out[0], out[1], out[2], 1, false, out[3]};
  }
  auto out = k(
      {{{T / G, nb32, 8, G}, dtypes::int32}, {{T / G, nb32, G}, dtypes::float32}, {{T / G, nb32, 2, G}, dtypes::int32}},
      {x});
  return {out[0], out[1], out[2], G, biased};
}

bool has_int8_product(const QuantMatrix& w) {
  const Format* f = find_format(w.type);
  return f && f->bytes;
}

namespace {

// Whether the tiled product decodes w's format once per product into signed bytes (one scale, and minimum, per 32
// values: Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, IQ4_NL, IQ4_XS, MXFP4; not Q6_K's 16-value scales), and then runs as on
// bytes stored signed: it loops over the token groups, so a word decoded in the loop was decoded once per group (16
// times for 512 tokens).
bool decoded_once(const ByteForm& bf) { return !bf.signed_word && !bf.split_halves; }
// A tiled product decodes its weights to signed bytes (a pass over them) only where this many tokens share the pass:
// below it the words go in as unsigned bytes.
constexpr int64_t kDecodedTokens = 128;
// A grouped expert product decodes every expert's weights where an expert averages kDecodedExpertTokens. 512-token
// prefill on 2 AVX2 cores, 8-layer shaped Q4_K files, the expert products' kernel time (products + decode passes),
// two runs each, alternated: GLM-4.7-Flash (32 tokens an expert) 3442-3684 ms as words -> 2743-3018 decoded (76.7,
// 79.4 -> 96.3, 86.9 tok/s); Qwen3.6-35B-A3B (16 an expert) 3049-3217 -> 2816-3105, within the noise: its decode
// passes (268 MB of bytes a product, ~40 ms each) take what the products gain. Products an expert apiece, before
// the grouped one, had lost at 32 (GLM: 55 -> 43 tok/s): each expert's decode pass was a kernel of its own.
constexpr int64_t kDecodedExpertTokens = 32;

// Whether the format's byte dot products keep each pair of byte products within int16 (KExpr::dot4's narrow
// promise): as the unsigned operand against the signed activation, its words at most 127 (neither product puts
// the offset through a DOT4: the tiled one starts its chains at -offset x the activation's sums, row_products adds
// it with the minimum terms);
// decoded once to signed bytes (word - offset) against the biased activation (at most 255), within +-64.
bool narrow_unsigned(const ByteForm& bf) { return bf.word_max <= 127; }
bool narrow_signed(const ByteForm& bf) {
  return decoded_once(bf) && std::max(std::abs(bf.word_min - bf.offset), std::abs(bf.word_max - bf.offset)) <= 64;
}

// Whether row_products adds, per sub-block (or half) and token, a term m x the activation block's d x sum of q: m the
// format's minimum, and -offset x its scale for a fixed zero point. For the zero point it replaces a DOT4 of the
// offset's bytes by the activation's in every lane, which Q5_0's and Q8_0's products ran for each of their words'
// DOT4s: with the CPU renderer's exact DOT4 split, Qwen2.5-Coder-0.5B's decode step on 2 AVX2 cores went from 34 to 25
// ms of kernels (DEBUG=2; the Q8_0 output head 8.7 -> 6.5 ms).
bool has_minimum_term(const ByteForm& bf) { return bf.has_min || bf.offset != 0; }

// What the signed product reads of w besides its packed bytes, made in one pass over them: -128 x the sum of each
// 32-value block's signed weights, (rows, cols / 32) int32 (what the biased activation's + 128 adds to the block's
// dot product, so a chain that starts there sums the true product); and where the format is decoded once, the
// signed words (rows, cols / 32, 8) int32 (4 bytes u - offset each), the scales and the minimums (rows, cols / 32)
// float32. The decoded bytes: u + (128 - offset) stays below 256 for every format (no carry into the next byte),
// and flipping the top bit then leaves u - offset as a signed byte. ~3% of a 512-token product (Q8_0: sums only),
// ~10% decoded.
struct SignedWeights {
  Tensor sums;
  std::optional<Tensor> words, scales, mins;  // decoded_once formats (mins: those with a minimum)
};
SignedWeights signed_weights(const QuantMatrix& w, const Format& f) {
  const ByteForm& bf = *f.bytes;
  const bool decode = decoded_once(bf);
  const int64_t rows = w.rows, nb32 = w.cols / 32, subs = f.group_elems / 32, rw = w.row_words();
  const CustomKernel& k = cached({KernelKind::int8_weight_sums, w.type, rows, w.cols, 0}, [&] {
    CustomKernel k(std::string(decode ? "qbytes_" : "qsums_") + type_traits(w.type).name);
    auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
    KExpr b = k.range(rows * nb32, Axis::GLOBAL), r = b / c64(nb32), p = b % c64(nb32), sub = p % c64(subs);
    const int outputs = decode ? (bf.has_min ? 4 : 3) : 1;
    GroupReader reader{k, k.buffer(outputs, dtypes::uint8), r * rw + (p / c64(subs)) * f.group_bytes};
    auto signed_word = [&](const KExpr& j) {
      if (!decode) return bf.signed_word(reader, sub, j);
      const auto bias = static_cast<double>(static_cast<uint32_t>(128 - bf.offset) * 0x01010101u);
      KExpr biased = bf.word(reader, sub, j).bitcast(dtypes::uint32) + k.constant(bias, dtypes::uint32);
      return biased.bitcast(dtypes::int32) ^ i32(k, static_cast<int32_t>(0x80808080u));
    };
    if (decode) {
      KExpr j = k.range(8, Axis::UPCAST);
      k.run(k.loop({k.store(k.buffer(1, dtypes::int32), b * 8 + j, signed_word(j))}, {j}));
      const auto [scale, min] = bf.scale(reader, sub, c64(0));
      k.run(k.store(k.buffer(2, dtypes::float32), b, scale));
      if (bf.has_min) k.run(k.store(k.buffer(3, dtypes::float32), b, min));
    }
    KExpr js = k.range(8, Axis::REDUCE);
    KExpr sum = k.reduce(KExpr::dot4(i32(k, 0), i32(k, 0x01010101), signed_word(js), true), Reduce::SUM, {js});
    k.run(k.store(k.buffer(0, dtypes::int32), b, sum * i32(k, -128)));
    k.parallel();
    return k;
  });
  if (!decode) return {k({{{rows, nb32}, dtypes::int32}}, {w.words})[0], std::nullopt, std::nullopt};
  std::vector<std::pair<Shape, DType>> outs{
      {{rows, nb32}, dtypes::int32}, {{rows, nb32, 8}, dtypes::int32}, {{rows, nb32}, dtypes::float32}};
  if (bf.has_min) outs.push_back({{rows, nb32}, dtypes::float32});
  auto out = k(outs, {w.words});
  return {out[0], out[1], out[2], bf.has_min ? std::optional(out[3]) : std::nullopt};
}

// The tiled product: a work item is R rows x G tokens (the activation grouped by G), the lanes along the tokens,
// so nothing is folded across lanes at the end. Per 32-value block each row's words are broadcast to the G lanes
// and chained through DOT4s that start at the zero point's share; one FMA per (row, lane) applies the weight scale
// times the activation's, one more the minimum. The weights come three ways: signed bytes as stored (Q8_0), signed
// bytes decoded once per product (signed_weights: every other format but Q6_K, from kDecodedTokens tokens), or
// decoded word by word in the loop as unsigned bytes (Q6_K, whose halves have scales of their own; the others below
// kDecodedTokens). Signed, the activation is biased to unsigned
// and the chain starts at the row's -128 x its block sum of weights (each word goes from memory straight into
// vpdpbusd's broadcast operand, where a word decoded in the loop takes a general-register to vector broadcast on
// the port the dot products need); unsigned, at -offset x the activation's block sum of q, per lane. The chain is
// written word by word over the whole tile (a register array of R x G int32), so each word's G activation lanes are
// loaded once and used by the R rows at once: written row by row, the 8 words' vectors stay live for all rows, past the
// 32 vector registers. Measured on one core (Qwen3-shaped 2048 x 1024 Q4_0, 512 tokens): 70 GMAC/s row by row, 91-108
// word by word with R = 4 (LLVM hoists the 32 broadcasts and spills), 128 with R = 2 and G = 32 (G = 64: 110-119, G =
// 16: 75-106). Signed words take R = 4 (8 chains of 5-cycle vpdpbusd in flight; Q8_0 2048 x 2048, 512 tokens, AVX-512
// Xeon: 0.33 of the VNNI peak decoded with R = 2, 0.39 decoded with R = 4, 0.52 from memory with R = 4, in a C model of
// this kernel).
// With `grouped` (GroupedExperts: w stacks E experts' matrices) token group tg multiplies expert ids[tg]'s rows only.
Tensor int8_tiled(const QuantMatrix& w, const Format& f, const Int8Activation& a,
                  const GroupedExperts* grouped = nullptr) {
  const ByteForm& bf = *f.bytes;
  const bool dense = decoded_once(bf) && a.biased, signed_w = dense || static_cast<bool>(bf.signed_word);
  if (signed_w && ((bf.has_min && !dense) || bf.split_halves || !a.biased || !a.sums))
    throw std::logic_error("tg-llm: signed weight words take one scale per 32 values and a biased activation");
  const int64_t E = grouped ? grouped->experts : 1, G = a.group, T = a.scale.shape()[0] * G, rows = w.rows / E,
                rw = w.row_words(), nb32 = w.cols / 32, subs = f.group_elems / 32;
  int64_t R = signed_w ? 4 : 2;
  while (rows % R) R /= 2;
  // the inputs, in buffer order from 1 (0 is the output): the weights' words (or signed words), the activation's
  // words and scales, then its sums (unsigned words) or the weights' block sums (signed), a decoded format's scales
  // and minimums and the activation's sums, and the experts of the token groups last
  std::vector<Tensor> inputs;
  if (!signed_w) {
    inputs = {w.words, a.words, a.scale, *a.sums};
  } else {
    const SignedWeights sw = signed_weights(w, f);
    inputs = {dense ? *sw.words : w.words, a.words, a.scale, sw.sums};
    if (dense) inputs.push_back(*sw.scales);
    if (dense && bf.has_min) inputs.insert(inputs.end(), {*sw.mins, *a.sums});
  }
  if (grouped) inputs.push_back(grouped->ids);
  const int ids_buffer = static_cast<int>(inputs.size());
  // keyed by the weights' form too: a padded T holds token counts on both sides of kDecodedTokens
  const int64_t variant = (grouped ? E * 1024 + G : 0) * 2 + static_cast<int64_t>(dense);
  const KernelKey key{KernelKind::int8_tiled, w.type, w.rows, w.cols, T, variant};
  const CustomKernel& k = cached(key, [&] {
    CustomKernel k(std::string(grouped ? "qgemm_id_" : "qgemm_") + type_traits(w.type).name);
    auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
    // token groups outermost: a group's activation (G x cols bytes) stays in L1 while the rows stream past it
    KExpr tg = k.range(T / G, Axis::GLOBAL), ro = k.range(rows / R, Axis::GLOBAL);
    // the first row of the group's expert (an id outside [0, E) reads expert 0: never past the weights)
    KExpr first_row = c64(0);
    if (grouped) {
      KExpr id = k.load(k.buffer(ids_buffer, dtypes::int32), tg).cast(dtypes::int64);
      first_row = KExpr::where((c64(-1) < id) && (id < c64(E)), id, c64(0)) * c64(rows);
    }
    auto row = [&](const KExpr& i) { return first_row + ro * R + i; };
    // sums: the activation's half-block sums of q, or the weights' block sums (signed words)
    // words: the packed weights, or (dense) their signed words; dense also reads its scales (buffer 5)
    KExpr words = k.buffer(1, dense ? dtypes::int32 : dtypes::uint8), xq = k.buffer(2, dtypes::int32),
          xd = k.buffer(3, dtypes::float32), sums = k.buffer(4, dtypes::int32);
    KExpr acc = k.reg(dtypes::float32, R * G), dots = k.reg(dtypes::int32, R * G), z = k.range(R * G, Axis::LOOP);
    KExpr init = k.loop({k.store(acc, z, f32c(k, 0))}, {z});
    k.run(init);
    KExpr p = k.range(nb32, Axis::LOOP), blk = tg * nb32 + p, sub = p % c64(subs);
    auto reader = [&](const KExpr& i) { return GroupReader{k, words, row(i) * rw + (p / c64(subs)) * f.group_bytes}; };
    // the activation's half-block sums of q: buffer 4 where the weights are unsigned, 7 after a decoded format's mins
    auto qsum = [&](int64_t h, const KExpr& l) {
      return k.load(dense ? k.buffer(7, dtypes::int32) : sums, (blk * 2 + h) * G + l);
    };
    // one statement over the tile: the value fn(i, l) stored into slot i * G + l of a register array
    auto over_tile = [&](const KExpr& reg, const std::function<KExpr(const KExpr& i, const KExpr& l)>& fn) {
      KExpr i = k.range(R, Axis::UPCAST), l = k.range(G, Axis::UPCAST);
      return k.loop({k.store(reg, i * G + l, fn(i, l))}, {i, l});
    };
    std::vector<KExpr> body;
    KExpr summed = init;  // the statement after which acc holds this block's partial sums so far
    const int64_t halves = bf.split_halves ? 2 : 1, per_half = 8 / halves;
    for (int64_t h = 0; h < halves; ++h) {
      // the chain restarts after the previous half's sums read it: without the AFTER, two halves starting at the
      // same value (Q2_K: no zero point) are one store once the tile's ranges are unrolled, and the second half
      // would go on from the first's dots
      KExpr chained = over_tile(h ? k.after(dots, {summed}) : dots, [&](const KExpr& i, const KExpr& l) {
        if (signed_w) return k.load(sums, row(i) * nb32 + p);
        KExpr s = halves == 2 ? qsum(h, l) : qsum(0, l) + qsum(1, l);
        return bf.offset ? s * i32(k, -bf.offset) : i32(k, 0);
      });
      body.push_back(chained);
      for (int64_t j = h * per_half; j < (h + 1) * per_half; ++j) {
        KExpr prev = chained;
        chained = over_tile(dots, [&](const KExpr& i, const KExpr& l) {
          KExpr before = k.load(k.after(dots, {prev}), i * G + l), x = k.load(xq, (blk * 8 + j) * G + l);
          if (dense) return KExpr::dot4(before, x, k.load(words, (row(i) * nb32 + p) * 8 + j), narrow_signed(bf));
          return signed_w ? KExpr::dot4(before, x, bf.signed_word(reader(i), sub, c64(j)))
                          : KExpr::dot4(before, bf.word(reader(i), sub, c64(j)), x, narrow_unsigned(bf));
        });
        body.push_back(chained);
      }
      KExpr before = summed;
      summed = over_tile(acc, [&](const KExpr& i, const KExpr& l) {
        KExpr dx = k.load(xd, blk * G + l);
        const KExpr at = row(i) * nb32 + p;
        auto [scale, min] = !dense ? bf.scale(reader(i), sub, c64(h))
                                   : std::pair{k.load(k.buffer(5, dtypes::float32), at),
                                               bf.has_min ? k.load(k.buffer(6, dtypes::float32), at) : KExpr()};
        KExpr cur = KExpr::fma(k.load(k.after(dots, {chained}), i * G + l).cast(dtypes::float32), scale * dx,
                               k.load(k.after(acc, {before}), i * G + l));
        if (!bf.has_min) return cur;
        KExpr q = halves == 2 ? qsum(h, l) : qsum(0, l) + qsum(1, l);  // the sum of q the minimum multiplies
        return KExpr::fma(min, dx * q.cast(dtypes::float32), cur);
      });
      body.push_back(summed);
    }
    KExpr step = k.loop(body, {p});
    k.run(step);
    KExpr done = k.after(acc, {step}), io = k.range(R, Axis::UPCAST), lo = k.range(G, Axis::UPCAST);
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), (tg * G + lo) * rows + ro * R + io, k.load(done, io * G + lo))},
                 {io, lo}));
    k.parallel();
    return k;
  });
  return k({{{T, rows}, dtypes::float32}}, inputs)[0];
}

}  // namespace

namespace {

// Rows per block of the argmax head: 64, or the largest power of two dividing the rows.
int64_t argmax_block(int64_t rows) {
  int64_t R = 64;
  while (rows % R) R /= 2;
  return R;
}

// x with zero rows appended up to Tp rows.
Tensor padded(const Tensor& x, int64_t Tp) { return Tp == x.shape()[0] ? x : x.pad({{0, Tp - x.shape()[0]}, {0, 0}}); }

// Per row and token: 8 int32 lanes per 32-value sub-block (word j of it each) take one DOT4, and one float FMA adds
// them times the weight scale x the activation scale; two sub-blocks go together where their count is even (16
// lanes, one 512-bit vpdpbusd: on Gemma 3 270M the Q8_0 output head 12.0 -> 8.7 ms a token, the Q5_0 products
// 5.4 -> 4.2 ms). A minimum and a fixed zero point are added once per sub-block (has_minimum_term, below). The U tokens
// share each decoded word. With `argmax` (greedy decoding's output head) a work item runs a block of rows one after
// another and keeps, per token, the best value and its row: outputs (Tp, blocks) float32 and int32. `routed` (U = 1):
// the stacked experts' product of qmatmul_experts, one "token" per (token, slot) pair reading its expert's rows (the
// ids an input after the activation's); an id out of range gives a zero row.
CustomKernel row_products(const QuantMatrix& w, const Format& f, int64_t Tp, int64_t U, bool argmax,
                          const Routed* routed = nullptr) {
  const ByteForm& bf = *f.bytes;
  const int64_t rows = routed ? w.rows / routed->experts : w.rows, cols = w.cols, rw = w.row_words();
  const int64_t subs = f.group_elems / 32, nb32 = cols / 32, P = nb32 % 2 == 0 ? 2 : 1, L = 8 * P;
  const int64_t pairs = subs > 1 && subs % P == 0 && U <= 2 ? subs / P : 1;  // unrolled per group (below)
  CustomKernel k(std::string(argmax ? "qargmax_" : "qdot_") + type_traits(w.type).name);
  int64_t R = 1;  // rows in blocks of R with several token groups: their activations stay in L1 (as qmatmul)
  if (argmax) R = argmax_block(rows);
  while (!argmax && !routed && Tp > U && R < 64 && rows % (R * 2) == 0 && rows / (R * 2) >= 16) R *= 2;
  // routed: the pairs outermost (split over the cores), each streaming its expert's rows in order, which the
  // prefetch runs ahead of (the OLMoE-shaped experts' products, pairs inside row blocks: 4.7 and 2 GB/s). Summed:
  // the rows outermost (a token's work item loops over its k slots)
  const bool summed = routed && routed->summed;
  KExpr pair_first = routed && !summed ? k.range(Tp, Axis::GLOBAL) : KExpr();
  KExpr ro = k.range(rows / R, Axis::GLOBAL), tg = routed && !summed ? pair_first : k.range(Tp / U, Axis::GLOBAL),
        ri = k.range(R, argmax ? Axis::LOOP : Axis::GLOBAL);
  KExpr r = ro * R + ri;
  const int in0 = argmax ? 2 : 1;  // the outputs, then the weights, the activation's words and scales
  KExpr words = k.buffer(in0, dtypes::uint8), xq = k.buffer(in0 + 1, dtypes::int32),
        xd = k.buffer(in0 + 2, dtypes::float32);
  // what a minimum multiplies: the activation's block sums (d x the sum of q), or with a minimum per half-block
  // (Q2_K) its half-block sums of q
  const bool minimum = has_minimum_term(bf), half_mins = minimum && bf.split_halves;
  const std::optional<KExpr> xs =
      minimum ? std::optional(k.buffer(in0 + 3, half_mins ? dtypes::int32 : dtypes::float32)) : std::nullopt;
  auto minimum_of = [&](const GroupReader& rs, const KExpr& sub, const KExpr& h) {
    auto [scale, min] = bf.scale(rs, sub, h);
    if (!bf.offset) return min;
    KExpr zero_point = scale * f32c(k, -static_cast<double>(bf.offset));
    return bf.has_min ? min + zero_point : zero_point;
  };
  auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
  // the weight row output row r reads, and the activation row of token u of group tg; summed, the slot sl's
  KExpr wr = r, routed_ok, sl, weight;
  std::function<KExpr(const KExpr&)> token = [&](const KExpr& u) { return tg * U + u; };
  if (routed) {
    const int ids = in0 + (minimum ? 4 : 3);
    if (summed) sl = k.range(routed->k, Axis::LOOP);
    KExpr pair = summed ? tg * c64(routed->k) + sl : tg;
    KExpr id = k.load(k.buffer(ids, dtypes::int32), pair).cast(dtypes::int64);
    routed_ok = (c64(-1) < id) && (id < c64(routed->experts));
    wr = KExpr::where(routed_ok, id, c64(0)) * c64(rows) + r;
    token = [&, pair, shared = routed->shared, K = routed->k](const KExpr&) { return shared ? tg / c64(K) : pair; };
    // summed: the slot's routing weight scales its activation (an id out of range: 0)
    if (summed) weight = KExpr::where(routed_ok, k.load(k.buffer(ids + 1, dtypes::float32), pair), f32c(k, 0));
  }
  auto weighted = [&](const KExpr& x) { return summed ? x * weight : x; };
  std::vector<KExpr> body;  // what runs for each row
  std::optional<KExpr> prefetch;
  if ((Tp == U || routed) && prefetch_helps()) prefetch = prefetch_ahead(k, words, wr * rw, rw, w.rows * rw);
  if (prefetch && !summed) body.push_back(*prefetch);
  KExpr acc = k.reg(dtypes::float32, L * U * pairs), z = k.range(L * U * pairs, Axis::LOOP);
  KExpr init = k.loop({k.store(acc, z, f32c(k, 0))}, {z});
  body.push_back(init);
  // lane jj: word jj % 8 of sub-block P * p + jj / 8 of the row. Formats with several sub-blocks a group (the
  // K-quants, IQ4_XS) unroll the pairs of one group at decode (p = pg * pairs + pi, each with lanes of its own,
  // summed after the loop): a step (one pg) is then a whole group, and each sub-block's index a constant
  KExpr pg = k.range(nb32 / P / pairs, Axis::LOOP), pi = pairs > 1 ? k.range(pairs, Axis::UPCAST) : c64(0);
  KExpr p = pg * c64(pairs) + pi, u = k.range(U, Axis::UPCAST), jj = k.range(L, Axis::UPCAST);
  KExpr j = jj % c64(8), zero = i32(k, 0);
  // What is the same for the 8 lanes of a sub-block is computed once per sub-block, for the S sub-blocks of a step
  // at once (one vector: the K-quants' 6-bit scales unpacked 8 at a time, where per pair they took ~10 scalar
  // instructions of the ~25 a pair runs), into registers the lanes read at constant indices (a broadcast): its
  // scale x the activation block's d (per half where halves have scales of their own); and where the format has a
  // minimum m, m x (the activation block's d x sum of q) added into registers of their own (one per sub-block and
  // token: no chain through one register), a DOT4, a conversion and an FMA less per lane than m x d x (the lane's
  // bytes summed by a DOT4 of ones). At one token, median GMAC/s: Llama-3.2-1B-shaped Q4_K 33-34 -> 50-56;
  // Qwen2.5-Coder-0.5B's Q4_K 32 -> 50, Q6_K 40 -> 43, Q8_0 and Q5_0 as before.
  const int64_t S = pairs * P, H = bf.split_halves ? 2 : 1;
  KExpr scales = k.reg(dtypes::float32, S * U * H), mins, min_init;
  if (minimum) {
    mins = k.reg(dtypes::float32, S * U);
    KExpr zm = k.range(S * U, Axis::LOOP);
    min_init = k.loop({k.store(mins, zm, f32c(k, 0))}, {zm});
    body.push_back(min_init);
  }
  // sub-block at of the row (a step's S sub-blocks: at = pg x S + s), token us: its reader, index in its group, and
  // the activation block it meets
  auto sub_block = [&](const KExpr& s, const KExpr& us) {
    KExpr at = pg * c64(S) + s;
    return std::tuple{GroupReader{k, words, wr * rw + (at / c64(subs)) * f.group_bytes}, at % c64(subs),
                      token(us) * nb32 + at};
  };
  std::vector<KExpr> per_step;
  {
    // one range over (sub-block, half): Q6_K's 16 scale bytes of a step are one load
    KExpr us = k.range(U, Axis::UPCAST), sh = k.range(S * H, Axis::UPCAST);
    auto [rs, sub, xb] = sub_block(sh / c64(H), us);
    KExpr at = ((sh / c64(H)) * c64(U) + us) * c64(H) + sh % c64(H);
    per_step.push_back(
        k.loop({k.store(scales, at, bf.scale(rs, sub, sh % c64(H)).first * weighted(k.load(xd, xb)))}, {us, sh}));
  }
  if (minimum) {
    KExpr us = k.range(U, Axis::UPCAST), s = k.range(S, Axis::UPCAST), slot = s * c64(U) + us;
    auto [rs, sub, xb] = sub_block(s, us);
    KExpr before = k.load(k.after(mins, {min_init}), slot), next;
    if (half_mins) {
      auto half_term = [&](int64_t h, const KExpr& acc) {
        KExpr x = weighted(k.load(xd, xb)) * k.load(*xs, xb * c64(2) + c64(h)).cast(dtypes::float32);
        return KExpr::fma(minimum_of(rs, sub, c64(h)), x, acc);
      };
      next = half_term(1, half_term(0, before));
    } else {
      next = KExpr::fma(minimum_of(rs, sub, c64(0)), weighted(k.load(*xs, xb)), before);
    }
    per_step.push_back(k.loop({k.store(mins, slot, next)}, {us, s}));
  }
  auto sub_of = [&](const KExpr& q) { return (p * P + q) % c64(subs); };
  auto reader = [&](const KExpr& q) {
    return GroupReader{k, words, wr * rw + ((p * P + q) / c64(subs)) * f.group_bytes};
  };
  KExpr blk = token(u) * nb32 + p * P;  // the activation's 32-block of the first sub-block
  KExpr x = k.load(xq, blk * 8 + jj);
  KExpr dot = KExpr::dot4(zero, bf.word(reader(jj / c64(8)), sub_of(jj / c64(8)), j), x, narrow_unsigned(bf));
  auto scale = [&](int64_t q, int64_t h) {
    return k.load(k.after(scales, {per_step[0]}), ((pi * c64(P) + c64(q)) * c64(U) + u) * c64(H) + c64(h));
  };
  auto of_sub_block = [&](int64_t q) { return H == 2 ? KExpr::where(j < 4, scale(q, 0), scale(q, 1)) : scale(q, 0); };
  KExpr a = P == 1 ? of_sub_block(0) : KExpr::where(jj < 8, of_sub_block(0), of_sub_block(1));
  KExpr slot = (pi * c64(U) + u) * c64(L) + jj,
        next = KExpr::fma(dot.cast(dtypes::float32), a, k.load(k.after(acc, {init}), slot));
  KExpr lanes =
      k.loop({k.store(acc, slot, next)}, pairs > 1 ? std::vector<KExpr>{pi, u, jj} : std::vector<KExpr>{u, jj});
  per_step.push_back(lanes);
  KExpr step = k.loop(per_step, {pg});
  if (summed) {  // the token's slots one after another, each from its expert's row (prefetched ahead)
    std::vector<KExpr> per_slot{step};
    if (prefetch) per_slot.insert(per_slot.begin(), *prefetch);
    step = k.loop(per_slot, {sl});
  }
  body.push_back(step);
  // the unrolled pairs' lanes summed into the first's, then the L lanes folded in place (lane l += lane l + L/2,
  // then + L/4, ...)
  KExpr folded = k.after(acc, {step});
  for (int64_t q = 1; q < pairs; ++q) {
    KExpr uh = k.range(U, Axis::UPCAST), lh = k.range(L, Axis::UPCAST);
    KExpr add =
        k.loop({k.store(acc, uh * L + lh, k.load(folded, uh * L + lh) + k.load(folded, (uh + c64(q * U)) * L + lh))},
               {uh, lh});
    body.push_back(add);
    folded = k.after(acc, {add});
  }
  for (int64_t half = L / 2; half >= 1; half /= 2) {
    KExpr uh = k.range(U, Axis::UPCAST), lh = k.range(half, Axis::UPCAST);
    KExpr fold =
        k.loop({k.store(acc, uh * L + lh, k.load(folded, uh * L + lh) + k.load(folded, uh * L + lh + half))}, {uh, lh});
    body.push_back(fold);
    folded = k.after(acc, {fold});
  }
  KExpr uo = k.range(U, Axis::UPCAST);
  // token uo's product: the folded lanes plus its minimum terms
  auto total = [&](const KExpr& uo) {
    KExpr v = k.load(folded, uo * L);
    for (int64_t i = 0; minimum && i < S; ++i) v = v + k.load(k.after(mins, {step}), c64(i) * c64(U) + uo);
    return v;
  };
  if (!argmax) {
    for (const KExpr& st : body) k.run(st);
    KExpr y = routed && !summed ? KExpr::where(routed_ok, total(uo), f32c(k, 0)) : total(uo);
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), (tg * U + uo) * rows + r, y)}, {uo}));
  } else {
    // the first row of the block with the largest value wins (a NaN never does)
    KExpr best = k.reg(dtypes::float32, U), besti = k.reg(dtypes::int32, U), zu = k.range(U, Axis::LOOP);
    KExpr none = k.loop(
        {k.store(best, zu, f32c(k, -std::numeric_limits<double>::infinity())), k.store(besti, zu, i32(k, 0))}, {zu});
    k.run(none);
    KExpr v = total(uo), b = k.load(k.after(best, {none}), uo), better = b < v;
    body.push_back(
        k.loop({k.store(best, uo, KExpr::where(better, v, b)),
                k.store(besti, uo, KExpr::where(better, r.cast(dtypes::int32), k.load(k.after(besti, {none}), uo)))},
               {uo}));
    KExpr each_row = k.loop(body, {ri});
    k.run(each_row);
    KExpr ub = k.range(U, Axis::UPCAST), at = (tg * U + ub) * (rows / R) + ro;
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), at, k.load(k.after(best, {each_row}), ub)),
                  k.store(k.buffer(1, dtypes::int32), at, k.load(k.after(besti, {each_row}), ub))},
                 {ub}));
  }
  k.parallel();
  return k;
}

int64_t token_group(int64_t T) { return T >= 16 ? 16 : T >= 8 ? 8 : T >= 4 ? 4 : T >= 2 ? 2 : 1; }

// The tiled product's activation of `in` (groups of G tokens, Tp rows), made once per ProductInput: biased where the
// weights are the signed operand (stored signed, or decoded once where `decode`: enough tokens pay for the pass).
const Int8Activation& tiled_activation(ProductInput& in, const ByteForm& bf, int64_t G, int64_t Tp, bool decode) {
  const bool biased = (decoded_once(bf) && decode) || static_cast<bool>(bf.signed_word);
  if (!in.int8 || in.int8->group != G || in.int8->biased != biased)
    in.int8 = std::make_shared<Int8Activation>(quantize_int8(padded(in.x, Tp), G, biased));
  return *in.int8;
}

const Int8Activation& ungrouped(ProductInput& in, int64_t Tp) {
  if (!in.int8 || in.int8->group != 1) in.int8 = std::make_shared<Int8Activation>(quantize_int8(padded(in.x, Tp)));
  return *in.int8;
}

// row_products' inputs: the weights, the activation's words and scales, and its block sums where w has a minimum
// term
std::vector<Tensor> row_inputs(const QuantMatrix& w, const Format& f, const Int8Activation& a) {
  if (has_minimum_term(*f.bytes)) return {w.words, a.words, a.scale, f.bytes->split_halves ? *a.sums : *a.block_sums};
  return {w.words, a.words, a.scale};
}

}  // namespace

Tensor int8_matmul(const QuantMatrix& w, ProductInput& in) {
  const Format& f = format_of(w);
  if (!f.bytes) throw std::invalid_argument("tg-llm: " + type_name(w.type) + " has no int8 product");
  const int64_t T = in.x.shape()[0], rows = w.rows;
  if (T >= kTileTokens) {
    const int64_t Tp = (T + kTileTokens - 1) / kTileTokens * kTileTokens;
    Tensor y = int8_tiled(w, f, tiled_activation(in, *f.bytes, kTileTokens, Tp, T >= kDecodedTokens));
    return Tp == T ? y : y.shrink({{0, T}, {0, rows}});
  }
  const int64_t U = token_group(T), Tp = (T + U - 1) / U * U;
  const CustomKernel& k =
      cached({KernelKind::int8_product, w.type, rows, w.cols, Tp}, [&] { return row_products(w, f, Tp, U, false); });
  const Int8Activation& a = ungrouped(in, Tp);
  Tensor y = k({{{Tp, rows}, dtypes::float32}}, row_inputs(w, f, a))[0];
  return Tp == T ? y : y.shrink({{0, T}, {0, rows}});
}

Tensor int8_matmul_grouped(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids) {
  const Format& f = format_of(w);
  const int64_t T = in.x.shape()[0], G = kExpertRunTokens;
  if (!f.bytes || in.x.shape()[1] != w.cols || experts < 1 || w.rows % experts || T % G || ids.ndim() != 1 ||
      ids.shape()[0] != T / G || ids.dtype() != dtypes::int32)
    throw std::invalid_argument("tg-llm: a grouped expert product of " + type_name(w.type) +
                                " needs (T, cols) rows in runs of " + std::to_string(G) + " and (T / " +
                                std::to_string(G) + ",) int32 expert ids, got " + shape_str(in.x.shape()) + " and " +
                                ids.dtype().name() + " " + shape_str(ids.shape()));
  // the weights decoded once per product where an expert's runs (on average) pay for the pass over every expert's
  const GroupedExperts grouped{experts, ids};
  return int8_tiled(w, f, tiled_activation(in, *f.bytes, G, T, T / experts >= kDecodedExpertTokens), &grouped);
}

Tensor int8_matmul_experts(const QuantMatrix& w, const Routed& routed, ProductInput& in, const Tensor& ids) {
  const Format& f = format_of(w);
  const int64_t P = ids.shape()[0] * ids.shape()[1];
  const CustomKernel& k = cached({KernelKind::int8_expert_product, w.type, w.rows, w.cols, P,
                                  ((routed.experts * 1024 + routed.k) * 2 + routed.shared) * 2},
                                 [&] { return row_products(w, f, P, 1, false, &routed); });
  std::vector<Tensor> inputs = row_inputs(w, f, ungrouped(in, in.x.shape()[0]));
  inputs.push_back(ids);
  return k({{{P, w.rows / routed.experts}, dtypes::float32}}, inputs)[0];
}

Tensor int8_matmul_experts_summed(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids,
                                  const Tensor& weights) {
  const Format& f = format_of(w);
  const int64_t T = ids.shape()[0], K = ids.shape()[1];
  const Routed routed{experts, K, false, true};
  const CustomKernel& k =
      cached({KernelKind::int8_expert_product, w.type, w.rows, w.cols, T, ((experts * 1024 + K) * 2) * 2 + 1},
             [&] { return row_products(w, f, T, 1, false, &routed); });
  std::vector<Tensor> inputs = row_inputs(w, f, ungrouped(in, in.x.shape()[0]));
  inputs.push_back(ids);
  inputs.push_back(weights);
  return k({{{T, w.rows / experts}, dtypes::float32}}, inputs)[0];
}

Tensor int8_argmax(const QuantMatrix& w, ProductInput& in) {
  const Format& f = format_of(w);
  const int64_t T = in.x.shape()[0];
  if (!f.bytes || T >= kTileTokens) return int8_matmul(w, in).argmax(-1);
  const int64_t U = token_group(T), Tp = (T + U - 1) / U * U;
  const CustomKernel& k =
      cached({KernelKind::int8_argmax, w.type, w.rows, w.cols, Tp}, [&] { return row_products(w, f, Tp, U, true); });
  const int64_t R = argmax_block(w.rows);
  const Int8Activation& a = ungrouped(in, Tp);
  auto best = k({{{Tp, w.rows / R}, dtypes::float32}, {{Tp, w.rows / R}, dtypes::int32}}, row_inputs(w, f, a));
  // the first block holding the largest value, then its row
  Tensor pick = best[1].gather(1, best[0].argmax(-1).cast(dtypes::int32).reshape({Tp, 1})).reshape({Tp});
  return Tp == T ? pick : pick.shrink({{0, T}});
}

}  // namespace tg::llm
