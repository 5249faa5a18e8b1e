// Jinja tests (`value is name(args)`): defined, none, string, mapping, eq, in, ...
#pragma once

#include <string>

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

bool has_test(const std::string& name);
// Throws ValueError for bad arguments; `name` must satisfy has_test.
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);

}  // namespace tg::llm::jinja
