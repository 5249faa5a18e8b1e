// Continuous batching: queued jobs take free KV-cache slots (the one whose cached tokens share the most of the
// prompt, so Generator::prefill reuses it), are prefilled one by one, then every running job gets one token per
// batched decode step until it stops. Each job ends with exactly one Done or Failed event and one log line.
#include "server/engine.hpp"

#include <cstdio>

#include "generation/prompt_lookup.hpp"

namespace tg::llm::server {

namespace {
// plain steps after which a draft model guesses again, whatever its rate (a probe); doubled after each probe that
// was not all right, up to kReguessAtMost (a draft that rarely agrees costs less and less)
constexpr int64_t kReguess = 32, kReguessAtMost = 512;
constexpr double kDraftModelTrust = 0.8;  // a draft model's rate of right guesses before any is checked
// how much one checked guess of a draft model moves its rate: its guesses are seen only when checked, a few per
// probe where guessing does not pay yet, so each weighs more than a prompt lookup's (seen every step)
constexpr double kDraftModelWeight = 0.25;
constexpr int64_t kProbeGuesses = 8;  // what a draft model guesses in a probe (8 right: its rate from 0.8 to 0.98)
// A running average of step times: a step that compiled (a new key length's capture, every 128 positions) counts
// as at most 3 typical ones; the first one always compiles, so it counts as at most what was guessed before any was
// measured (else one capture could price guesses out for good: no step of them would run to correct it).
void average(double& into, double seconds, double first_at_most) {
  into = into == 0 ? std::min(seconds, first_at_most) : into + 0.1 * (std::min(seconds, 3 * into) - into);
}

}  // namespace

void Job::push(JobEvent e) {
  {
    std::lock_guard<std::mutex> l(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

std::optional<JobEvent> Job::next(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_for(l, wait, [&] { return !events_.empty(); })) return std::nullopt;
  JobEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

// A job in a slot: its sampler, decoder and parser, what it has produced and when.
struct Engine::Running {
  using clock = std::chrono::steady_clock;
  std::shared_ptr<Job> job;
  Sampler sampler;
  StreamDecoder dec;
  OutputParser parser;
  Usage usage;
  int64_t budget = 0;
  int64_t drafted = 0, accepted = 0;  // guesses checked, and those the model confirmed
  GuessRate guesses;  // a draft model's starts at kDraftModelTrust (one of the family agrees most of the time)
  int64_t since_guess =
      kReguess;                // plain steps since a draft model last guessed (its rate goes stale): it probes first
  int64_t reguess = kReguess;  // plain steps between probes
  std::string finish = "length";
  bool interrupted = false;
  int choice;
  clock::time_point t0, t_first;
  Running(std::shared_ptr<Job> j, const Tokenizer& tok, int choice_index)
      : job(std::move(j)),
        sampler(seeded(job->spec().sampling, choice_index)),
        dec(tok),
        parser(job->spec().output),
        choice(choice_index),
        t0(clock::now()) {}
  static SamplingParams seeded(SamplingParams p, int choice) {
    p.seed += static_cast<uint64_t>(choice);
    return p;
  }
  void push(JobEvent e) {
    e.choice = choice;
    job->push(std::move(e));
  }
  void send(std::vector<OutputEvent> evs) {
    for (auto& e : evs) push(JobEvent::of_output(std::move(e)));
  }
};

Engine::Engine(Generator& gen, Tokenizer tok, size_t max_queued, LookupOptions lookup)
    : gen_(gen),
      tok_(std::move(tok)),
      max_queued_(max_queued),
      lookup_(lookup),
      running_(static_cast<size_t>(gen.slots())),
      thread_([this] { worker(); }) {}

Engine::~Engine() {
  stop();
  thread_.join();
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    for (auto& j : queue_) {
      j->cancel();
      j->push(JobEvent::failed("the server is shutting down"));
    }
    queue_.clear();
  }
  cv_.notify_all();
}

std::shared_ptr<Job> Engine::submit(JobSpec spec) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) throw QueueFull("the server is shutting down");
  if (spec.n < 1 || spec.n > gen_.slots())
    throw std::invalid_argument("'n' must be at most " + std::to_string(gen_.slots()) +
                                " here (the server's --parallel slots)");
  if (queue_.size() >= max_queued_) {
    ++totals_.rejected;
    throw QueueFull("the server is busy: " + std::to_string(queue_.size()) +
                    " requests are already waiting (--queue); retry later");
  }
  auto job = std::make_shared<Job>(std::move(spec), next_id_++);
  queue_.push_back(job);
  cv_.notify_one();
  return job;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> l(mu_);
  EngineMetrics m = totals_;
  m.queued = queue_.size();
  m.running = n_running_;
  return m;
}

int Engine::pick_slot(const std::vector<int32_t>& prompt) const {
  int best = -1;
  int64_t best_len = 0;
  for (int s = 0; s < gen_.slots(); ++s) {
    if (running_[static_cast<size_t>(s)]) continue;
    const int64_t n =
        prompt.empty() ? 0 : gen_.reusable(prompt, s);  // what the slot's cache (or checkpoints) would save
    if (best < 0 || n > best_len) best = s, best_len = n;
  }
  return best;
}

void Engine::worker() {
  for (;;) {
    std::vector<std::pair<std::shared_ptr<Job>, std::vector<int>>> admitted;
    {
      std::unique_lock<std::mutex> l(mu_);
      while (
          !cv_.wait_for(l, gen_.keepalive_period(), [&] { return stopping_ || n_running_ > 0 || !queue_.empty(); })) {
        l.unlock();
        gen_.keepalive();  // a tensor-parallel leader waiting for requests (lockstep.hpp)
        l.lock();
      }
      if (stopping_) break;
      // jobs take the free slots, each the one whose cached tokens share the most of its prompt (a job of n
      // choices waits for n free slots; its other choices take any)
      size_t reserved = 0;
      while (!queue_.empty() &&
             n_running_ + reserved + static_cast<size_t>(queue_.front()->spec().n) <= running_.size()) {
        std::shared_ptr<Job> job = queue_.front();
        queue_.pop_front();
        std::vector<int> slots;
        for (int i = 0; i < job->spec().n; ++i) {
          const int slot = pick_slot(i == 0 ? job->spec().prompt : std::vector<int32_t>{});
          running_[static_cast<size_t>(slot)] = std::make_unique<Running>(job, tok_, i);  // reserves the slot
          slots.push_back(slot);
        }
        reserved += slots.size();
        admitted.push_back({job, std::move(slots)});
      }
      n_running_ += reserved;
    }
    for (auto& [job, slots] : admitted) admit(job, slots);
    step();
  }
  for (size_t s = 0; s < running_.size(); ++s)
    if (running_[s]) {
      running_[s]->interrupted = true;
      finish(static_cast<int>(s));
    }
}

bool Engine::admit(std::shared_ptr<Job> job, const std::vector<int>& slots) {
  const JobSpec& spec = job->spec();
  auto running = [&](int slot) -> Running& { return *running_[static_cast<size_t>(slot)]; };
  for (int s : slots) running(s).usage.prompt_tokens = static_cast<int64_t>(spec.prompt.size());
  if (job->cancelled()) {
    for (int s : slots) {
      running(s).interrupted = true;
      finish(s);
    }
    return false;
  }
  int64_t reused = 0;
  std::vector<TokenLogprobs> echo;  // the prompt's tokens, scored (echo with logprobs), for every choice
  try {
    if (spec.constraint) {
      if (!trie_) trie_ = std::make_shared<const constrain::TokenTrie>(tok_);
      for (int s : slots)
        running(s).sampler.constrain(std::make_shared<constrain::Constraint>(
            trie_, constrain::JsonMatcher(spec.constraint->schema, spec.constraint->before, spec.constraint->after)));
    }
    Generator::PromptScores scores{std::max<int64_t>(spec.sampling.logprobs, 0), {}};
    const bool score = spec.score_prompt && spec.sampling.logprobs >= 0;
    reused = gen_.prefill(spec.prompt, slots[0], score ? &scores : nullptr).reused;
    for (size_t i = 1; i < slots.size(); ++i) gen_.fork(slots[0], slots[i]);
    if (score) {
      StreamDecoder text(tok_);  // each prompt token's share of the echoed text
      text.push(spec.prompt[0]);
      echo.push_back(described({{spec.prompt[0], 0}, {}}, text.last_bytes()));
      echo.back().unscored = true;
      for (size_t i = 0; i < scores.logprobs.size(); ++i) {
        text.push(spec.prompt[i + 1]);
        echo.push_back(described(scores.logprobs[i], text.last_bytes()));
      }
    }
  } catch (const std::exception& e) {
    for (int s : slots) {
      gen_.reset(s);  // a failure mid-prefill leaves the slot in an unknown state
      finish(s, e.what());
    }
    return false;
  }
  const int64_t room = gen_.model().max_context() - static_cast<int64_t>(spec.prompt.size());
  for (int s : slots) {
    Running& r = running(s);
    r.usage.cached_tokens = reused;
    if (lookup_.draft_model) r.guesses = GuessRate(kDraftModelTrust, kDraftModelWeight);
    for (const TokenLogprobs& t : echo) r.push(JobEvent::of_logprobs(t));
    r.budget = spec.prompt_only ? 0 : spec.max_tokens > 0 ? std::min(spec.max_tokens, room) : room;
    if (r.budget <= 0) finish(s);
  }
  return true;
}

TokenLogprobs Engine::described(const Logprobs& lp, size_t text_bytes) const {
  auto choice = [&](const TokenLogprob& t) {
    return TokenChoice{tok_.token_utf8(t.token), tok_.token_bytes(t.token, true), t.logprob};
  };
  TokenLogprobs out{choice(lp.chosen), {}, false, static_cast<int64_t>(text_bytes)};
  for (const TokenLogprob& t : lp.top) out.top.push_back(choice(t));
  return out;
}

void Engine::step() {
  std::vector<int> slots;
  std::vector<Sampler*> samplers;
  for (size_t s = 0; s < running_.size(); ++s) {
    Running* r = running_[s].get();
    if (!r) continue;
    if (r->job->cancelled()) {  // the client went away: stop before the next token
      r->interrupted = true;
      finish(static_cast<int>(s));
      continue;
    }
    slots.push_back(static_cast<int>(s));
    samplers.push_back(&r->sampler);
  }
  if (slots.empty()) return;
  std::vector<int32_t> ids, draft;
  bool check = false;  // a step of guesses, or a plain one (whose token still tells whether the guess was right)
  const auto t0 = Running::clock::now();
  // a step right after a prefill samples the prefill's logits: it runs nothing and is not timed
  const bool runs = slots.size() == 1 && gen_.pending(slots[0]).has_value();
  double guess_s = 0;  // of this step's time, what guessing took (a draft model's steps)
  try {
    if (slots.size() == 1 && drafts(slots[0], *samplers[0])) {
      Running& r = *running_[static_cast<size_t>(slots[0])];
      // prompt lookup guesses for free every step (a plain step's token still tells whether its first guess was
      // right); a draft model guesses as many as pay for their cost (best_draft), and now and then a few anyway
      // (checked: its rate can recover)
      const bool model = lookup_.draft_model != nullptr;
      // a plain step is measured before a second step of guesses: without it the cost stays the prior guess (and a
      // draft model does not guess what would not be checked)
      const bool priced = lookup_.always_check || plain_step_s_ > 0 || drafted_step_s_ == 0;
      // a draft model's round also runs a token or two to catch up: about one guess more, counted with the check
      const double g = model ? guess_cost() : 0;
      int64_t len = lookup_.always_check ? lookup_.max_draft
                                         : best_draft(r.guesses.rate(), lookup_.max_draft, g, check_cost() + g);
      const bool probe = model && priced && len == 0 && ++r.since_guess >= r.reguess;
      if (probe) len = std::min(kProbeGuesses, lookup_.max_draft);
      if (!model || (priced && len > 0)) {
        std::vector<int32_t> context = gen_.cached_tokens(slots[0]);
        context.push_back(*gen_.pending(slots[0]));
        draft = guess(context, model ? len : lookup_.max_draft);
        r.since_guess = 0;
        guess_s = std::chrono::duration<double>(Running::clock::now() - t0).count();
      }
      // guesses made are checked where that pays (their cost is spent)
      const int64_t n = static_cast<int64_t>(draft.size());
      check =
          n > 0 && priced && (lookup_.always_check || probe || best_draft(r.guesses.rate(), n, 0, check_cost()) > 0);
    }
    ids = check ? gen_.next_drafted(draft, lookup_.max_draft + 1, slots[0]) : gen_.next_batch(slots, samplers);
  } catch (const std::exception& e) {
    for (int s : slots) {
      gen_.reset(s);
      finish(s, e.what());
    }
    return;
  }
  const double seconds = std::chrono::duration<double>(Running::clock::now() - t0).count() - guess_s;
  if (runs) {
    if (check)
      average(drafted_step_s_, seconds, plain_step_s_ > 0 ? plain_step_s_ * check_cost() : seconds);
    else
      average(plain_step_s_, seconds, seconds);
  }
  if (!draft.empty()) {
    Running& r = *running_[static_cast<size_t>(slots[0])];
    const int64_t accepted = static_cast<int64_t>(ids.size()) - 1;  // guesses right up to the first wrong one
    for (int64_t i = 0; i < (check ? std::min<int64_t>(accepted + 1, static_cast<int64_t>(draft.size())) : 1); ++i)
      r.guesses.observe(draft[i] == ids[i]);
    if (check) {
      r.drafted += static_cast<int64_t>(draft.size());
      r.accepted += accepted;
      r.reguess = accepted == static_cast<int64_t>(draft.size()) ? kReguess : std::min(2 * r.reguess, kReguessAtMost);
    }
  }
  if (check) {  // one job: its confirmed guesses and the token after them
    for (int32_t id : ids)
      if (!emit(slots[0], id)) break;
    return;
  }
  for (size_t i = 0; i < slots.size(); ++i) emit(slots[i], ids[i]);
}

std::vector<int32_t> Engine::guess(const std::vector<int32_t>& context, int64_t len) {
  if (!lookup_.draft_model) return lookup_draft(context, lookup_.ngram, len);
  Generator& d = *lookup_.draft_model;
  // what it already holds of the context is reused: only the new tokens run (catching up, not timed as guessing:
  // drafting every step it is a token or two, after plain steps as many as they made)
  d.follow(context, d.model().decode_rows());
  const auto t0 = Running::clock::now();
  Sampler greedy(SamplingParams{});
  std::vector<int32_t> out{*d.pending()};
  while (static_cast<int64_t>(out.size()) < len && d.position() < d.model().max_context())
    out.push_back(d.next(greedy));
  if (out.size() > 1) {
    const double per_guess =
        std::chrono::duration<double>(Running::clock::now() - t0).count() / static_cast<double>(out.size() - 1);
    average(guess_s_, per_guess, per_guess);
  }
  return out;
}

double Engine::check_cost() const {
  // before both are measured: half a step per row, about what 8 rows cost on a 2-core CPU
  if (plain_step_s_ > 0 && drafted_step_s_ > 0) return drafted_step_s_ / plain_step_s_;
  return static_cast<double>(lookup_.max_draft + 1) / 2;
}

double Engine::guess_cost() const {
  // before a guess is timed: free (the first guesses are what times them)
  return plain_step_s_ > 0 ? guess_s_ / plain_step_s_ : 0;
}

bool Engine::drafts(int slot, const Sampler& s) const {
  if ((lookup_.ngram <= 0 && !lookup_.draft_model) || s.needs_logits() || !gen_.model().can_rewind() ||
      !gen_.pending(slot))
    return false;
  return gen_.position(slot) + lookup_.max_draft + 1 <= gen_.model().max_context();
}

bool Engine::emit(int slot, int32_t id) {
  Running& r = *running_[static_cast<size_t>(slot)];
  if (r.usage.completion_tokens == 0) r.t_first = Running::clock::now();
  if (tok_.is_end_of_generation(id)) {
    r.finish = "stop";
    finish(slot);
    return false;
  }
  ++r.usage.completion_tokens;
  std::string text = r.dec.push(id);
  if (const auto& lp = r.sampler.last_logprobs()) r.push(JobEvent::of_logprobs(described(*lp, r.dec.last_bytes())));
  r.send(r.parser.feed(std::move(text)));
  if (r.parser.stopped()) {
    r.finish = "stop";
    finish(slot);
    return false;
  }
  if (r.usage.completion_tokens >= r.budget) {
    finish(slot);
    return false;
  }
  return true;
}

// Flushes what the decoder and parser hold, logs the request, counts it in /metrics and frees the slot, then sends
// the last event: a client that reads /metrics once its reply is complete sees the request counted.
void Engine::finish(int slot, const std::string& error) {
  std::unique_ptr<Running> owned = std::move(running_[static_cast<size_t>(slot)]);
  Running& r = *owned;
  if (error.empty() && !r.interrupted) {
    if (!r.parser.stopped()) r.send(r.parser.feed(r.dec.finish()));
    r.send(r.parser.finish());
    if (r.finish == "stop" && r.parser.tool_calls() > 0) r.finish = "tool_calls";
  }
  using secs = std::chrono::duration<double>;
  const auto now = Running::clock::now();
  const bool started = r.usage.completion_tokens > 0;
  const double total = secs(now - r.t0).count(), prefill = started ? secs(r.t_first - r.t0).count() : total;
  const int64_t fresh = r.usage.prompt_tokens - r.usage.cached_tokens;
  std::string how = r.interrupted ? "interrupted" : !error.empty() ? "failed: " + error : "finish " + r.finish;
  if (r.drafted > 0)
    how = "drafted " + std::to_string(r.drafted) + ", accepted " + std::to_string(r.accepted) + ", " + how;
  if (const constrain::Constraint* c = r.sampler.constraint())
    how = "constrained (masks " +
          std::to_string(c->mask_seconds() * 1e3 / std::max<int64_t>(1, r.usage.completion_tokens)).substr(0, 5) +
          " ms/token), " + how;
  std::fprintf(
      stderr,
      "tg-llm: request %llu %s (slot %d): cached %lld, new %lld, prefill %.1f tok/s, decode %.1f tok/s, %lld tokens, "
      "%.2f s total, %s\n",
      static_cast<unsigned long long>(r.job->id()), r.job->spec().kind.c_str(), slot,
      static_cast<long long>(r.usage.cached_tokens), static_cast<long long>(fresh), fresh / std::max(prefill, 1e-9),
      r.usage.completion_tokens > 1 ? (r.usage.completion_tokens - 1) / std::max(secs(now - r.t_first).count(), 1e-9)
                                    : 0.0,
      static_cast<long long>(r.usage.completion_tokens), total, how.c_str());
  {
    std::lock_guard<std::mutex> l(mu_);
    --n_running_;
    ++totals_.requests;
    totals_.interrupted += r.interrupted;
    totals_.failed += !error.empty();
    totals_.prompt_tokens += static_cast<uint64_t>(r.usage.prompt_tokens);
    totals_.cached_tokens += static_cast<uint64_t>(r.usage.cached_tokens);
    totals_.generated_tokens += static_cast<uint64_t>(r.usage.completion_tokens);
    totals_.drafted_tokens += static_cast<uint64_t>(r.drafted);
    totals_.accepted_tokens += static_cast<uint64_t>(r.accepted);
  }
  if (error.empty())
    r.push(JobEvent::done(r.finish, r.usage, r.parser.stop_string()));
  else
    r.push(JobEvent::failed(error, r.usage));
}

}  // namespace tg::llm::server
