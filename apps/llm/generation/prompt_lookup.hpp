// Draft-free speculative decoding's guesses (prompt lookup, as llama.cpp's lookup decoding): text that repeats
// what the context already holds (a code file returned with one line changed, a quoted document) is guessed by
// finding the context's last n tokens earlier in it and copying what followed them there.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tg::llm {

// Up to max_draft tokens guessed to follow `context`: after the latest earlier occurrence of its last m tokens,
// for the largest m <= ngram that occurs (none: empty). Where the copy reaches the context's end it goes on
// through what it copied (the match repeats with the period it has).
std::vector<int32_t> lookup_draft(std::span<const int32_t> context, int64_t ngram, int64_t max_draft);

// How many guesses to check, where checking pays: k guesses cost k * guess_cost to make (a draft model's steps;
// prompt lookup's are free) plus one step of guesses of check_cost, both in plain steps (measured), and yield the
// tokens up to the first wrong guess plus one: (1 - rate^(k + 1)) / (1 - rate) on average, with each guess right at
// `rate` (seen so far). The k in [1, max_len] with the most tokens per plain step's cost, or 0 where none beats a
// plain step's one. Text that repeats its context (a file returned with a line changed) has rates near 0.9 and
// gains; other text (~0.1) would lose several times its speed; a draft model costing half the target per guess
// pays only at rates near 1.
int64_t best_draft(double rate, int64_t max_len, double guess_cost, double check_cost);

// What a generation has shown of its guesses: a running rate of right ones, each guess checked either by a step
// of guesses (accepted up to the first wrong one) or for free against the token a plain step produced.
// `weight`: how much one guess moves the rate (0.1: about the last ten guesses).
class GuessRate {
 public:
  explicit GuessRate(double initial = 0.5, double weight = 0.1) : rate_(initial), weight_(weight) {}
  void observe(bool right) { rate_ += weight_ * ((right ? 1.0 : 0.0) - rate_); }
  double rate() const { return rate_; }

 private:
  double rate_, weight_;
};

}  // namespace tg::llm
