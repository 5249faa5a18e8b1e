// How Python prints values: str() for template output, repr() inside containers, json.dumps for tojson.
#pragma once

#include <optional>
#include <string>

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

std::string py_str(const Value& v);   // what {{ v }} prints: undefined is "", None is "None", True is "True"
std::string py_repr(const Value& v);  // 'text' quoted, as inside a printed list
std::string py_float_repr(double f);  // shortest round-trip digits in Python's layout: 1.0, 1e-05, 1e+16

// json.dumps(v, ensure_ascii=False, indent=indent, separators=separators) as transformers' tojson calls it:
// non-ASCII kept, no HTML escaping, keys in insertion order.
struct JsonDumpOptions {
  std::optional<std::string> indent;  // None: one line; otherwise the per-level indent text
  std::optional<std::string> item_separator, key_separator;
  bool sort_keys = false;
};
std::string py_json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace tg::llm::jinja
