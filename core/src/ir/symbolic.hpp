// Symbolic simplification of integer (index) expressions and constant folding.
#pragma once

#include "ir/pattern_matcher.hpp"

namespace tg::ir {

// Constant folding, identities, bounds-based folding, sum canonicalization and div/mod folding.
const PatternMatcher& pm_symbolic();

// graph_rewrite(u, pm_symbolic())
UOpPtr simplify(const UOpPtr& u);

// substitute(root, map), then the symbolic rules on the nodes the substitution made only: what it left alone stays
// the same node. A lane made from a statement this way does not make anew (and so have emitted twice) the
// statements its values reach through AFTER.
UOpPtr simplify_substituted(const UOpPtr& root, const std::vector<std::pair<const UOp*, UOpPtr>>& map);

}  // namespace tg::ir
