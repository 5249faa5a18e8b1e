// Prompt lookup's guesses against hand-worked contexts: the longest n-gram wins, the latest occurrence wins, the
// copy goes on through itself past the context's end, and nothing is guessed without a match.
#include "generation/prompt_lookup.hpp"

#include <gtest/gtest.h>

namespace tg::llm {
namespace {

using V = std::vector<int32_t>;

TEST(PromptLookup, CopiesWhatFollowedTheLatestLongestMatch) {
  // last 2 tokens (7 8) occur at 1 and 5; the latest (5) is followed by 4 9 7 8
  EXPECT_EQ(lookup_draft(V{1, 7, 8, 2, 3, 7, 8, 4, 9, 7, 8}, 2, 3), (V{4, 9, 7}));
  // (5 7 8) occurs earlier as a 3-gram at 0: it beats the later 2-gram (7 8) at 5
  EXPECT_EQ(lookup_draft(V{5, 7, 8, 2, 3, 7, 8, 4, 5, 7, 8}, 3, 2), (V{2, 3}));
  // no 3-gram, no 2-gram: the 1-gram (8) at 2
  EXPECT_EQ(lookup_draft(V{1, 2, 8, 6, 4, 3, 8}, 3, 2), (V{6, 4}));
}

TEST(PromptLookup, RepeatsThroughItselfPastTheContextsEnd) {
  // "la le la le": (la le) last seen 2 back, followed by la le and then, through the copy, la le ...
  EXPECT_EQ(lookup_draft(V{0, 1, 2, 1, 2}, 2, 5), (V{1, 2, 1, 2, 1}));
  EXPECT_EQ(lookup_draft(V{4, 4, 4}, 2, 3), (V{4, 4, 4}));
}

TEST(PromptLookup, NothingWithoutAMatch) {
  EXPECT_TRUE(lookup_draft(V{1, 2, 3, 4}, 3, 5).empty());
  EXPECT_TRUE(lookup_draft(V{}, 3, 5).empty());
  EXPECT_TRUE(lookup_draft(V{1}, 3, 5).empty());
  EXPECT_TRUE(lookup_draft(V{1, 1}, 0, 5).empty());  // n-grams of length 0 match nothing
  EXPECT_TRUE(lookup_draft(V{1, 1}, 2, 0).empty());
}

// Expected values from the closed form by hand (k guesses yield sum_{i<=k} rate^i tokens for k*g + c plain steps).
TEST(PromptLookup, BestDraftLength) {
  EXPECT_EQ(best_draft(0.9, 15, 0, 4), 15);     // free guesses: longer only adds; 8.15 tokens for 4 steps
  EXPECT_EQ(best_draft(0.5, 15, 0, 1.2), 15);   // ~2 tokens for 1.2 steps
  EXPECT_EQ(best_draft(0.1, 15, 0, 4), 0);      // at most 1.11 tokens for 4 steps: plain steps win
  EXPECT_EQ(best_draft(0.8, 15, 0.5, 2), 0);    // a draft at half the target's cost: 2.95 tokens for 3.5 steps at best
  EXPECT_EQ(best_draft(0.9, 15, 0.3, 1.5), 7);  // 5.695 tokens for 3.6 steps (6: 5.217 / 3.3, 8: 6.126 / 3.9)
  EXPECT_EQ(best_draft(0.9, 0, 0, 1), 0);
}

}  // namespace
}  // namespace tg::llm
