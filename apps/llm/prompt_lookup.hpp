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

// Whether checking guesses pays: a step of guesses costs `cost` plain steps (measured), and yields the tokens up to
// the first wrong guess plus one; with each guess right at `rate` (seen so far), a draft of len guesses yields
// (1 - rate^(len + 1)) / (1 - rate) tokens on average. Text that repeats its context (a file returned with a line
// changed) has rates near 0.9 and gains; other text (~0.1) would lose several times its speed.
bool worth_checking(double rate, int64_t len, double cost);

// What a generation has shown of its guesses: a running rate of right ones, each guess checked either by a step
// of guesses (accepted up to the first wrong one) or for free against the token a plain step produced.
class GuessRate {
 public:
  explicit GuessRate(double initial = 0.5) : rate_(initial) {}
  void observe(bool right) { rate_ += kWeight * ((right ? 1.0 : 0.0) - rate_); }
  double rate() const { return rate_; }

 private:
  static constexpr double kWeight = 0.1;  // about the last ten guesses
  double rate_;
};

}  // namespace tg::llm
