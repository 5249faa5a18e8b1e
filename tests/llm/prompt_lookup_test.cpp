// Prompt lookup's guesses against hand-worked contexts: the longest n-gram wins, the latest occurrence wins, the
// copy goes on through itself past the context's end, and nothing is guessed without a match.
#include "prompt_lookup.hpp"

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

}  // namespace
}  // namespace tg::llm
