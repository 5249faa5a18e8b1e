#include "model/blocks/attention.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include "model/blocks/flash_attention.hpp"
#include "model/blocks/norm.hpp"
#include "tg/error.hpp"

namespace tg::llm {

HeadShare share_heads(const ModelBuilder& b, int64_t heads, int64_t kv_heads) {
  const TensorParallel& tp = b.tp();
  const int64_t G = heads / kv_heads;
  if (!tp.split()) return {0, heads, 0, kv_heads};
  if (kv_heads >= tp.world) {
    auto [k0, k1] = tp.share(kv_heads, 1, b.file().path() + ": " + std::to_string(kv_heads) + " KV heads");
    return {k0 * G, k1 * G, k0, k1};
  }
  const int64_t per = tp.world / kv_heads;  // ranks per KV head
  if (tp.world % kv_heads != 0 || G % per != 0)
    throw Error("tg-llm: " + b.file().path() + ": " + std::to_string(heads) + " query heads in " +
                std::to_string(kv_heads) + " KV groups do not split over " + std::to_string(tp.world) +
                " ranks (use a count that divides the KV heads, or a multiple of "
                "them that divides each group's query heads)");
  const int64_t k = tp.rank / per, part = tp.rank % per, q = G / per;
  return {k * G + part * q, k * G + (part + 1) * q, k, k + 1};
}

Attention::Attention(ModelBuilder& b, int64_t layer, const AttentionSpec& spec)
    : share_(share_heads(b, b.config().n_heads, b.config().n_kv_heads)),
      tp_(b.tp()),
      spec_(spec),
      heads_(b.config().n_heads),
      kv_heads_(b.config().n_kv_heads),
      H_(share_.q1 - share_.q0),
      KV_(share_.k1 - share_.k0),
      hd_(b.config().head_dim),
      scale_(b.config().attn_scale),
      eps_(b.config().norm_eps),
      max_score_bytes_(b.max_score_bytes()),
      rope_(b.rope(spec.rope_base > 0 ? spec.rope_base : b.config().rope_base, spec.rope_scaled)),
      state_(&b.state()),
      q_(b.matrix_rows(ModelBuilder::blk(layer, "attn_q.weight"), (spec.output_gate ? 2 : 1) * b.config().n_heads * hd_,
                       b.config().d_model, (spec.output_gate ? 2 : 1) * share_.q0 * hd_,
                       (spec.output_gate ? 2 : 1) * share_.q1 * hd_)),
      k_(b.matrix_rows(ModelBuilder::blk(layer, "attn_k.weight"), b.config().n_kv_heads * hd_, b.config().d_model,
                       share_.k0 * hd_, share_.k1 * hd_)),
      v_(b.matrix_rows(ModelBuilder::blk(layer, "attn_v.weight"), b.config().n_kv_heads * hd_, b.config().d_model,
                       share_.k0 * hd_, share_.k1 * hd_)),
      o_(b.matrix_cols(ModelBuilder::blk(layer, "attn_output.weight"), b.config().d_model, b.config().n_heads * hd_,
                       share_.q0 * hd_, share_.q1 * hd_)),
      k_cache_(&b.state().add_kv_cache(KV_ * hd_)),
      v_cache_(&b.state().add_kv_cache(KV_ * hd_)) {
  const std::string p = ModelBuilder::blk(layer, "");
  const int64_t q_dim = b.config().n_heads * hd_, kv_dim = b.config().n_kv_heads * hd_;
  if (b.config().value_dim != hd_)
    throw Error("tg-llm: " + b.file().path() + ": value length " + std::to_string(b.config().value_dim) +
                " differs from key length " + std::to_string(hd_));
  if (spec.qkv_bias) {
    q_bias_ = b.optional_vector(p + "attn_q.bias", q_dim, share_.q0 * hd_, share_.q1 * hd_);
    k_bias_ = b.optional_vector(p + "attn_k.bias", kv_dim, share_.k0 * hd_, share_.k1 * hd_);
    v_bias_ = b.optional_vector(p + "attn_v.bias", kv_dim, share_.k0 * hd_, share_.k1 * hd_);
  }
  if (spec.qk_norm) {
    q_norm_ = b.vector(p + "attn_q_norm.weight", hd_);
    k_norm_ = b.vector(p + "attn_k_norm.weight", hd_);
  }
  if (spec.qk_norm_whole) {  // this rank's heads' part of the weights
    q_norm_ = b.vector(p + "attn_q_norm.weight", q_dim, share_.q0 * hd_, share_.q1 * hd_);
    k_norm_ = b.vector(p + "attn_k_norm.weight", kv_dim, share_.k0 * hd_, share_.k1 * hd_);
  }
}

Tensor Attention::forward(const Tensor& h, const Pass& p) {
  const int64_t T = p.T;
  ProductInput in{h, nullptr};  // q, k and v share the int8 form of h
  auto project = [&](const QuantMatrix& w, const std::optional<Tensor>& bias) {
    return bias ? qmatmul(w, in) + *bias : qmatmul(w, in);
  };
  Tensor q = project(q_, q_bias_), k = project(k_, k_bias_);
  if (spec_.qk_norm_whole) std::tie(q, k) = norm_whole(q, k);
  k = k.reshape({T, KV_, hd_});
  std::optional<Tensor> gate;
  if (spec_.output_gate) {  // per head: hd query values, then hd gate values
    Tensor qg = q.reshape({T, H_, 2, hd_});
    gate = qg.slice(2, 1, 2).reshape({T, H_ * hd_}).sigmoid();
    q = qg.slice(2, 0, 1).reshape({T, H_, hd_});
  } else {
    q = q.reshape({T, H_, hd_});
  }
  Tensor v = project(v_, v_bias_);
  if (spec_.qk_norm) {
    q = rms_norm(q, *q_norm_, eps_);
    k = rms_norm(k, *k_norm_, eps_);
  }
  Tensor out = [&] {
    if (p.seqs.size() == 1) return attend(q, k, v, T, p.seqs[0], p.key_len);
    // a decode batch: the projections above are shared, each sequence attends over its own slot
    std::vector<Tensor> outs;
    for (int64_t b = 0; b < T; ++b)
      outs.push_back(attend(q.slice(0, b, b + 1), k.slice(0, b, b + 1), v.slice(0, b, b + 1), 1,
                            p.seqs[static_cast<size_t>(b)], p.key_len));
    return Tensor::cat(outs, 0);
  }();
  return qmatmul(o_, gate ? out * *gate : out);
}

std::pair<Tensor, Tensor> Attention::norm_whole(const Tensor& q, const Tensor& k) const {
  if (!tp_.split()) return {rms_norm(q, *q_norm_, eps_), rms_norm(k, *k_norm_, eps_)};
  // the mean squares over every head from each rank's sums of squares: one allreduce of 2 values a token. A KV
  // head held by several ranks (fewer KV heads than ranks) is counted once.
  const double kv_copies = kv_heads_ < tp_.world ? static_cast<double>(tp_.world / kv_heads_) : 1.0;
  Tensor ss =
      tp_.sum(Tensor::cat({(q * q).sum({-1}, true), (k * k).sum({-1}, true) * (1.0 / kv_copies)}, 1));  // (T, 2)
  auto norm = [&](const Tensor& x, const Tensor& w, int64_t col, int64_t n) {
    return x * (ss.slice(1, col, col + 1) * (1.0 / static_cast<double>(n)) + eps_).rsqrt() * w;
  };
  return {norm(q, *q_norm_, 0, heads_ * hd_), norm(k, *k_norm_, 1, kv_heads_ * hd_)};
}

Dim key_span(const SequenceState& state, int64_t T, const BoundVariable& pos, int64_t key_len) {
  // keys [0, pos + T) of the slot. A prefill chunk attends over a static length rounded up to 128 rows (the mask
  // hides rows past pos + T), so its kernels get static shapes, which the optimizer vectorizes, while a few
  // lengths cover every position; decode does the same with the batch's key_len, or keeps the length symbolic
  const int64_t bucket = std::min(state.rows_per_slot(), (pos.value() + T + 127) / 128 * 128);
  return T > 1 ? Dim(bucket) : key_len > 0 ? Dim(key_len) : Dim(pos) + Dim(T);
}

Tensor causal_softmax(const SequenceState& state, const Tensor& scores, int64_t T, const BoundVariable& pos,
                      const Dim& len, int64_t window, int64_t first) {
  const std::string& device = state.device();
  // causal (and sliding-window) mask from absolute positions: query pos + t sees key j when j <= pos + t
  Tensor qpos = (Tensor::arange(static_cast<double>(first), static_cast<double>(first + T), 1, dtypes::int32, device) +
                 Tensor::from_variable(pos, device))
                    .reshape({1, 1, T, 1});
  Tensor kpos = state.key_index().shrink(0, Dim(0), len).reshape({Dim(1), Dim(1), Dim(1), len});
  const double ninf = -std::numeric_limits<double>::infinity();
  Tensor neg = Tensor::full({1}, ninf, dtypes::float32, device).reshape({1, 1, 1, 1});
  Tensor masked = Tensor::where(kpos.le(qpos), scores, neg);
  if (window > 0)
    masked = Tensor::where(
        (qpos - kpos).lt(Tensor::full({1}, static_cast<double>(window), dtypes::int32, device).reshape({1, 1, 1, 1})),
        masked, neg);
  // realized: fused into the product, every one of the value outputs would recompute the exponentials
  return masked.softmax(-1).contiguous();
}

Tensor Attention::attend(Tensor q, Tensor k, const Tensor& v, int64_t T, const SeqPos& at, int64_t key_len) {
  const int64_t H = H_, KV = KV_, G = H / KV, hd = hd_;
  const BoundVariable& pos = at.pos;
  // realized: fused into q @ K, the rotation of each query element would be recomputed for every key
  q = rope_->apply(q, T, pos, spec_.neox).contiguous();
  k = rope_->apply(k, T, pos, spec_.neox);
  k_cache_->write(k.reshape({T, KV * hd}), at);
  v_cache_->write(v, at);
  // scores past the budget (LoadOptions::max_score_bytes) are never materialized: flash attention over blocks of
  // keys. It needs a static key length (prefill buckets, decode's key_len): a symbolic one (one decode graph for
  // every position) keeps the scores, as a kernel loops over a static number of key blocks
  if (T > 1 || key_len > 0) {
    const int64_t n = T > 1 ? std::min(state_->rows_per_slot(), (pos.value() + T + 127) / 128 * 128) : key_len;
    if (H * T * n * 4 > max_score_bytes_)
      return flash_attention(q, *k_cache_, *v_cache_, KV, at, n, {.scale = scale_, .window = spec_.window});
  }
  const Dim len = key_span(*state_, T, pos, key_len);
  Tensor keys = k_cache_->read(at, len).reshape({Dim(KV), Dim(hd), len});                     // (KV, hd, L)
  Tensor vals = v_cache_->read(at, len).reshape({Dim(KV), Dim(hd), len}).permute({0, 2, 1});  // (KV, L, hd)
  Tensor qh = q.reshape({T, KV, G, hd}).permute({1, 2, 0, 3}).reshape({KV, G * T, hd});
  // realized once: the softmax reads the scores three times (max, sum, normalize) and would recompute each dot
  Tensor scores = (qh.matmul(keys) * scale_).contiguous().reshape({Dim(KV), Dim(G), Dim(T), len});
  Tensor p = causal_softmax(*state_, scores, T, pos, len, spec_.window).reshape({Dim(KV), Dim(G * T), len});
  // the product in its natural layout first: fusing the head permute into its store makes the reduction stride.
  // A prefill chunk multiplies by a row-major copy of the values (cast once, not once per query row): the
  // product then vectorizes along hd with the probabilities broadcast (Qwen3-shaped, 256-token chunks: 11 -> 2.9 ms)
  if (T > 1) vals = vals.contiguous();
  return p.matmul(vals).contiguous().reshape({KV, G, T, hd}).permute({2, 0, 1, 3}).reshape({T, H * hd});
}

}  // namespace tg::llm
