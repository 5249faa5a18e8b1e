// Prefill and decode. The decode step is captured once per batch size by a tg::Jit and replayed: no scheduling
// or codegen per token, only the token buffer and the slot / position values change.
#include "generation/generator.hpp"

#include <algorithm>

namespace tg::llm {

Generator::Generator(Model& model, int64_t prefill_chunk)
    : model_(model),
      chunk_(std::max<int64_t>(1, prefill_chunk > 0 ? prefill_chunk : model.prefill_chunk())),
      seqs_(static_cast<size_t>(model.slots())) {}

Generator::Seq& Generator::seq(int slot) {
  if (slot < 0 || slot >= slots()) throw std::invalid_argument("tg-llm: no KV-cache slot " + std::to_string(slot));
  return seqs_[static_cast<size_t>(slot)];
}
const Generator::Seq& Generator::seq(int slot) const { return const_cast<Generator*>(this)->seq(slot); }

int64_t Generator::position(int slot) const {
  const Seq& s = seq(slot);
  return static_cast<int64_t>(s.cached.size()) + (s.pending ? 1 : 0);
}

const std::vector<int32_t>& Generator::cached_tokens(int slot) const { return seq(slot).cached; }

int64_t Generator::reusable(const std::vector<int32_t>& prompt, int slot) const {
  const Seq& s = seq(slot);
  // the longest prefix already cached, leaving at least one token to run so there are logits to sample from
  size_t common = 0;
  while (common < s.cached.size() && common + 1 < prompt.size() && s.cached[common] == prompt[common]) ++common;
  if (model_.can_rewind() || common == s.cached.size()) return static_cast<int64_t>(common);
  int64_t best = 0;  // a recurrent state is at the context's end, or at a checkpoint
  for (const auto& [pos, state] : s.checkpoints)
    if (pos <= static_cast<int64_t>(common)) best = pos;
  return best;
}

namespace {
using Op = LockstepCall::Op;
std::vector<int64_t> words(std::initializer_list<int64_t> head, const std::vector<int32_t>& tokens = {}) {
  std::vector<int64_t> w(head);
  w.insert(w.end(), tokens.begin(), tokens.end());
  return w;
}
}  // namespace

Generator::Prefill Generator::prefill(const std::vector<int32_t>& prompt, int slot, PromptScores* scores) {
  Announce call(*this, Op::prefill, [&] { return words({slot, scores ? scores->top_n : -1}, prompt); });
  Seq& s = seq(slot);
  if (prompt.empty()) throw std::invalid_argument("tg-llm: empty prompt");
  if (static_cast<int64_t>(prompt.size()) > model_.max_context())
    throw Error("tg-llm: the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                std::to_string(model_.max_context()) + " (--max-context)");
  s.pending.reset();
  const size_t reuse = scores ? 0 : static_cast<size_t>(reusable(prompt, slot));
  if (scores) scores->logprobs.clear();
  const bool recurrent = !model_.can_rewind();
  const Prefill r{static_cast<int64_t>(reuse), static_cast<int64_t>(prompt.size() - reuse)};
  // a recurrent state moves as each layer's kernel runs: a chunk (or a restore) that fails part-way leaves it
  // matching no context, so the slot starts over (position 0 reads the state as zero)
  try {
    if (recurrent) {
      std::erase_if(s.checkpoints, [&](const auto& c) { return c.first > static_cast<int64_t>(reuse); });
      // a shorter reuse than the context is a checkpoint's position (or 0: position 0 reads the state as zero)
      if (reuse > 0 && reuse < s.cached.size()) model_.restore(slot, s.checkpoints.back().second);
    }
    s.cached.resize(reuse);
    s.out.reset();  // a chunk that fails must not leave the previous context's logits to sample from
    for (size_t at = reuse; at < prompt.size();) {
      // a recurrent model's chunks end at multiples of the chunk length (checkpoints there serve every prompt that
      // shares them), and its last chunk stops one token short, so that the state before the prompt's last token
      // is a checkpoint too (the same prompt again reuses all but that token)
      const size_t step = static_cast<size_t>(chunk_);
      size_t end = std::min(prompt.size(), recurrent ? (at / step + 1) * step : at + step);
      if (recurrent && end == prompt.size() && end - at > 1) --end;
      std::vector<int32_t> part(prompt.begin() + static_cast<ptrdiff_t>(at),
                                prompt.begin() + static_cast<ptrdiff_t>(end));
      if (scores) {
        Tensor all = model_.forward(part, static_cast<int64_t>(at), slot, Model::Logits::every);
        const int64_t n = static_cast<int64_t>(part.size()), vocab = all.shape()[1];
        std::vector<float> host = all.to_vector<float>();
        for (int64_t i = 0; i < n && at + static_cast<size_t>(i) + 1 < prompt.size(); ++i)  // row i: token at + i + 1
          scores->logprobs.push_back(
              logprobs_of(std::span<const float>(host.data() + i * vocab, static_cast<size_t>(vocab)),
                          prompt[at + static_cast<size_t>(i) + 1], scores->top_n));
        s.out = std::make_shared<Outputs>(Outputs{all.shrink({{n - 1, n}, {0, vocab}}), {}, {}, {}});
      } else {
        s.out = std::make_shared<Outputs>(Outputs{model_.forward(part, static_cast<int64_t>(at), slot), {}, {}, {}});
      }
      s.row = 0;
      s.cached.insert(s.cached.end(), part.begin(), part.end());
      at = end;
      if (recurrent && at < prompt.size() && (at % static_cast<size_t>(chunk_) == 0 || at + 1 == prompt.size())) {
        s.checkpoints.emplace_back(static_cast<int64_t>(at), model_.checkpoint(slot));
        if (s.checkpoints.size() > kMaxCheckpoints) s.checkpoints.erase(s.checkpoints.begin());
      }
    }
  } catch (...) {
    if (recurrent) s = Seq{};
    throw;
  }
  return r;
}

void Generator::reset(int slot) {
  Announce call(*this, Op::reset, [&] { return words({slot}); });
  for (int i = 0; i < slots(); ++i)
    if (slot < 0 || i == slot) seqs_[static_cast<size_t>(i)] = Seq{};
}

void Generator::fork(int from, int to) {
  Announce call(*this, Op::fork, [&] { return words({from, to}); });
  model_.copy_slot(from, to);
  seq(to) = seq(from);  // the outputs too: both sample their next token from the same logits (row)
}

void Generator::feed_pending(const std::vector<int>& slots, bool greedy) {
  std::vector<int> feed;
  for (int sl : slots)
    if (seq(sl).pending) feed.push_back(sl);
  if (feed.empty()) return;
  std::vector<int32_t> toks;
  std::vector<std::pair<int, int64_t>> at;
  for (int sl : feed) {
    toks.push_back(*seq(sl).pending);
    at.push_back({sl, static_cast<int64_t>(seq(sl).cached.size())});
  }
  auto res = run_decode(toks, at, greedy);
  auto out =
      std::make_shared<Outputs>(greedy ? Outputs{std::nullopt, res[0], {}, {}} : Outputs{res[0], std::nullopt, {}, {}});
  for (size_t b = 0; b < feed.size(); ++b) {
    Seq& s = seq(feed[b]);
    s.out = out;
    s.row = static_cast<int64_t>(b);
    s.cached.push_back(*s.pending);
    s.pending.reset();
  }
}

std::vector<Tensor> Generator::run_decode(const std::vector<int32_t>& toks,
                                          const std::vector<std::pair<int, int64_t>>& at, bool greedy) {
  std::vector<BoundVariable> vars;
  int64_t furthest = 0;
  for (size_t b = 0; b < at.size(); ++b) {
    const auto [slot, pos] = at[b];
    if (pos >= model_.max_context())
      throw Error("tg-llm: the context of " + std::to_string(model_.max_context()) + " tokens is full (--max-context)");
    furthest = std::max(furthest, pos);
    SeqPos p = model_.decode_position(static_cast<int>(b), slot, pos);
    vars.push_back(p.base);
    vars.push_back(p.pos);
  }
  // static key lengths (a new capture every 128 positions) let the attention's kernels vectorize
  const auto key = std::make_tuple(toks.size(), model_.decode_key_length(furthest), greedy);
  auto it = decode_.find(key);
  if (it == decode_.end())
    it = decode_
             .emplace(key, Jit([this, key_len = std::get<1>(key), greedy](const std::vector<Tensor>& in,
                                                                          const std::vector<BoundVariable>& v) {
                        std::vector<SeqPos> seqs;
                        for (size_t i = 0; i + 1 < v.size(); i += 2) seqs.push_back({v[i], v[i + 1]});
                        return std::vector<Tensor>{
                            model_.decode(in[0], seqs, key_len, greedy ? Model::Head::argmax : Model::Head::logits)};
                      }))
             .first;
  Tensor tok = Tensor::from_vector(toks, {static_cast<int64_t>(toks.size())}, dtypes::int32, model_.device());
  return it->second({tok}, vars);
}

std::vector<int32_t> Generator::next_drafted(const std::vector<int32_t>& draft, int64_t rows, int slot) {
  Announce call(*this, Op::next_drafted, [&] { return words({rows, slot, seq(slot).pending.value_or(-1)}, draft); });
  Seq& s = seq(slot);
  if (!s.pending) throw std::logic_error("tg-llm: next_drafted() before next()");
  if (!model_.can_rewind()) throw std::logic_error("tg-llm: drafted tokens need a model whose context can be cut back");
  const int64_t pos = static_cast<int64_t>(s.cached.size());
  if (draft.empty() || rows <= static_cast<int64_t>(draft.size()) || rows > model_.decode_rows() ||
      pos + rows > model_.max_context())
    throw std::invalid_argument("tg-llm: " + std::to_string(draft.size()) + " drafted tokens in " +
                                std::to_string(rows) + " rows at position " + std::to_string(pos));
  // row i: the token at pos + i (the pending one, then the guesses, then the last guess again as padding), all
  // in one chunk that attends as a prefill chunk does (one attention per layer, not one per row)
  std::vector<int32_t> toks{*s.pending};
  for (int64_t i = 1; i < rows; ++i)
    toks.push_back(draft[static_cast<size_t>(std::min<int64_t>(i, static_cast<int64_t>(draft.size())) - 1)]);
  const std::vector<int32_t> best = run_chunk(toks, pos, slot);
  // row i's argmax is the token after row i's: a guess is accepted while it is what the model chose
  std::vector<int32_t> out{best[0]};
  while (out.size() <= draft.size() && draft[out.size() - 1] == out.back()) out.push_back(best[out.size()]);
  s.cached.push_back(*s.pending);
  s.cached.insert(s.cached.end(), draft.begin(), draft.begin() + static_cast<ptrdiff_t>(out.size() - 1));
  s.pending = out.back();
  s.out.reset();  // the next step feeds the pending token first
  return out;
}

std::vector<int32_t> Generator::run_chunk(const std::vector<int32_t>& toks, int64_t pos, int slot) {
  const int64_t rows = static_cast<int64_t>(toks.size());
  const auto key = std::make_pair(rows, model_.decode_key_length(pos + rows - 1));
  auto it = drafted_.find(key);
  if (it == drafted_.end())
    it = drafted_
             .emplace(key, Jit([this, key_len = key.second](const std::vector<Tensor>& in,
                                                            const std::vector<BoundVariable>& v) {
                        return std::vector<Tensor>{model_.decode_chunk(in[0], {v[0], v[1]}, key_len)};
                      }))
             .first;
  const SeqPos at = model_.chunk_position(slot, pos);
  Tensor tok = Tensor::from_vector(toks, {rows}, dtypes::int32, model_.device());
  return it->second({tok}, {at.base, at.pos})[0].to_vector<int32_t>();
}

void Generator::follow(const std::vector<int32_t>& context, int64_t rows, int slot) {
  Announce call(*this, Op::follow, [&] { return words({rows, slot}, context); });
  if (!model_.can_rewind() || rows < 1 || rows > model_.decode_rows())
    throw std::logic_error("tg-llm: follow() needs a model that rewinds, in chunks of its decode rows");
  if (context.empty()) throw std::invalid_argument("tg-llm: empty context");
  Seq& s = seq(slot);
  size_t at = static_cast<size_t>(reusable(context, slot));
  s.cached.resize(at);
  s.pending.reset();
  s.out.reset();
  Sampler greedy(SamplingParams{});
  // whole chunks while they fit (a chunk costs several one-token steps: what is left runs one token a step)
  while (context.size() - at >= static_cast<size_t>(rows) && static_cast<int64_t>(at) + rows <= model_.max_context()) {
    const std::vector<int32_t> toks(context.begin() + static_cast<ptrdiff_t>(at),
                                    context.begin() + static_cast<ptrdiff_t>(at) + rows);
    const std::vector<int32_t> best = run_chunk(toks, static_cast<int64_t>(at), slot);
    s.cached.insert(s.cached.end(), toks.begin(), toks.end());
    s.pending = best.back();
    at += static_cast<size_t>(rows);
  }
  if (at == context.size()) return;
  s.pending.reset();
  for (; at < context.size(); ++at) {
    if (s.pending) feed_pending({slot}, true);
    s.pending = context[at];
  }
  next(greedy, slot);  // runs the last one: the token after it is left pending
}

std::vector<int32_t> Generator::next_batch(const std::vector<int>& slots, const std::vector<Sampler*>& samplers) {
  if (slots.size() != samplers.size()) throw std::invalid_argument("tg-llm: next_batch needs one sampler per slot");
  std::vector<bool> logits;
  for (const Sampler* s : samplers) logits.push_back(s->needs_logits());
  Announce call(*this, Op::next_batch, [&] {
    std::vector<int64_t> w{static_cast<int64_t>(slots.size())};
    for (size_t i = 0; i < slots.size(); ++i) w.push_back(slots[i]);
    for (size_t i = 0; i < slots.size(); ++i) w.push_back(logits[i]);
    for (size_t i = 0; i < slots.size(); ++i) w.push_back(seq(slots[i]).pending.value_or(-1));
    return w;
  });
  return step(slots, logits, &samplers);
}

std::vector<int32_t> Generator::step(const std::vector<int>& slots, const std::vector<bool>& logits,
                                     const std::vector<Sampler*>* samplers) {
  feed_pending(slots, std::none_of(logits.begin(), logits.end(), [](bool l) { return l; }));
  std::vector<int32_t> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    Seq& s = seq(slots[i]);
    if (!s.out) throw std::logic_error("tg-llm: next() before prefill()");
    Outputs& o = *s.out;  // shared by the slots of one decode batch: read back once
    int32_t tok = 0;
    if (!logits[i]) {
      if (!o.argmax) o.argmax = o.logits->argmax(-1);
      if (o.host_argmax.empty()) o.host_argmax = o.argmax->to_vector<int32_t>();
      tok = o.host_argmax[static_cast<size_t>(s.row)];
    } else {
      if (!o.logits)
        throw std::logic_error("tg-llm: a sampler that needs the logits on a greedy decode step's outputs");
      if (!samplers) {  // a follower: the logits computed (their collectives meet the leader's), never read back
        o.logits->realize();
      } else {
        const int64_t vocab = o.logits->shape()[1];
        if (o.host_logits.empty()) o.host_logits = o.logits->to_vector<float>();
        tok = (*samplers)[i]->sample(
            std::span<const float>(o.host_logits.data() + s.row * vocab, static_cast<size_t>(vocab)));
      }
    }
    s.pending = tok;
    out.push_back(tok);
  }
  return out;
}

int32_t Generator::next(Sampler& sampler, int slot) { return next_batch({slot}, {&sampler})[0]; }

}  // namespace tg::llm
