// Symbolic simplification of integer (index) expressions and constant folding.
#pragma once

#include "ir/pattern_matcher.hpp"

namespace tg::ir {

// Constant folding, identities, bounds-based folding, sum canonicalization and div/mod folding.
const PatternMatcher& pm_symbolic();

// graph_rewrite(u, pm_symbolic())
UOpPtr simplify(const UOpPtr& u);

}  // namespace tg::ir
