// Prefill and decode. The decode step is captured once by a tg::Jit and replayed: no scheduling or codegen per
// token, only the token buffer and the start_pos value change.
#include "generate.hpp"

#include <algorithm>

namespace tg::llm {

Generator::Generator(Model& model, int64_t prefill_chunk)
    : model_(model),
      chunk_(std::max<int64_t>(1, prefill_chunk)),
      decode_([this](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
        Tensor logits = model_.decode_step(in[0], vars[0]);
        return std::vector<Tensor>{logits, logits.argmax(-1)};
      }) {}

Generator::Prefill Generator::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw std::invalid_argument("tg-llm: empty prompt");
  if (static_cast<int64_t>(prompt.size()) > model_.max_context())
    throw Error("tg-llm: the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                std::to_string(model_.max_context()) + " (--max-context)");
  pending_.reset();
  // the longest prefix already cached, leaving at least one token to run so there are logits to sample from
  size_t reuse = 0;
  while (reuse < cached_.size() && reuse + 1 < prompt.size() && cached_[reuse] == prompt[reuse]) ++reuse;
  cached_.resize(reuse);
  logits_.reset();  // a chunk that fails must not leave the previous context's logits to sample from
  argmax_.reset();
  Prefill r{static_cast<int64_t>(reuse), static_cast<int64_t>(prompt.size() - reuse)};
  for (size_t at = reuse; at < prompt.size();) {
    size_t n = std::min(prompt.size() - at, static_cast<size_t>(chunk_));
    std::vector<int32_t> part(prompt.begin() + static_cast<ptrdiff_t>(at), prompt.begin() + static_cast<ptrdiff_t>(at + n));
    logits_ = model_.forward(part, static_cast<int64_t>(at));
    argmax_.reset();
    cached_.insert(cached_.end(), part.begin(), part.end());
    at += n;
  }
  return r;
}

void Generator::reset() {
  cached_.clear();
  pending_.reset();
  logits_.reset();
  argmax_.reset();
}

void Generator::feed_pending() {
  if (!pending_) return;
  const int64_t pos = static_cast<int64_t>(cached_.size());
  if (pos >= model_.max_context())
    throw Error("tg-llm: the context of " + std::to_string(model_.max_context()) + " tokens is full (--max-context)");
  Tensor tok = Tensor::from_vector(std::vector<int32_t>{*pending_}, {1}, dtypes::int32, model_.device());
  auto out = decode_({tok}, {model_.pos_variable().bind(pos)});
  logits_ = out[0];
  argmax_ = out[1];
  cached_.push_back(*pending_);
  pending_.reset();
}

int32_t Generator::next(Sampler& sampler) {
  feed_pending();
  if (!logits_) throw std::logic_error("tg-llm: next() before prefill()");
  int32_t tok;
  if (sampler.params().greedy()) {
    if (!argmax_) argmax_ = logits_->argmax(-1);
    tok = argmax_->to_vector<int32_t>()[0];
  } else {
    tok = sampler.sample(logits_->to_vector<float>());
  }
  pending_ = tok;
  return tok;
}

}  // namespace tg::llm
