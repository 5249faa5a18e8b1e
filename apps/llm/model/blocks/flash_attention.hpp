// Attention over the KV cache without materialized scores (flash-style): for each KV head and query token, the
// query heads that share the KV head run an online softmax over blocks of keys (a block's scores in registers; the
// running maximum, sum and output rescaled per block), the keys split into ranges whose partial results are
// combined afterwards where there are too few (head, token) pairs to keep the cores busy (decode).
#pragma once

#include <cstdint>

#include "model/kv_cache.hpp"
#include "tg/tensor.hpp"

namespace tg::llm {

inline constexpr int64_t kFlashBlock = 16;  // keys per block: one vector of scores

struct FlashAttentionSpec {
  double scale = 1;    // of the scores (1/sqrt(head dim))
  int64_t window = 0;  // sliding window: key j is seen from position p when p - j < window (0: no window)
  int64_t splits = 0;  // key ranges combined after (0: chosen from the work: 1 unless few (head, token) pairs)
};

// q (T, H, hd) float32, rotated, for positions [pos, pos + T) of the sequence at `at`; keys and values of its slot
// in `k` and `v` (rows KV * hd, one column per position); `len` keys from the slot's first (static, a multiple of
// kFlashBlock, at least pos + T; the causal mask hides the rest) -> (T, H * hd) float32.
Tensor flash_attention(const Tensor& q, const KvCache& k, const KvCache& v, int64_t kv_heads, const SeqPos& at,
                       int64_t len, const FlashAttentionSpec& spec);

}  // namespace tg::llm
