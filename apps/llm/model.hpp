// Transformer decoders read from a GGUF: llama (Llama 3.x, SmolLM2), qwen3 (QK-norm) and gemma3 (sliding-window
// layers, pre- and post-norms, GELU-tanh GLU, scaled embeddings). Every kernel is a tg tensor op or a tg custom
// kernel on the chosen device; weights stay packed in the mapped file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf.hpp"
#include "quant.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg::llm {

struct ModelConfig {
  std::string arch;       // general.architecture
  int64_t n_layers = 0, d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0;
  int64_t context_length = 0;  // what the model was trained for
  double norm_eps = 1e-5;
  double rope_base = 10000, rope_base_local = 10000;  // local: sliding-window layers (gemma3)
  int64_t sliding_window = 0;                         // 0: none
  std::vector<bool> layer_is_local;                   // per layer: sliding-window attention
  bool rope_neox = false;      // rotate halves (NEOX) rather than adjacent pairs
  bool gelu_ffn = false;       // GELU-tanh gate instead of SiLU
  bool qk_norm = false;        // RMS-norm of q and k per head
  bool post_norms = false;     // norms after attention and FFN outputs (gemma)
  double embed_scale = 1.0;    // gemma: sqrt(d_model)
  double attn_scale = 0;       // 1/sqrt(head_dim) unless the file says otherwise
};

// The KV cache's element type: float32; float16 (half the memory and bandwidth); q8_0 (ggml's: int8 with a
// float16 scale per 32 values of a key or value vector, 34 bytes per 32, as llama.cpp's --cache-type-k q8_0).
enum class KvType { f32, f16, q8_0 };
KvType parse_kv_type(const std::string& name);  // tg::Error listing f32, f16, q8_0 for anything else

struct LoadOptions {
  std::string device;          // "" = the default device
  int64_t max_context = 4096;  // KV cache rows (clamped to the model's context length)
  KvType kv = KvType::f16;  // as llama.cpp: half the memory and bandwidth of f32 (Qwen3-0.6B-shaped decode at
                            // depth 512: 23.7 -> 28.1 tok/s, peak RSS 589 -> 519 MB)
  int slots = 1;               // sequences the KV cache holds at once (each max_context rows)
};

// Where one sequence of a forward pass is: its KV-cache slot (as its first cache row, slot * rows per slot) and
// the position of its first token. Both are bound variables, so one graph serves every slot and position.
struct SeqPos {
  BoundVariable base, pos;
};

// Reads the architecture's hyper-parameters; unknown architectures: tg::Error listing the supported ones.
ModelConfig read_config(const GGUFFile& f);
const std::vector<std::string>& supported_architectures();

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  Model(std::shared_ptr<GGUFFile> file, const LoadOptions& opts);  // use load()
  ~Model();

  const ModelConfig& config() const { return cfg_; }
  const GGUFFile& gguf() const { return *file_; }
  int64_t max_context() const { return max_ctx_; }
  const std::string& device() const { return device_; }
  uint64_t weight_bytes_per_token() const { return step_bytes_; }  // packed weights one decode step reads

  // Runs `tokens` at positions [start_pos, start_pos + n) through every layer, writing their keys and values
  // into the KV cache, and returns the logits of the last token: (1, vocab) float32, unrealized. Errors if the
  // tokens do not fit in the cache or an id is outside the vocabulary. Chunks are padded to a few lengths
  // (prefill_length) so that prompts of every length share compiled kernels; the padding's keys and values land
  // past the last token, where the next tokens overwrite them before anything attends to them.
  Tensor forward(const std::vector<int32_t>& tokens, int64_t start_pos, int slot = 0);
  // One token for each of B sequences (B <= slots), given as a (B,) int32 tensor, each at its own slot and
  // position: (B, vocab) logits. The graph depends only on B, so a tg::Jit per B captures it once (Generator).
  // key_len 0: the attention's key length is symbolic (pos + 1, one graph for all positions); otherwise every
  // sequence attends over key_len cache rows (>= its pos + 1; the mask hides the rest): static shapes, which the
  // optimizer vectorizes, at the price of one graph per length (decode_key_length gives a few lengths).
  // Head::argmax (greedy decoding) returns the (B,) int32 argmax of the logits instead, without storing them
  // where the output head's format allows (qargmax).
  enum class Head { logits, argmax };
  Tensor decode(const Tensor& tokens, const std::vector<SeqPos>& seqs, int64_t key_len = 0, Head head = Head::logits);
  // The key length decode uses for a batch whose furthest position is `pos`: pos + 1 rounded up to 128.
  int64_t decode_key_length(int64_t pos) const;
  // The variables of sequence b of a decode batch, bound to slot `slot` at position `pos`.
  SeqPos decode_position(int b, int slot, int64_t pos) const;
  int slots() const { return slots_; }
  // The padded length a chunk of n tokens at start_pos runs as: 1, 8, 16, 32, then multiples of 64 (n itself
  // where that would not fit in the cache).
  int64_t prefill_length(int64_t n, int64_t start_pos) const;

 private:
  struct Layer;
  // `seqs`: one sequence of n_tokens, or n_tokens sequences of one token each. `last`: (1, n_tokens) one-hot
  // row picking the token whose logits are returned (null: every row's)
  Tensor run(const Tensor& ids, int64_t n_tokens, const std::vector<SeqPos>& seqs, const Tensor* last, int64_t key_len = 0,
             Head head = Head::logits);
  Tensor attention(const Layer& L, int layer, const Tensor& h, int64_t T, const std::vector<SeqPos>& seqs, int64_t key_len);
  // q (T, H, hd) and k (T, KV, hd) before RoPE, v (T, KV * hd): T tokens of one sequence -> (T, H * hd)
  Tensor attend(int layer, Tensor q, Tensor k, const Tensor& v, int64_t T, const SeqPos& at, int64_t key_len);
  Tensor rope(const Tensor& x, int64_t T, const BoundVariable& pos, bool local) const;
  Tensor norm(const Tensor& x, const Tensor& w) const;

  std::shared_ptr<GGUFFile> file_;
  ModelConfig cfg_;
  std::string device_;
  int64_t max_ctx_ = 0;
  // KV-cache rows per slot: max_ctx_ rounded up to 128, so every attention length (a multiple of 128) fits and
  // stays a vector-friendly size; the rows past max_ctx_ stay zero and masked
  int64_t kv_rows_ = 0;
  uint64_t step_bytes_ = 0;
  int slots_ = 1;
  std::vector<Variable> pos_vars_, base_vars_;  // per sequence of a decode batch
  std::vector<Layer> layers_;
  std::unique_ptr<QuantMatrix> embed_, output_;
  std::unique_ptr<Tensor> out_norm_, rope_cos_, rope_sin_, rope_cos_local_, rope_sin_local_, key_index_;
  // (width, positions), one column per token, realized once and written in place; q8_0 adds `scales`
  // (width / 32, positions) float16
  struct Cache {
    Tensor data;
    std::optional<Tensor> scales;
  };
  void write_rows(Cache& cache, const Tensor& rows, const SeqPos& at);
  Tensor read_rows(const Cache& cache, const SeqPos& at, const Dim& len) const;  // (width, len) float32
  std::vector<Cache> k_cache_, v_cache_;
};

}  // namespace tg::llm
