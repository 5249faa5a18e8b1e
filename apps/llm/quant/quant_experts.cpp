// Products with stacked expert matrices by routed rows (llama.cpp's mul_mat_id): each (token, slot) pair reads only
// its own expert's rows, wherever the expert ids come from (a routing kernel on the device: no host round trip).
#include <stdexcept>
#include <string>

#include "quant/quant.hpp"
#include "quant/quant_int8.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/quant_matrix_unit.hpp"

namespace tg::llm {

using detail::cached;
using detail::format_of;
using detail::KernelKey;
using detail::KernelKind;

namespace {

// One work item per (output row, pair): 32 lanes of partial sums along a block, each weight decoded to float32 in
// the kernel (every format has a decoder), then folded as a tree (as qmatmul's float kernel). An expert id out of
// [0, E) gives a zero row (a routing pad); the weights of expert 0 are read in its place, never past the buffer.
CustomKernel expert_kernel(const QuantMatrix& w, const Format& f, int64_t E, int64_t P, int64_t K, bool shared) {
  const int64_t rows = w.rows / E, cols = w.cols, rw = w.row_words();
  CustomKernel k(std::string("qmm_id_") + type_traits(w.type).name);
  auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
  KExpr r = k.range(rows, Axis::GLOBAL), pair = k.range(P, Axis::GLOBAL);
  KExpr id = k.load(k.buffer(3, dtypes::int32), pair).cast(dtypes::int64);
  KExpr ok = (c64(-1) < id) && (id < c64(E)), row = KExpr::where(ok, id, c64(0)) * c64(rows) + r;
  KExpr xrow = shared ? pair / c64(K) : pair;  // gate and up: every slot of a token reads the token's row
  KExpr acc = k.reg(dtypes::float32, 32), zero = k.range(32, Axis::LOOP);
  KExpr init = k.loop({k.store(acc, zero, k.constant(0, dtypes::float32))}, {zero});
  k.run(init);
  KExpr b = k.range(cols / f.group_elems, Axis::LOOP), lane = k.range(32, Axis::UPCAST), e = lane;
  std::vector<KExpr> loops{b};
  if (f.group_elems > 32) {
    KExpr run = k.range(f.group_elems / 32, Axis::LOOP);
    loops.push_back(run);
    e = run * 32 + lane;
  }
  loops.push_back(lane);
  GroupReader rd{k, k.buffer(1, dtypes::uint8), row * c64(rw) + b * c64(f.group_bytes), c64(w.rows * rw)};
  KExpr xv = k.load(k.buffer(2, dtypes::float32), xrow * c64(cols) + b * c64(f.group_elems) + e);
  KExpr step = k.loop({k.store(acc, lane, KExpr::fma(f.decode(rd, e), xv, k.load(k.after(acc, {init}), lane)))}, loops);
  k.run(step);
  KExpr cur = k.after(acc, {step});
  for (int64_t half = 16; half >= 1; half /= 2) {
    KExpr lh = k.range(half, Axis::UPCAST);
    KExpr fold = k.loop({k.store(acc, lh, k.load(cur, lh) + k.load(cur, lh + half))}, {lh});
    k.run(fold);
    cur = k.after(acc, {fold});
  }
  k.run(k.store(k.buffer(0, dtypes::float32), pair * c64(rows) + r,
                KExpr::where(ok, k.load(cur, c64(0)), k.constant(0, dtypes::float32))));
  k.parallel();
  return k;
}

}  // namespace

Tensor qmatmul_experts(const QuantMatrix& w, int64_t experts, const Tensor& x, const Tensor& ids) {
  ProductInput in{x, nullptr};
  return qmatmul_experts(w, experts, in, ids);
}

Tensor qmatmul_experts_summed(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids,
                              const Tensor& weights) {
  if (ids.ndim() != 2 || weights.shape() != ids.shape() || weights.dtype() != dtypes::float32)
    throw std::invalid_argument("tg-llm: expert weights must be float32 of the ids' shape " + shape_str(ids.shape()) +
                                ", got " + weights.dtype().name() + " " + shape_str(weights.shape()));
  const int64_t T = ids.shape()[0], K = ids.shape()[1];
  if (in.x.ndim() != 2 || in.x.shape()[0] != T * K)
    throw std::invalid_argument("tg-llm: a summed expert product needs one input row per pair (" +
                                std::to_string(T * K) + "), got " + shape_str(in.x.shape()));
  if (has_int8_product(w) && in.x.shape()[1] == w.cols && in.x.dtype() == dtypes::float32 && experts >= 1 &&
      w.rows % experts == 0)
    return int8_matmul_experts_summed(w, experts, in, ids.contiguous(), weights.contiguous());
  Tensor y = qmatmul_experts(w, experts, in, ids);  // (T * K, rows), checked there
  return (y.reshape({T, K, y.shape()[1]}) * weights.reshape({T, K, 1})).sum({1});
}

Tensor qmatmul_experts(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids) {
  const Tensor& x = in.x;
  const Format& f = format_of(w);
  if (experts < 1 || w.rows % experts != 0)
    throw std::invalid_argument("tg-llm: " + std::to_string(w.rows) + " rows do not split into " +
                                std::to_string(experts) + " experts");
  if (ids.ndim() != 2 || ids.dtype() != dtypes::int32)
    throw std::invalid_argument("tg-llm: expert ids must be (T, k) int32, got " + ids.dtype().name() + " " +
                                shape_str(ids.shape()));
  const int64_t T = ids.shape()[0], K = ids.shape()[1], P = T * K;
  if (x.ndim() != 2 || x.shape()[1] != w.cols || x.dtype() != dtypes::float32 ||
      (x.shape()[0] != T && x.shape()[0] != P))
    throw std::invalid_argument("tg-llm: an expert product of " + std::to_string(w.cols) + " columns needs float32 (" +
                                std::to_string(T) + " or " + std::to_string(P) + ", " + std::to_string(w.cols) +
                                ") activations, got " + x.dtype().name() + " " + shape_str(x.shape()));
  const bool shared = x.shape()[0] == T && K > 1;
  if (has_int8_product(w)) return int8_matmul_experts(w, {experts, K, shared}, in, ids.contiguous());
  const CustomKernel& k =
      cached({KernelKind::expert_product, w.type, w.rows, w.cols, P, (experts * 1024 + K) * 2 + shared},
             [&] { return expert_kernel(w, f, experts, P, K, shared); });
  return k({{{P, w.rows / experts}, dtypes::float32}}, {w.words, x.contiguous(), ids.contiguous()})[0];
}

bool grouped_product_runs(const QuantMatrix& w) {
  return has_int8_product(w) && !takes_matrix_unit(w, kMatrixUnitTokens);
}

Tensor qmatmul_grouped(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids) {
  if (!has_int8_product(w))
    throw std::invalid_argument("tg-llm: " + type_name(w.type) +
                                " has no grouped expert product (an integer format has)");
  if (in.x.ndim() != 2 || in.x.shape()[1] != w.cols || in.x.dtype() != dtypes::float32)
    throw std::invalid_argument("tg-llm: a grouped expert product of " + std::to_string(w.cols) +
                                " columns needs float32 (T, " + std::to_string(w.cols) + ") activations, got " +
                                in.x.dtype().name() + " " + shape_str(in.x.shape()));
  return int8_matmul_grouped(w, experts, in, ids.contiguous());
}

}  // namespace tg::llm
