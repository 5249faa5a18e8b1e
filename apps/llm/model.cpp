// The decoder's forward pass on tg tensors: quantized projections are custom kernels over the packed weights,
// everything else (norms, RoPE, attention, GLU) is lazy tensor code the scheduler fuses.
#include "model.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "quant_int8.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

struct Model::Layer {
  std::optional<QuantMatrix> q, k, v, o, gate, up, down;
  std::optional<Tensor> attn_norm, ffn_norm, q_norm, k_norm, post_attn_norm, post_ffw_norm;
};

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::f32;
  if (name == "f16") return KvType::f16;
  if (name == "q8_0") return KvType::q8_0;
  throw Error("tg-llm: KV cache type '" + name + "' is not one of f32, f16, q8_0");
}

// Writes the T rows of `rows` (T, width) as cache columns [base + pos, base + pos + T) in place: the caches are
// (width, positions), one column per token, realized once; the kernel stores into them. q8_0 rounds each 32
// values of a row as ggml's quantize_row_q8_0: d = max|x| / 127 (stored as float16), q = roundf(x / d).
void Model::write_rows(Cache& cache, const Tensor& rows, const SeqPos& at) {
  const int64_t T = rows.shape()[0], width = rows.shape()[1], positions = cache.data.shape()[1];
  const bool q8 = cache.scales.has_value();
  CustomKernel k(q8 ? "kv_write_q8_0" : "kv_write_t");
  KExpr row = k.variable(at.base.var()).cast(dtypes::int64) + k.variable(at.pos.var()).cast(dtypes::int64);
  const DType dt = cache.data.dtype();
  KExpr in = k.buffer(0, dtypes::float32);
  if (!q8) {
    // columns outermost: each column's T values are stored contiguously, and the T rows they are read from stay
    // in L1 across columns (row-major, each store was to another cache line: 1 ms for 256 x 1024 values)
    KExpr c = k.range(width, Axis::GLOBAL), t = k.range(T, Axis::GLOBAL);
    k.run(k.store(k.buffer(1, dt), c * positions + row + t, k.load(in, t * width + c).cast(dt)));
    k.parallel();
    k({}, {rows, cache.data}, {at.base, at.pos});
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
  k({}, {rows, cache.data, *cache.scales}, {at.base, at.pos});
}

Tensor Model::read_rows(const Cache& cache, const SeqPos& at, const Dim& len) const {
  Tensor v = cache.data.shrink(1, Dim(at.base), len).cast(dtypes::float32);
  if (!cache.scales) return v;
  const int64_t width = cache.data.shape()[0];
  Tensor d = cache.scales->shrink(1, Dim(at.base), len).cast(dtypes::float32).reshape({Dim(width / 32), Dim(1), len});
  return v * d.expand({Dim(width / 32), Dim(32), len}).reshape({Dim(width), len});
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  auto file = std::make_shared<GGUFFile>(GGUFFile::open(path));
  return std::make_unique<Model>(std::move(file), opts);
}

Model::Model(std::shared_ptr<GGUFFile> file, const LoadOptions& opts)
    : file_(std::move(file)),
      cfg_(read_config(*file_)),
      device_(opts.device),
      max_ctx_(std::max<int64_t>(1, std::min(opts.max_context, cfg_.context_length))),
      kv_rows_((max_ctx_ + 127) / 128 * 128),
      slots_(std::max(1, opts.slots)) {
  for (int b = 0; b < slots_; ++b) {
    const std::string n = b == 0 ? "" : std::to_string(b);
    pos_vars_.emplace_back("start_pos" + n, 0, max_ctx_ - 1);
    base_vars_.emplace_back("slot_base" + n, 0, (slots_ - 1) * kv_rows_);
  }
  std::shared_ptr<const void> owner = file_;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const GGUFTensor& t = file_->need_tensor(name);
    QuantMatrix m = upload_matrix(t, owner, device_);
    if (m.rows != rows || m.cols != cols)
      throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' is " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + ", expected " +
                  std::to_string(rows) + "x" + std::to_string(cols));
    if (name != "token_embd.weight") step_bytes_ += t.nbytes;  // the embedding reads one row per token
    return m;
  };
  auto vec = [&](const std::string& name, int64_t n) {
    const GGUFTensor& t = file_->need_tensor(name);
    if (t.type != GGMLType::F32 || t.numel() != n)
      throw Error("tg-llm: " + file_->path() + ": norm '" + name + "' must be " + std::to_string(n) + " float32 values, got " + type_name(t.type) + " x " + std::to_string(t.numel()));
    return Tensor::from_host_memory(t.data, t.nbytes, {n}, dtypes::float32, owner, device_);
  };
  const ModelConfig& c = cfg_;
  const int64_t d = c.d_model, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  embed_ = std::make_unique<QuantMatrix>(matrix("token_embd.weight", c.vocab, d));
  output_ = std::make_unique<QuantMatrix>(file_->tensor("output.weight") ? matrix("output.weight", c.vocab, d) : *embed_);
  if (!file_->tensor("output.weight")) step_bytes_ += file_->need_tensor("token_embd.weight").nbytes;  // tied head
  out_norm_ = std::make_unique<Tensor>(vec("output_norm.weight", d));
  for (int64_t il = 0; il < c.n_layers; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    Layer L;
    L.q = matrix(b + "attn_q.weight", q_dim, d);
    L.k = matrix(b + "attn_k.weight", kv_dim, d);
    L.v = matrix(b + "attn_v.weight", kv_dim, d);
    L.o = matrix(b + "attn_output.weight", d, q_dim);
    L.gate = matrix(b + "ffn_gate.weight", c.d_ff, d);
    L.up = matrix(b + "ffn_up.weight", c.d_ff, d);
    L.down = matrix(b + "ffn_down.weight", d, c.d_ff);
    L.attn_norm = vec(b + "attn_norm.weight", d);
    L.ffn_norm = vec(b + "ffn_norm.weight", d);
    if (c.qk_norm) {
      L.q_norm = vec(b + "attn_q_norm.weight", hd);
      L.k_norm = vec(b + "attn_k_norm.weight", hd);
    }
    if (c.post_norms) {
      L.post_attn_norm = vec(b + "post_attention_norm.weight", d);
      L.post_ffw_norm = vec(b + "post_ffw_norm.weight", d);
    }
    layers_.push_back(std::move(L));
    // zeroed caches, realized once: kv_write stores into them in place. Keys and values transposed (one column
    // per position): q @ K vectorizes over contiguous keys and p @ V reduces over contiguous positions, with no
    // copy of the cache per step
    auto cache = [&] {
      const int64_t P = slots_ * kv_rows_;
      if (opts.kv != KvType::q8_0) {
        const DType kv = opts.kv == KvType::f16 ? dtypes::float16 : dtypes::float32;
        return Cache{Tensor::zeros({kv_dim, P}, kv, device_).contiguous().realize(), std::nullopt};
      }
      if (kv_dim % 32 != 0)
        throw Error("tg-llm: a q8_0 KV cache needs key and value widths that are multiples of 32, not " + std::to_string(kv_dim));
      return Cache{Tensor::zeros({kv_dim, P}, dtypes::int8, device_).contiguous().realize(),
                   Tensor::zeros({kv_dim / 32, P}, dtypes::float16, device_).contiguous().realize()};
    };
    k_cache_.push_back(cache());
    v_cache_.push_back(cache());
  }
  // RoPE angles pos * base^(-2i/hd) for every cache row, computed in double on the host once
  auto table = [&](double base, bool sine) {
    std::vector<float> v(static_cast<size_t>(max_ctx_ * (hd / 2)));
    for (int64_t p = 0; p < max_ctx_; ++p)
      for (int64_t i = 0; i < hd / 2; ++i) {
        double a = static_cast<double>(p) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
        v[p * (hd / 2) + i] = static_cast<float>(sine ? std::sin(a) : std::cos(a));
      }
    return std::make_unique<Tensor>(Tensor::from_vector(v, {max_ctx_, hd / 2}, device_));
  };
  rope_cos_ = table(c.rope_base, false);
  rope_sin_ = table(c.rope_base, true);
  rope_cos_local_ = table(c.rope_base_local, false);
  rope_sin_local_ = table(c.rope_base_local, true);
  key_index_ = std::make_unique<Tensor>(Tensor::arange(0, static_cast<double>(kv_rows_), 1, dtypes::int32, device_).contiguous().realize());
  if (device_.empty()) device_ = embed_->words.device();
}

Model::~Model() = default;

Tensor Model::norm(const Tensor& x, const Tensor& w) const {
  return x * ((x * x).mean({-1}, true) + cfg_.norm_eps).rsqrt() * w;
}

// x: (T, heads, hd) rotated by the angles of positions [pos, pos + T)
Tensor Model::rope(const Tensor& x, int64_t T, const BoundVariable& pos, bool local) const {
  const int64_t hd = cfg_.head_dim, half = hd / 2, heads = x.shape()[1];
  Tensor c = (local ? *rope_cos_local_ : *rope_cos_).shrink(0, Dim(pos), Dim(T)).reshape({Dim(T), 1, half});
  Tensor s = (local ? *rope_sin_local_ : *rope_sin_).shrink(0, Dim(pos), Dim(T)).reshape({Dim(T), 1, half});
  if (cfg_.rope_neox) {
    Tensor x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, hd);
    return Tensor::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
  }
  Tensor xr = x.reshape({T, heads, half, 2});
  Tensor x0 = xr.slice(-1, 0, 1).squeeze(-1), x1 = xr.slice(-1, 1, 2).squeeze(-1);
  return Tensor::stack({x0 * c - x1 * s, x0 * s + x1 * c}, -1).reshape({T, heads, hd});
}

Tensor Model::attention(const Layer& L, int layer, const Tensor& h, int64_t T, const std::vector<SeqPos>& seqs, int64_t key_len) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, hd = c.head_dim;
  ProductInput in{h, nullptr};  // q, k and v share the int8 form of h
  Tensor q = qmatmul(*L.q, in).reshape({T, H, hd}), k = qmatmul(*L.k, in).reshape({T, KV, hd});
  Tensor v = qmatmul(*L.v, in);
  if (c.qk_norm) {
    q = norm(q, *L.q_norm);
    k = norm(k, *L.k_norm);
  }
  Tensor out = [&] {
    if (seqs.size() == 1) return attend(layer, q, k, v, T, seqs[0], key_len);
    // a decode batch: the projections above are shared, each sequence attends over its own slot
    std::vector<Tensor> outs;
    for (int64_t b = 0; b < T; ++b)
      outs.push_back(attend(layer, q.slice(0, b, b + 1), k.slice(0, b, b + 1), v.slice(0, b, b + 1), 1, seqs[static_cast<size_t>(b)], key_len));
    return Tensor::cat(outs, 0);
  }();
  return qmatmul(*L.o, out);
}

Tensor Model::attend(int layer, Tensor q, Tensor k, const Tensor& v, int64_t T, const SeqPos& at, int64_t key_len) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, hd = c.head_dim;
  const bool local = c.layer_is_local[static_cast<size_t>(layer)];
  const BoundVariable& pos = at.pos;
  // realized: fused into q @ K, the rotation of each query element would be recomputed for every key
  q = rope(q, T, pos, local).contiguous();
  k = rope(k, T, pos, local);
  write_rows(k_cache_[static_cast<size_t>(layer)], k.reshape({T, KV * hd}), at);
  write_rows(v_cache_[static_cast<size_t>(layer)], v, at);
  // keys [0, pos + T) of the slot. A prefill chunk attends over a static length rounded up to 128 rows (the mask
  // hides rows past pos + T), so its kernels get static shapes, which the optimizer vectorizes, while a few
  // lengths cover every position; decode does the same with the batch's key_len, or keeps the length symbolic
  const int64_t bucket = std::min(kv_rows_, (pos.value() + T + 127) / 128 * 128);
  const Dim len = T > 1 ? Dim(bucket) : key_len > 0 ? Dim(key_len) : Dim(pos) + Dim(T);
  Tensor keys = read_rows(k_cache_[static_cast<size_t>(layer)], at, len).reshape({Dim(KV), Dim(hd), len});                    // (KV, hd, L)
  Tensor vals = read_rows(v_cache_[static_cast<size_t>(layer)], at, len).reshape({Dim(KV), Dim(hd), len}).permute({0, 2, 1});  // (KV, L, hd)
  Tensor qh = q.reshape({T, KV, G, hd}).permute({1, 2, 0, 3}).reshape({KV, G * T, hd});
  // realized once: the softmax reads the scores three times (max, sum, normalize) and would recompute each dot
  Tensor scores = (qh.matmul(keys) * c.attn_scale).contiguous().reshape({Dim(KV), Dim(G), Dim(T), len});
  // causal (and sliding-window) mask from absolute positions: query pos + t sees key j when j <= pos + t
  Tensor qpos = (Tensor::arange(0, static_cast<double>(T), 1, dtypes::int32, device_) + Tensor::from_variable(pos, device_)).reshape({1, 1, T, 1});
  Tensor kpos = key_index_->shrink(0, Dim(0), len).reshape({Dim(1), Dim(1), Dim(1), len});
  const double ninf = -std::numeric_limits<double>::infinity();
  Tensor neg = Tensor::full({1}, ninf, dtypes::float32, device_).reshape({1, 1, 1, 1});
  scores = Tensor::where(kpos.le(qpos), scores, neg);
  if (local) scores = Tensor::where((qpos - kpos).lt(Tensor::full({1}, static_cast<double>(c.sliding_window), dtypes::int32, device_).reshape({1, 1, 1, 1})), scores, neg);
  // realized: fused into the product, every one of the hd outputs would recompute the exponentials
  Tensor p = scores.softmax(-1).contiguous().reshape({Dim(KV), Dim(G * T), len});
  // the product in its natural layout first: fusing the head permute into its store makes the reduction stride.
  // A prefill chunk multiplies by a row-major copy of the values (cast once, not once per query row): the
  // product then vectorizes along hd with the probabilities broadcast (Qwen3-shaped, 256-token chunks: 11 -> 2.9 ms)
  if (T > 1) vals = vals.contiguous();
  return p.matmul(vals).contiguous().reshape({KV, G, T, hd}).permute({2, 0, 1, 3}).reshape({T, H * hd});
}

Tensor Model::run(const Tensor& ids, int64_t T, const std::vector<SeqPos>& seqs, const Tensor* last_row, int64_t key_len, Head head) {
  const ModelConfig& c = cfg_;
  Tensor x = qembedding(*embed_, ids);
  if (c.embed_scale != 1.0) x = x * c.embed_scale;
  for (size_t il = 0; il < layers_.size(); ++il) {
    const Layer& L = layers_[il];
    Tensor a = attention(L, static_cast<int>(il), norm(x, *L.attn_norm), T, seqs, key_len);
    if (c.post_norms) a = norm(a, *L.post_attn_norm);
    x = (x + a).realize();  // the residual stream is read twice: realized once, not recomputed by each reader
    ProductInput h{norm(x, *L.ffn_norm), nullptr};
    Tensor g = qmatmul(*L.gate, h), u = qmatmul(*L.up, h);
    Tensor f = qmatmul(*L.down, (c.gelu_ffn ? g.gelu() : g.silu()) * u);
    if (c.post_norms) f = norm(f, *L.post_ffw_norm);
    x = (x + f).realize();
  }
  // the row is picked by a product with a one-hot vector (data, not shape): one graph for every real length
  Tensor last = last_row ? last_row->matmul(x) : x;
  ProductInput out{norm(last, *out_norm_), nullptr};
  return head == Head::argmax ? qargmax(*output_, out) : qmatmul(*output_, out);
}

Tensor Model::forward(const std::vector<int32_t>& tokens, int64_t start_pos, int slot) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) throw std::invalid_argument("tg-llm: forward of no tokens");
  if (start_pos < 0 || start_pos + T > max_ctx_)
    throw Error("tg-llm: " + std::to_string(T) + " tokens at position " + std::to_string(start_pos) + " do not fit in the context of " +
                std::to_string(max_ctx_) + " tokens (--max-context)");
  for (int32_t id : tokens)
    if (id < 0 || id >= cfg_.vocab) throw Error("tg-llm: token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(cfg_.vocab));
  if (slot < 0 || slot >= slots_) throw std::invalid_argument("tg-llm: KV-cache slot " + std::to_string(slot) + " of " + std::to_string(slots_));
  const int64_t P = prefill_length(T, start_pos);
  // the position's range is what keeps [pos, pos + P) inside the cache, so each chunk length has its own variable
  const Variable var = P == 1 ? pos_vars_[0] : Variable("start_pos", 0, max_ctx_ - P);
  std::vector<int32_t> ids(tokens);
  ids.resize(static_cast<size_t>(P), tokens.back());
  std::vector<float> pick(static_cast<size_t>(P), 0.0f);
  pick[static_cast<size_t>(T - 1)] = 1.0f;
  Tensor last = Tensor::from_vector(pick, {1, P}, dtypes::float32, device_);
  const SeqPos at{base_vars_[0].bind(static_cast<int64_t>(slot) * kv_rows_), var.bind(start_pos)};
  return run(Tensor::from_vector(ids, {P}, dtypes::int32, device_), P, {at}, P == 1 ? nullptr : &last);
}

int64_t Model::prefill_length(int64_t n, int64_t start_pos) const {
  if (n <= 1) return n;
  const int64_t p = n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : (n + 63) / 64 * 64;
  return start_pos + p <= max_ctx_ ? p : n;
}

SeqPos Model::decode_position(int b, int slot, int64_t pos) const {
  if (b < 0 || b >= slots_ || slot < 0 || slot >= slots_) throw std::invalid_argument("tg-llm: decode batch row " + std::to_string(b) + " / slot " + std::to_string(slot));
  return {base_vars_[static_cast<size_t>(b)].bind(static_cast<int64_t>(slot) * kv_rows_), pos_vars_[static_cast<size_t>(b)].bind(pos)};
}

Tensor Model::decode(const Tensor& tokens, const std::vector<SeqPos>& seqs, int64_t key_len, Head head) {
  const int64_t B = tokens.shape()[0];
  if (B < 1 || static_cast<size_t>(B) != seqs.size()) throw std::invalid_argument("tg-llm: decode of " + std::to_string(B) + " tokens and " + std::to_string(seqs.size()) + " positions");
  for (const SeqPos& s : seqs)
    if (key_len > 0 && (s.pos.value() >= key_len || key_len > kv_rows_))
      throw std::invalid_argument("tg-llm: decode key length " + std::to_string(key_len) + " for position " + std::to_string(s.pos.value()));
  return run(tokens, B, seqs, nullptr, key_len, head);
}

int64_t Model::decode_key_length(int64_t pos) const { return std::min(kv_rows_, (pos + 1 + 127) / 128 * 128); }

}  // namespace tg::llm
