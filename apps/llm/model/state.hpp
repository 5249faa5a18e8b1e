// The per-sequence state of a model on the device, for every slot at once: the attention layers' KV caches
// (and, for recurrent layers, their conv and recurrent states). Layers ask for their parts while the model is
// built; the generator and the server address it only by slot and position, never by architecture.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "model/kv_cache.hpp"

namespace tg::llm {

class SequenceState {
 public:
  // `slots` sequences of up to `max_context` tokens each.
  SequenceState(int slots, int64_t max_context, KvType kv, DType recurrent, std::string device);

  int slots() const { return slots_; }
  int64_t max_context() const { return max_ctx_; }
  // KV-cache rows per slot: max_context rounded up to 128, so every attention length (a multiple of 128) fits and
  // stays a vector-friendly size; the rows past max_context stay zero and masked
  int64_t rows_per_slot() const { return rows_; }
  const std::string& device() const { return device_; }
  // 0, 1, ..., rows_per_slot - 1 as int32 on the device: key positions for the attention masks
  const Tensor& key_index() const { return key_index_; }

  // A cache of `width` values per token for every slot; the reference stays valid for the state's life.
  KvCache& add_kv_cache(int64_t width);
  // A recurrent layer's state: `rows` x `width` values per slot (float32 or float16: the recurrent dtype), zero, as
  // one realized (slots * rows, width) tensor its kernels update in place (computing in float32). A sequence at
  // position 0 reads it as zero (never reset).
  const Tensor& add_recurrent_state(int64_t rows, int64_t width);
  // A copy of one slot's recurrent states (every layer's), to return the slot to that point later: the prefix
  // reuse of models whose state holds only its last position (the KV caches need no copy: they are rows).
  struct Checkpoint {
    std::vector<Tensor> parts;  // per recurrent state: the slot's rows
  };
  bool has_recurrent_state() const { return !recurrent_.empty(); }
  Checkpoint checkpoint(int slot) const;
  void restore(int slot, const Checkpoint& c);
  // Slot `to` takes slot `from`'s state: every KV cache's rows and recurrent state (one prompt, n choices).
  void copy_slot(int from, int to);

  // (B, 3) int32: each sequence's first cache row (slot * rows_per_slot), position and real tokens (`valid` for a
  // single sequence, a prefill chunk; 1 each in a decode batch), for the kernels that update a recurrent state.
  Tensor sequence_table(const std::vector<SeqPos>& seqs, int64_t valid) const;

 private:
  int slots_;
  int64_t max_ctx_, rows_;
  KvType kv_;
  DType recurrent_dtype_;
  std::string device_;
  Tensor key_index_;
  std::deque<KvCache> kv_caches_;  // deques: references stay valid as layers add theirs
  std::deque<Tensor> recurrent_;
  Variable copy_from_, copy_to_;  // copy_slot's first rows: one kernel per cache serves every pair of slots
};

}  // namespace tg::llm
