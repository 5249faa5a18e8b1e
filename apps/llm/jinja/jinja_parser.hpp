// Jinja parser: tokens to a statement tree, with jinja2's operator precedence.
#pragma once

#include <vector>

#include "jinja/jinja_ast.hpp"
#include "jinja/jinja_lexer.hpp"

namespace tg::llm::jinja {

// Nesting of expressions and blocks is capped so a hostile template cannot overflow the parser's stack.
inline constexpr int kMaxParseDepth = 100;

// Throws tg::Error "chat template:LINE:COL: ..." naming what was expected.
Body parse(const std::vector<Token>& tokens);

}  // namespace tg::llm::jinja
