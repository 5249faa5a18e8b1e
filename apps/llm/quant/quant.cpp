// Quantized kernels: custom kernels over the packed weight bytes, each block decoded where it is read.
#include "quant/quant.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "quant/quant_formats.hpp"
#include "quant/quant_int8.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/quant_matrix_unit.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

namespace {

[[noreturn]] void unsupported(const std::string& what, GGMLType t) {
  std::string list;
  for (GGMLType s : supported_types()) list += (list.empty() ? "" : ", ") + type_name(s);
  throw Error("tg-llm: " + what + " has weight type " + type_name(t) + ", which tg cannot decode (supported: " + list +
              ")");
}

// Weights are streamed once per token, and on Intel the hardware prefetcher falls behind on them: on Gemma 3 270M's
// 262144 x 640 Q8_0 output head (Xeon, 2 threads) the matrix-vector product takes 18 ms as written and 10 ms when
// each row first asks for the bytes kPrefetchBytes ahead of it (4 to 8 KiB measured best). AMD's (EPYC, Zen)
// keeps up, and the requests only cost: decode tok/s without / with them, Llama-3.2-1B-shaped Q4_K 38.4 / 34.2,
// Qwen2.5-Coder-0.5B Q4_K_M 63 / 61, Gemma 3 270M Q4_K_M 117 / 102 (medians of 3). A hint: renderers that do not
// speak C skip it.
constexpr int64_t kPrefetchBytes = 6144;

}  // namespace

namespace detail {

const Format& format_of(const QuantMatrix& w) {
  const Format* f = find_format(w.type);
  if (!f) unsupported("a matrix", w.type);
  return *f;
}

const CustomKernel& cached(const KernelKey& key, const std::function<CustomKernel()>& build) {
  static std::mutex mu;
  static std::map<KernelKey, std::shared_ptr<CustomKernel>> kernels;
  std::lock_guard lock(mu);
  auto& k = kernels[key];
  if (!k) k = std::make_shared<CustomKernel>(build());
  return *k;
}

bool prefetch_helps() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool intel = __builtin_cpu_is("intel");
  return intel;
#else
  return true;  // measured on x86 only: other hosts keep the hint
#endif
}

KExpr prefetch_ahead(CustomKernel& k, const KExpr& bytes, const KExpr& start, int64_t n, int64_t total) {
  KExpr line = k.range((n + 63) / 64, Axis::LOOP);
  // never an address past the buffer: the last rows ask again for their own bytes (one select a row; a select a
  // line took ~80 instructions a row, 20% of a 2048-column Q4_K row's product)
  KExpr ahead = start + kPrefetchBytes, base = KExpr::where(ahead + (n + 63) / 64 * 64 < total + 1, ahead, start);
  return k.loop({k.inline_stmt({{"c", "__builtin_prefetch(&{0}[{1}]);"}, {"*", ""}}, {bytes, base + line * 64})},
                {line});
}

}  // namespace detail

using namespace detail;

const std::vector<GGMLType>& supported_types() {
  static const std::vector<GGMLType> types = format_types();
  return types;
}

bool is_supported(GGMLType t) { return find_format(t) != nullptr; }

int64_t QuantMatrix::row_words() const {
  const Format* f = find_format(type);
  return f ? cols / f->group_elems * f->group_bytes : 0;
}

QuantMatrix upload_matrix(const GGUFTensor& t, std::shared_ptr<const void> owner, const std::string& device) {
  const Format* f = find_format(t.type);
  if (!f) unsupported("tensor '" + t.name + "'", t.type);
  const int64_t cols = t.ne.at(0), rows = t.rows();
  if (cols % f->group_elems != 0)
    throw Error("tg-llm: tensor '" + t.name + "' rows of " + std::to_string(cols) + " " + type_name(t.type) +
                " values are not a multiple of " + std::to_string(f->group_elems));
  const int64_t bytes = rows * (cols / f->group_elems * f->group_bytes);
  if (static_cast<uint64_t>(bytes) != t.nbytes)
    throw Error("tg-llm: tensor '" + t.name + "' holds " + std::to_string(t.nbytes) + " bytes, its shape needs " +
                std::to_string(bytes));
  if (f->grid.empty())
    return QuantMatrix{t.type, rows, cols,
                       Tensor::from_host_memory(t.data, t.nbytes, {bytes}, dtypes::uint8, std::move(owner), device)};
  // an IQ format: its grid after the weights, in one buffer the kernels read (a copy of the mapped bytes)
  auto with_grid = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(t.data),
                                                          static_cast<const uint8_t*>(t.data) + t.nbytes);
  with_grid->insert(with_grid->end(), f->grid.begin(), f->grid.end());
  const int64_t total = static_cast<int64_t>(with_grid->size());
  return QuantMatrix{
      t.type, rows, cols,
      Tensor::from_host_memory(with_grid->data(), with_grid->size(), {total}, dtypes::uint8, with_grid, device)};
}

Tensor panel_matmul(const QuantMatrix& w, const Tensor& x);

// x is realized in place (not copied into a contiguous temporary), so the other readers of a shared activation
// (q, k and v of one norm) reuse its buffer instead of recomputing it.
Tensor qmatmul(const QuantMatrix& w, const Tensor& x) {
  ProductInput in{x, nullptr};
  return qmatmul(w, in);
}

Tensor qmatmul(const QuantMatrix& w, ProductInput& in) {
  const Tensor& x = in.x;
  const Format& f = format_of(w);
  if (x.ndim() != 2 || x.shape()[1] != w.cols || x.dtype() != dtypes::float32)
    throw std::invalid_argument("tg-llm: qmatmul of a " + std::to_string(w.rows) + "x" + std::to_string(w.cols) + " " +
                                type_name(w.type) + " matrix needs float32 (T, " + std::to_string(w.cols) +
                                ") activations, got " + x.dtype().name() + " " + shape_str(x.shape()));
  const int64_t T = x.shape()[0], rows = w.rows, cols = w.cols, rw = w.row_words();
  if (takes_matrix_unit(w, T)) return tile_matmul(w, in);
  if (has_int8_product(w)) return int8_matmul(w, in);
  if (T >= kPanelTokens) return panel_matmul(w, x);
  // U tokens share each decoded weight block (the activations padded to a multiple of U rows). Measured on
  // Gemma 3 270M Q4_K_M (2 threads): 16-token prefill 73 tok/s at U = 1, 119 at U = 4; 64 tokens 179 at U = 4,
  // 222 at U = 8; 256 tokens 214 at U = 8 (124 at U = 16, past the registers)
  const int64_t U = T >= 8 ? 8 : T >= 4 ? 4 : T >= 2 ? 2 : 1, Tp = (T + U - 1) / U * U;
  const CustomKernel& k = cached({KernelKind::product, w.type, rows, cols, Tp}, [&] {
    // 32 partial sums per output and token, one per lane of a block: independent add chains the compiler can
    // keep in vector registers (one running sum would be a chain of dependent adds, latency-bound)
    CustomKernel k(std::string("qmm_") + type_traits(w.type).name);
    // with several token groups, rows go in blocks of R inside each group: the group's activations (U rows of x)
    // then stay in L1 across R weight rows instead of streaming from L2 once per row (R = 64 measured best; at
    // least 16 blocks are left for the threads to split)
    int64_t R = 1;
    while (Tp > U && R < 64 && rows % (R * 2) == 0 && rows / (R * 2) >= 16) R *= 2;
    KExpr ro = k.range(rows / R, Axis::GLOBAL), tg = k.range(Tp / U, Axis::GLOBAL), ri = k.range(R, Axis::GLOBAL);
    KExpr r = ro * R + ri;
    KExpr words = k.buffer(1, dtypes::uint8);
    if (Tp == U && prefetch_helps())
      k.run(prefetch_ahead(k, words, r * rw, rw, rows * rw));  // rows are streamed once: see above
    // the zeroing stays a loop: as UPCAST vector stores it measured slower (Qwen3-shaped prefill 73 -> 63 tok/s)
    KExpr acc = k.reg(dtypes::float32, 32 * U), zero = k.range(32 * U, Axis::LOOP);
    KExpr init = k.loop({k.store(acc, zero, k.constant(0, dtypes::float32))}, {zero});
    KExpr b = k.range(cols / f.group_elems, Axis::LOOP), lane = k.range(32, Axis::UPCAST), u = k.range(U, Axis::UPCAST);
    std::vector<KExpr> loops{b};
    KExpr e = lane;
    if (f.group_elems > 32) {
      KExpr run = k.range(f.group_elems / 32, Axis::LOOP);
      loops.push_back(run);
      e = run * 32 + lane;
    }
    loops.insert(loops.end(), {u, lane});
    GroupReader rd{k, words, r * rw + b * f.group_bytes, k.constant(static_cast<double>(rows * rw), dtypes::int64)};
    KExpr wv = f.decode(rd, e);  // one decode for the U tokens
    KExpr xv = k.load(k.buffer(2, dtypes::float32), (tg * U + u) * cols + b * f.group_elems + e);
    KExpr slot = u * 32 + lane;
    KExpr step = k.loop({k.store(acc, slot, KExpr::fma(wv, xv, k.load(k.after(acc, {init}), slot)))}, loops);
    k.run(init);
    k.run(step);
    // each token's 32 lanes summed as a tree, halving in place (lane l += lane l + half): 5 vector adds deep
    // where a running sum is 31 dependent adds, which cost a third of a 1024-column row's decode
    KExpr cur = k.after(acc, {step});
    for (int64_t half = 16; half >= 1; half /= 2) {
      KExpr uh = k.range(U, Axis::UPCAST), lh = k.range(half, Axis::UPCAST);
      KExpr fold =
          k.loop({k.store(acc, uh * 32 + lh, k.load(cur, uh * 32 + lh) + k.load(cur, uh * 32 + lh + half))}, {uh, lh});
      k.run(fold);
      cur = k.after(acc, {fold});
    }
    KExpr uo = k.range(U, Axis::UPCAST);
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), (tg * U + uo) * rows + r, k.load(cur, uo * 32))}, {uo}));
    k.parallel();
    return k;
  });
  Tensor xp = Tp == T ? x : x.pad({{0, Tp - T}, {0, 0}});
  Tensor y = k({{{Tp, rows}, dtypes::float32}}, {w.words, xp})[0];
  return Tp == T ? y : y.shrink({{0, T}, {0, rows}});
}

Tensor qargmax(const QuantMatrix& w, ProductInput& in) {
  if (takes_matrix_unit(w, in.x.shape()[0])) return tile_matmul(w, in).argmax(-1).cast(dtypes::int32);
  return has_int8_product(w) ? int8_argmax(w, in) : qmatmul(w, in).argmax(-1).cast(dtypes::int32);
}

namespace {

// out[t, c] = W[row(t), c]: the rows of the ids (embedding), or rows [row0, row0 + n) (dequantize; row0 is a
// variable, so every panel of a matrix shares one kernel).
Tensor gather_rows(const QuantMatrix& w, const Tensor* ids, int64_t row0, int64_t n) {
  const Format& f = format_of(w);
  const int64_t cols = w.cols, rw = w.row_words(), T = ids ? ids->shape()[0] : n;
  const Variable first("row0", 0, std::max<int64_t>(0, w.rows - n));
  const CustomKernel& k = cached({ids ? KernelKind::embedding : KernelKind::dequantize, w.type, w.rows, cols, T}, [&] {
    CustomKernel k(std::string(ids ? "qembed_" : "dequant_") + type_traits(w.type).name);
    // each block decoded as 32-lane runs (vector statements), like the product kernel
    KExpr t = k.range(T, Axis::GLOBAL), blk = k.range(cols / f.group_elems, Axis::GLOBAL);
    KExpr lane = k.range(32, Axis::UPCAST), e = lane;
    std::vector<KExpr> loops;
    if (f.group_elems > 32) {
      KExpr run = k.range(f.group_elems / 32, Axis::LOOP);
      loops.push_back(run);
      e = run * 32 + lane;
    }
    loops.push_back(lane);
    KExpr row = ids ? t : t + k.variable(first).cast(dtypes::int64), ok;
    if (ids) {
      KExpr id = k.load(k.buffer(2, dtypes::int32), t).cast(dtypes::int64);
      ok = (k.constant(-1, dtypes::int64) < id) && (id < w.rows);
      row = KExpr::where(ok, id, k.constant(0, dtypes::int64));
    }
    GroupReader rd{k, k.buffer(1, dtypes::uint8), row * rw + blk * f.group_bytes,
                   k.constant(static_cast<double>(w.rows * rw), dtypes::int64)};
    KExpr v = f.decode(rd, e);
    if (ids) v = KExpr::where(ok, v, k.constant(0, dtypes::float32));
    k.run(k.loop({k.store(k.buffer(0, dtypes::float32), t * cols + blk * f.group_elems + e, v)}, loops));
    k.parallel();
    return k;
  });
  std::vector<Tensor> in{w.words};
  if (ids) in.push_back(*ids);
  std::vector<BoundVariable> vars;
  if (!ids) vars.push_back(first.bind(row0));
  return k({{{T, cols}, dtypes::float32}}, in, vars)[0];
}

}  // namespace

Tensor qembedding(const QuantMatrix& w, const Tensor& ids) {
  if (ids.ndim() != 1 || ids.dtype() != dtypes::int32)
    throw std::invalid_argument("tg-llm: embedding ids must be (T,) int32, got " + ids.dtype().name() + " " +
                                shape_str(ids.shape()));
  return gather_rows(w, &ids, 0, 0);
}

Tensor dequantize(const QuantMatrix& w) { return gather_rows(w, nullptr, 0, w.rows); }

Tensor dequantize_rows(const QuantMatrix& w, int64_t row0, int64_t n) {
  if (row0 < 0 || n < 1 || row0 + n > w.rows)
    throw std::invalid_argument("tg-llm: rows [" + std::to_string(row0) + ", " + std::to_string(row0 + n) +
                                ") of a matrix of " + std::to_string(w.rows));
  return gather_rows(w, nullptr, row0, n);
}

// Prefill of many tokens: panels of at most kPanelBytes of rows are decoded into a scratch buffer, one at a time,
// and multiplied by the float32 GEMM (the decode is paid once per panel, not once per 8 tokens). The whole matrix
// is never dequantized; the scratch is freed panel by panel.
Tensor panel_matmul(const QuantMatrix& w, const Tensor& x) {
  constexpr int64_t kPanelBytes = 16 << 20;
  const int64_t panel = std::min(w.rows, std::max<int64_t>(32, kPanelBytes / (w.cols * 4) / 32 * 32));
  // realized first: fused into the product, the activation's producer (a norm, silu(g) * u) would be recomputed
  // for every output tile of every panel
  Tensor xr = x;
  xr.realize();
  std::vector<Tensor> parts;
  for (int64_t r0 = 0; r0 < w.rows; r0 += panel) {
    Tensor wp = dequantize_rows(w, r0, std::min(panel, w.rows - r0));
    parts.push_back(xr.matmul(wp.transpose(0, 1)).realize());
  }
  return parts.size() == 1 ? parts[0] : Tensor::cat(parts, 1);
}

}  // namespace tg::llm
