// The one thread that runs the model. HTTP handlers submit jobs into a bounded queue and read each job's events
// from its own channel; a job is cancelled by its handler (client gone) and stops within one token. Each of the
// generator's KV-cache slots runs one job; the running jobs advance together, one batched decode step per token.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "constrain/token_mask.hpp"
#include "generation/generator.hpp"
#include "server/output_parser.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tg::llm::server {

// Constrained decoding: the output is a JSON value of `schema`, between the fixed texts before and after.
struct ConstraintSpec {
  constrain::Node schema;
  std::string before, after;
};

struct JobSpec {
  std::string kind = "chat";  // for the log line
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_tokens = 0;     // 0: until the context is full
  bool score_prompt = false;  // with sampling.logprobs: the prompt's tokens' Logprobs events first (echo)
  bool prompt_only = false;   // stop after the prompt (scoring it: echo with max_tokens 0)
  std::optional<ConstraintSpec> constraint;
  OutputParser::Options output;
  // choices: the prompt is prefilled once and its context copied into n slots (Generator::fork), each choice
  // sampled with seed + its index; every event says its choice, and each choice ends with its own Done
  int n = 1;
};

struct Usage {
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

// A token and its log-probability as a client sees them: its text (Tokenizer::token_utf8) and raw bytes.
struct TokenChoice {
  std::string text, bytes;
  double logprob = 0;
};
// What a sampler that reports logprobs saw for one generated token (sent before the token's Output events).
struct TokenLogprobs {
  TokenChoice chosen;
  std::vector<TokenChoice> top;
  bool unscored = false;   // a prompt's first token: nothing came before it (logprob and top are null)
  int64_t text_bytes = 0;  // the length the token adds to the text (0 for a control token such as BOS)
};

struct JobEvent {
  enum class Kind { Output, Logprobs, Done, Failed } kind;
  OutputEvent output;         // Output
  std::string finish_reason;  // Done: stop, length or tool_calls
  Usage usage;                // Done
  std::string error;          // Failed
  TokenLogprobs logprobs;     // Logprobs
  std::string stop_sequence;  // Done: the stop string that ended the reply, if one did
  int choice = 0;             // which of the job's n choices

  // Named constructors: each kind sets only its own fields (brace-initialising the aggregate with `{}` members
  // trips GCC 12's -Wmaybe-uninitialized at -O3).
  static JobEvent of_output(OutputEvent o) {
    JobEvent e{Kind::Output};
    e.output = std::move(o);
    return e;
  }
  static JobEvent of_logprobs(TokenLogprobs t) {
    JobEvent e{Kind::Logprobs};
    e.logprobs = std::move(t);
    return e;
  }
  static JobEvent done(std::string finish, Usage u = {}, std::string stop = {}) {
    JobEvent e{Kind::Done};
    e.finish_reason = std::move(finish), e.usage = u, e.stop_sequence = std::move(stop);
    return e;
  }
  static JobEvent failed(std::string error, Usage u = {}) {
    JobEvent e{Kind::Failed};
    e.error = std::move(error), e.usage = u;
    return e;
  }
};

class Job {
 public:
  explicit Job(JobSpec spec, uint64_t id) : spec_(std::move(spec)), id_(id) {}
  // The next event, or nothing if none came within `wait`.
  std::optional<JobEvent> next(std::chrono::milliseconds wait);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  uint64_t id() const { return id_; }
  const JobSpec& spec() const { return spec_; }
  void push(JobEvent e);

 private:
  JobSpec spec_;
  uint64_t id_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobEvent> events_;
};

// Speculative decoding: while one greedy job runs, tokens guessed to follow its context are checked in one
// batched step of max_draft + 1 rows, where its guesses have been right often enough to pay for such a step
// (best_draft, with the costs of guessing and of the step measured as the engine runs). The guesses come from a
// smaller model with the same vocabulary (--draft-model: greedy, in its own Generator), or from the context itself
// (prompt lookup, lookup_draft).
struct LookupOptions {
  int64_t ngram = 0;  // prompt lookup's n-gram; 0: off
  int64_t max_draft = 15;
  Generator* draft_model = nullptr;  // one slot; not owned
  bool always_check = false;  // every step checks max_draft guesses, whatever that costs (tests; acceptance rates)
};

struct EngineMetrics {
  uint64_t requests = 0, interrupted = 0, rejected = 0, failed = 0;
  uint64_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
  uint64_t drafted_tokens = 0, accepted_tokens = 0;  // prompt lookup's guesses, and those the model confirmed
  size_t queued = 0, running = 0;
};

struct QueueFull : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Engine {
 public:
  Engine(Generator& gen, Tokenizer tok, size_t max_queued, LookupOptions lookup = {});
  ~Engine();  // stop(), then waits for the worker
  // Throws QueueFull when max_queued jobs are already waiting, or once stopping; std::invalid_argument for more
  // choices than slots.
  std::shared_ptr<Job> submit(JobSpec spec);
  // Cancels the running job and fails the queued ones ("shutting down"); later submits are refused.
  void stop();
  EngineMetrics metrics() const;

 private:
  struct Running;
  void worker();
  // prefill in the first slot, copied to the other choices' slots; false (job failed) on an error
  bool admit(std::shared_ptr<Job> job, const std::vector<int>& slots);
  void step();  // one token for every running job (or several: drafted)
  // Whether `slot`'s job drafts this step: greedy, alone, on a model that rewinds, with room for the rows.
  bool drafts(int slot, const Sampler& s) const;
  double check_cost() const;  // a step of guesses in plain steps, as measured (best_draft)
  double guess_cost() const;  // one guess of a draft model in plain steps, as measured
  std::vector<int32_t> guess(const std::vector<int32_t>& context, int64_t len);  // up to len tokens after `context`
  // id, the next token of `slot`'s job: sent on, or the job finished (end of generation, stop string, budget).
  // Returns whether the job goes on.
  bool emit(int slot, int32_t id);
  void finish(int slot, const std::string& error = {});
  int pick_slot(const std::vector<int32_t>& prompt) const;  // the free slot sharing the longest prefix
  // ids to the texts a client sees; text_bytes: what the token added to the decoded text
  TokenLogprobs described(const Logprobs& lp, size_t text_bytes) const;

  Generator& gen_;
  Tokenizer tok_;
  size_t max_queued_;
  LookupOptions lookup_;
  // running averages of one job's steps (the worker's alone; guessing not included) and of one draft-model guess
  double plain_step_s_ = 0, drafted_step_s_ = 0, guess_s_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Running>> running_;  // per slot; touched only by the worker (counted under mu_)
  size_t n_running_ = 0;
  uint64_t next_id_ = 1;
  EngineMetrics totals_;
  std::shared_ptr<const constrain::TokenTrie> trie_;  // built at the first constrained job
  std::thread thread_;                                // last: starts once the members above exist
};

}  // namespace tg::llm::server
