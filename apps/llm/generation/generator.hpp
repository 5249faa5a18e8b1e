// Token generation on a Model: prompts prefilled in chunks (reusing the cached prefix), then one token at a time
// through a tg::Jit replay of the decode step with the positions as bound variables. Each of the model's KV-cache
// slots holds one sequence; next_batch() decodes several of them in one step (the weights are read once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "generation/lockstep.hpp"
#include "generation/sampler.hpp"
#include "model/model.hpp"
#include "tg/jit.hpp"

namespace tg::llm {

class Generator {
 public:
  // prefill_chunk 0: the model's (Model::prefill_chunk)
  explicit Generator(Model& model, int64_t prefill_chunk = 0);

  struct Prefill {
    int64_t reused = 0;    // prompt tokens already in the KV cache (a shared prefix with the last request)
    int64_t computed = 0;  // tokens run through the model
  };
  // What prefill saw of the prompt's own tokens: logprobs[i] is token i + 1's under the logits after token i,
  // with the top_n likeliest (logprobs_of). Scoring runs the whole prompt: no cached prefix has logits.
  struct PromptScores {
    int64_t top_n = 0;
    std::vector<Logprobs> logprobs;
  };
  // Makes `prompt` (non-empty) the context of `slot`. Errors if it does not fit in the model's context.
  Prefill prefill(const std::vector<int32_t>& prompt, int slot = 0, PromptScores* scores = nullptr);
  // The prompt tokens prefill(prompt, slot) would reuse: the prefix shared with the slot's context (at least one
  // token left to run). A recurrent model reuses it only from the context's end or a checkpoint: its state is
  // saved at every prefill chunk boundary and before a prompt's last token (the last kMaxCheckpoints kept).
  int64_t reusable(const std::vector<int32_t>& prompt, int slot = 0) const;
  static constexpr size_t kMaxCheckpoints = 4;
  // Samples the token after the context of `slot` and appends it (it is run through the model on the next call).
  int32_t next(Sampler& sampler, int slot = 0);
  // The same for several slots at once: their pending tokens go through one batched decode step.
  std::vector<int32_t> next_batch(const std::vector<int>& slots, const std::vector<Sampler*>& samplers);
  // Greedy decoding with guesses (speculative decoding): the pending token and `draft`, the tokens guessed to
  // follow it, run as one chunk of `rows` tokens of `slot` (Model::decode_chunk, the draft padded), and each row's
  // argmax is checked against the next guess. Returns what greedy next() calls would have returned, at least one
  // token (the last one pending), for the price of one step of `rows` tokens. Needs a model that can rewind (the
  // rows past the last accepted guess are left in the KV cache past the context, where later tokens overwrite
  // them), rows <= model().decode_rows(), and room in the context for model().decode_rows() rows.
  std::vector<int32_t> next_drafted(const std::vector<int32_t>& draft, int64_t rows, int slot = 0);
  // Makes `context` the context of `slot` as prefill does, but runs what is new through captured steps, and leaves
  // the greedy token after the context pending: next_drafted's chunk step for whole chunks of `rows` tokens, the
  // decode step for the rest. A draft model catching up with the model it guesses for runs a few new tokens each
  // time, at a new position: as prefill passes, each would compile a new shape. Needs a model that can rewind and
  // rows <= model().decode_rows().
  void follow(const std::vector<int32_t>& context, int64_t rows, int slot = 0);
  void reset(int slot = -1);  // an empty context for `slot` (-1: every slot); the decode captures are kept
  // Slot `to` continues from slot `from`'s context (its caches copied, the same next-token logits): n choices
  // of one prompt, prefilled once.
  void fork(int from, int to);
  // Tokens in the context so far (prompt and generated, the last one possibly not yet run).
  int64_t position(int slot = 0) const;
  const std::vector<int32_t>& cached_tokens(int slot = 0) const;
  std::optional<int32_t> pending(int slot = 0) const { return seq(slot).pending; }  // sampled, not yet run
  int slots() const { return static_cast<int>(seqs_.size()); }
  Model& model() { return model_; }

  // Tensor parallelism (lockstep.hpp). The leader: from lead() on, each call above that runs the model is sent to
  // the other ranks before it runs. A follower: replay() runs the leader's calls on this rank's share of the model
  // until the leader ends; a call that fails on one side only (the leader's errors are the follower's: same
  // state, same checks) ends the group with a message.
  void lead(Lockstep& lockstep) { lead_ = &lockstep; }
  void replay(Lockstep& lockstep);
  // The leader waiting for work lets the followers know it is alive: keepalive() at least every keepalive_period()
  // (lockstep.hpp; without lead(), nothing to do and no period).
  void keepalive() {
    if (lead_) lead_->keepalive();
  }
  std::chrono::milliseconds keepalive_period() const {
    return lead_ ? lead_->keepalive_period() : std::chrono::hours(1);
  }

 private:
  // The leader's side of a call: sent before it runs (the outermost call only: follow() runs next()), the lockstep
  // held until it returns, and whether it threw sent with the next call.
  struct Announce {
    template <typename Args>  // Args: () -> std::vector<int64_t>, called only where the call is sent
    Announce(Generator& g, LockstepCall::Op op, Args&& args) : gen(g), exceptions(std::uncaught_exceptions()) {
      if (gen.lead_ && gen.depth_ == 0) {
        lock = gen.lead_->held();
        gen.lead_->send({op, args()});
      }
      ++gen.depth_;
    }
    ~Announce() {
      if (--gen.depth_ == 0 && lock.owns_lock()) gen.lead_->failed(std::uncaught_exceptions() > exceptions);
    }
    Generator& gen;
    std::unique_lock<std::mutex> lock;
    int exceptions;
  };
  // The logits of one forward pass (a prefill chunk, or a decode batch shared by its slots), read back lazily. A
  // decode batch whose samplers are all greedy has only the argmax (the head never stores the logits).
  struct Outputs {
    std::optional<Tensor> logits;  // (rows, vocab)
    std::optional<Tensor> argmax;  // (rows,)
    std::vector<float> host_logits;
    std::vector<int32_t> host_argmax;
  };
  struct Seq {
    std::vector<int32_t> cached;     // tokens whose keys and values are in the slot, in order
    std::optional<int32_t> pending;  // sampled, not yet run
    std::shared_ptr<Outputs> out;    // after the last token run
    int64_t row = 0;                 // this slot's row in it
    std::vector<std::pair<int64_t, SequenceState::Checkpoint>> checkpoints;  // (position, state), ascending
  };
  Seq& seq(int slot);
  const Seq& seq(int slot) const;
  void feed_pending(const std::vector<int>& slots, bool greedy);
  // Feeds the slots' pending tokens and reads back each one's row of outputs: the logits where logits[i] (sampled
  // by samplers[i]), else the argmax, which becomes the slot's pending token. A follower has no samplers (null): its
  // pending tokens come with the leader's next call.
  std::vector<int32_t> step(const std::vector<int>& slots, const std::vector<bool>& logits,
                            const std::vector<Sampler*>* samplers);
  // The decode step's outputs for `toks` at `at` (rows of one or several slots), through a Jit per shape.
  std::vector<Tensor> run_decode(const std::vector<int32_t>& toks, const std::vector<std::pair<int, int64_t>>& at,
                                 bool greedy);
  // The argmax after each of `toks` run as one chunk of `slot` at position pos (Model::decode_chunk, one capture
  // per row count and key length).
  std::vector<int32_t> run_chunk(const std::vector<int32_t>& toks, int64_t pos, int slot);
  Model& model_;
  int64_t chunk_;
  std::vector<Seq> seqs_;
  std::map<std::tuple<size_t, int64_t, bool>, Jit> decode_;  // one capture per batch size, key length and head
  std::map<std::pair<int64_t, int64_t>, Jit> drafted_;       // next_drafted's, per rows and key length
  Lockstep* lead_ = nullptr;
  int depth_ = 0;  // calls in progress (the outermost one is announced)
};

}  // namespace tg::llm
