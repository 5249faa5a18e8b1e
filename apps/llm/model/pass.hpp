// One forward pass as every layer sees it: T token rows that are either one sequence of T tokens (a prefill
// chunk) or T sequences of one token each (a decode batch), each sequence's slot and position, and the key length
// decode attends over.
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_cache.hpp"

namespace tg::llm {

struct Pass {
  int64_t T;
  const std::vector<SeqPos>& seqs;  // one (prefill) or T (decode batch)
  int64_t key_len;                  // decode: every sequence attends over key_len cache rows; 0: symbolic (pos + 1)
  int64_t valid;  // a prefill chunk's real tokens (the rest pad it to a shared length; they must not enter a
                  // recurrent state); T for a decode batch
  // the pass runs once, never replayed by a Jit (a prefill chunk; decode steps are captured): a layer may read
  // device values on the host mid-pass (the MoE FFN's grouping of tokens by expert)
  bool host_reads = false;
};

}  // namespace tg::llm
