// Python methods templates call on values: str.strip/split/startswith/..., dict.get/items/keys/values.
#pragma once

#include <optional>
#include <string>

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

// obj.name(args), or nullopt when `obj` has no such method (the caller then looks for an attribute).
std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args);

}  // namespace tg::llm::jinja
