// The KV cache's write kernel (a custom kernel storing into the realized cache) and its read as tensor ops.
#include "model/kv_cache.hpp"

#include "quant/quant_int8.hpp"
#include "tg/custom_kernel.hpp"
#include "tg/error.hpp"

namespace tg::llm {

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::f32;
  if (name == "f16") return KvType::f16;
  if (name == "q8_0") return KvType::q8_0;
  throw Error("tg-llm: KV cache type '" + name + "' is not one of f32, f16, q8_0");
}

namespace {
DType element_type(KvType type, int64_t width) {
  if (type == KvType::q8_0 && width % 32 != 0)
    throw Error("tg-llm: a q8_0 KV cache needs key and value widths that are multiples of 32, not " +
                std::to_string(width));
  return type == KvType::q8_0 ? dtypes::int8 : type == KvType::f16 ? dtypes::float16 : dtypes::float32;
}
}  // namespace

DType parse_ssm_type(const std::string& name) {
  if (name == "f32") return dtypes::float32;
  if (name == "f16") return dtypes::float16;
  throw Error("tg-llm: recurrent state type '" + name + "' is not one of f32, f16");
}

KvCache::KvCache(int64_t width, int64_t positions, KvType type, const std::string& device)
    : data_(Tensor::zeros({width, positions}, element_type(type, width), device).contiguous().realize()) {
  if (type == KvType::q8_0)
    scales_ = Tensor::zeros({width / 32, positions}, dtypes::float16, device).contiguous().realize();
}

// q8_0 rounds each 32 values of a row as ggml's quantize_row_q8_0: d = max|x| / 127 (stored as float16),
// q = roundf(x / d).
void KvCache::write(const Tensor& rows, const SeqPos& at) {
  const int64_t T = rows.shape()[0], width = rows.shape()[1], positions = data_.shape()[1];
  const bool q8 = scales_.has_value();
  CustomKernel k(q8 ? "kv_write_q8_0" : "kv_write_t");
  KExpr row = k.variable(at.base.var()).cast(dtypes::int64) + k.variable(at.pos.var()).cast(dtypes::int64);
  const DType dt = data_.dtype();
  KExpr in = k.buffer(0, dtypes::float32);
  if (!q8) {
    // columns outermost: each column's T values are stored contiguously, and the T rows they are read from stay
    // in L1 across columns (row-major, each store was to another cache line: 1 ms for 256 x 1024 values)
    KExpr c = k.range(width, Axis::GLOBAL), t = k.range(T, Axis::GLOBAL);
    k.run(k.store(k.buffer(1, dt), c * positions + row + t, k.load(in, t * width + c).cast(dt)));
    k.parallel();
    k({}, {rows, data_}, {at.base, at.pos});
    return;
  }
  KExpr t = k.range(T, Axis::GLOBAL), b = k.range(width / 32, Axis::GLOBAL), e = k.range(32, Axis::REDUCE);
  auto value = [&](const KExpr& i) { return k.load(in, t * width + b * 32 + i); };
  auto f32 = [&](double v) { return k.constant(v, dtypes::float32); };
  KExpr d = abs_max(k, value(e), e) / f32(127);
  KExpr inv = KExpr::where(d == f32(0), f32(0), f32(1) / d), i = k.range(32, Axis::LOOP);
  KExpr v = value(i) * inv;
  KExpr q = round_half_away(v).cast(dtypes::int8);
  k.run(k.loop({k.store(k.buffer(1, dtypes::int8), (b * 32 + i) * positions + row + t, q)}, {i}));
  k.run(k.store(k.buffer(2, dtypes::float16), b * positions + row + t, d.cast(dtypes::float16)));
  k.parallel();
  k({}, {rows, data_, *scales_}, {at.base, at.pos});
}

void KvCache::copy(const BoundVariable& from, const BoundVariable& to, int64_t len) {
  for (const Tensor& t : tensors()) {
    const int64_t positions = t.shape()[1];
    CustomKernel k("kv_copy");
    KExpr c = k.range(t.shape()[0], Axis::GLOBAL), j = k.range(len, Axis::GLOBAL);
    KExpr src = k.variable(from.var()).cast(dtypes::int64), dst = k.variable(to.var()).cast(dtypes::int64);
    k.run(k.store(k.buffer(0, t.dtype()), c * positions + dst + j,
                  k.load(k.buffer(0, t.dtype()), c * positions + src + j)));
    k.parallel();
    k({}, {t}, {from, to});
  }
}

std::vector<Tensor> KvCache::tensors() const {
  if (scales_) return {data_, *scales_};
  return {data_};
}

KExpr KvCache::element(CustomKernel& k, int first, const KExpr& row, const KExpr& col) const {
  const int64_t positions = data_.shape()[1];
  const KExpr p = k.constant(static_cast<double>(positions), row.dtype());
  KExpr v = k.load(k.buffer(first, data_.dtype()), row * p + col).cast(dtypes::float32);
  if (!scales_) return v;
  return v * k.load(k.buffer(first + 1, dtypes::float16), (row / k.constant(32, row.dtype())) * p + col)
                 .cast(dtypes::float32);
}

Tensor KvCache::read(const SeqPos& at, const Dim& len) const {
  Tensor v = data_.shrink(1, Dim(at.base), len).cast(dtypes::float32);
  if (!scales_) return v;
  const int64_t width = data_.shape()[0];
  Tensor d = scales_->shrink(1, Dim(at.base), len).cast(dtypes::float32).reshape({Dim(width / 32), Dim(1), len});
  return v * d.expand({Dim(width / 32), Dim(32), len}).reshape({Dim(width), len});
}

}  // namespace tg::llm
