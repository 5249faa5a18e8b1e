// Token generation on a Model: prompts prefilled in chunks (reusing the cached prefix), then one token at a time
// through a tg::Jit replay of the decode step with the position as a bound variable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "model.hpp"
#include "sampler.hpp"
#include "tg/jit.hpp"

namespace tg::llm {

class Generator {
 public:
  explicit Generator(Model& model, int64_t prefill_chunk = 256);

  struct Prefill {
    int64_t reused = 0;    // prompt tokens already in the KV cache (a shared prefix with the last request)
    int64_t computed = 0;  // tokens run through the model
  };
  // Makes the context `prompt` (non-empty). Errors if it does not fit in the model's context.
  Prefill prefill(const std::vector<int32_t>& prompt);
  // Samples the token after the context and appends it (it is run through the model on the next call).
  int32_t next(Sampler& sampler);
  void reset();  // an empty context (the decode capture is kept)
  // Tokens in the context so far (prompt and generated, the last one possibly not yet run).
  int64_t position() const { return static_cast<int64_t>(cached_.size()) + (pending_ ? 1 : 0); }
  const std::vector<int32_t>& cached_tokens() const { return cached_; }
  Model& model() { return model_; }

 private:
  void feed_pending();
  Model& model_;
  int64_t chunk_;
  std::vector<int32_t> cached_;          // tokens whose keys and values are in the cache, in order
  std::optional<int32_t> pending_;       // sampled, not yet run
  std::optional<Tensor> logits_, argmax_;  // after the last token run
  Jit decode_;
};

}  // namespace tg::llm
