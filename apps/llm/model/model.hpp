// A decoder read from a GGUF, of any architecture in the registry (model/arch/): the token embedding, the
// architecture's layers over the residual stream, the output norm and head, and the per-sequence state they
// write. Every kernel is a tg tensor op or a tg custom kernel on the chosen device; weights stay packed in the
// mapped file. The generator and the server use only this class.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.hpp"
#include "model/config.hpp"
#include "model/decoder.hpp"
#include "model/kv_cache.hpp"
#include "model/state.hpp"
#include "model/tensor_parallel.hpp"
#include "quant/quant.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg::llm {

struct LoadOptions {
  std::string device;          // "" = the default device
  int64_t max_context = 4096;  // KV cache rows (clamped to the model's context length)
  KvType kv = KvType::f16;     // as llama.cpp: half the memory and bandwidth of f32 (Qwen3-0.6B-shaped decode at
                               // depth 512: 23.7 -> 28.1 tok/s, peak RSS 589 -> 519 MB)
  int slots = 1;               // sequences the KV cache holds at once (each max_context rows)
  // the largest decode batch (0: slots): more rows than slots serve drafted tokens, several rows of one slot at
  // consecutive positions (Generator::next_drafted)
  int decode_rows = 0;
  // recurrent layers' state (conv rows and the delta rule's matrices): float32 as llama.cpp; float16 as the seed
  // (half the state's memory and traffic; the kernels compute in float32)
  DType ssm = dtypes::float32;
  // The attention scores (heads x tokens x keys, float32) a forward pass may materialize: past it, and whenever
  // the key length is static and this is 0, attention runs as flash attention (blocks of keys, online softmax).
  // Materialized scores take tg's tuned matmul and softmax kernels: Gemma 3 270M, 512-token prompt, 2 threads:
  // prefill 1085 tok/s materialized, 498 flash; decode at depth 1024 76 vs 67 tok/s.
  int64_t max_score_bytes = int64_t{64} << 20;
  // this model as one rank of a tensor-parallel group (model/tensor_parallel.hpp): its share of every layer
  TensorParallel tp;
};

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  Model(std::shared_ptr<GGUFFile> file, const LoadOptions& opts);  // use load()
  ~Model();

  const ModelConfig& config() const { return cfg_; }
  const GGUFFile& gguf() const { return *file_; }
  int64_t max_context() const { return state_->max_context(); }
  const std::string& device() const { return device_; }
  uint64_t weight_bytes_per_token() const { return step_bytes_; }  // packed weights one decode step reads

  // Runs `tokens` at positions [start_pos, start_pos + n) through every layer, writing their keys and values
  // into the KV cache, and returns the logits of the last token: (1, vocab) float32, unrealized. Errors if the
  // tokens do not fit in the cache or an id is outside the vocabulary. Chunks are padded to a few lengths
  // (prefill_length) so that prompts of every length share compiled kernels; the padding's keys and values land
  // past the last token, where the next tokens overwrite them before anything attends to them.
  // Logits::every: the logits of every token, (n, vocab) (scoring a prompt).
  enum class Logits { last, every };
  Tensor forward(const std::vector<int32_t>& tokens, int64_t start_pos, int slot = 0, Logits which = Logits::last);
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
  int decode_rows() const { return decode_rows_; }  // the most rows decode and decode_chunk take
  // n = tokens.shape()[0] <= decode_rows() tokens of one sequence at positions [pos, pos + n) of a slot, attending
  // as a prefill chunk does (a drafted step: the pending token and its guesses), over key_len cache rows: the (n,)
  // int32 argmax of each row's logits. The graph depends only on n and key_len (Generator::next_drafted captures
  // it); `at` comes from chunk_position.
  Tensor decode_chunk(const Tensor& tokens, const SeqPos& at, int64_t key_len);
  SeqPos chunk_position(int slot, int64_t pos) const;
  int slots() const { return state_->slots(); }
  // Whether a slot's context can be cut back to a prefix of it (a KV cache can; a recurrent state holds only its
  // last position).
  bool can_rewind() const { return !decoder_.recurrent; }
  int64_t prefill_chunk() const { return decoder_.prefill_chunk; }  // the architecture's prefill chunk length
  // For the others: the slot's state saved, and put back (prefix reuse through checkpoints, Generator).
  SequenceState::Checkpoint checkpoint(int slot) const { return state_->checkpoint(slot); }
  void restore(int slot, const SequenceState::Checkpoint& c) { state_->restore(slot, c); }
  void copy_slot(int from, int to) { state_->copy_slot(from, to); }
  // The padded length a chunk of n tokens at start_pos runs as: 1, 8, 16, 32, then multiples of 64 (n itself
  // where that would not fit in the cache).
  int64_t prefill_length(int64_t n, int64_t start_pos) const;

 private:
  // `seqs`: one sequence of n_tokens, or n_tokens sequences of one token each. `last`: (1, n_tokens) one-hot
  // row picking the token whose logits are returned (null: every row's)
  // `valid`: a prefill chunk's real tokens (0: all)
  Tensor run(const Tensor& ids, int64_t n_tokens, const std::vector<SeqPos>& seqs, const Tensor* last,
             int64_t key_len = 0, Head head = Head::logits, int64_t valid = 0);

  std::shared_ptr<GGUFFile> file_;
  ModelConfig cfg_;
  std::string device_;
  std::unique_ptr<SequenceState> state_;
  uint64_t step_bytes_ = 0;
  std::vector<Variable> pos_vars_, base_vars_;  // per sequence of a decode batch
  int decode_rows_ = 1;
  std::optional<Variable> chunk_pos_;  // decode_chunk's start, whose range keeps its decode_rows() rows in the cache
  std::unique_ptr<QuantMatrix> embed_, output_;
  TensorParallel tp_;
  std::pair<int64_t, int64_t> head_;  // the vocabulary rows output_ holds (tensor-parallel: this rank's share)
  std::unique_ptr<Tensor> out_norm_;
  Decoder decoder_;
};

}  // namespace tg::llm
