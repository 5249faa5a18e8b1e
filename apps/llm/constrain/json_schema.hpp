// A JSON Schema compiled to the value grammar the constrained decoder follows (json_matcher.hpp): the subset that
// structured outputs and tool arguments use. A keyword outside it is a SchemaError naming it, never ignored.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg::llm::constrain {

struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StringPattern;
struct SchemaNode;
// A compiled schema's root. Its nodes link to each other by plain pointers (a recursive schema is a cycle) and
// live in one arena that the root's shared_ptr keeps alive (the aliasing constructor), so cycles cannot leak.
using Node = std::shared_ptr<const SchemaNode>;

struct SchemaNode {
  enum class Kind { any, object, array, string, number, integer, boolean, null, literals, any_of } kind = Kind::any;
  // object: properties in schema order, whether each is required, and whether other keys may appear (any value)
  std::vector<std::pair<std::string, const SchemaNode*>> properties;
  std::vector<bool> required;
  std::vector<std::string> quoted_keys;  // each property name as a JSON string, as a key is written
  bool additional = true;
  // array
  const SchemaNode* items = nullptr;  // null: any values
  int64_t min_items = 0, max_items = -1;
  // string: length in characters (code points)
  int64_t min_length = 0, max_length = -1;
  const StringPattern* pattern = nullptr;  // null: any characters
  // literals (enum, const, and true / false / null): each value's compact JSON text
  std::vector<std::string> literals;
  // any_of (also a "type" list)
  std::vector<const SchemaNode*> options;
};

// Supported (at most 64 properties an object, 64 values an enum): type (one or a list), properties, required,
// additionalProperties (true or false; left out, false: llama.cpp's grammars generate no other keys either),
// items, minItems, maxItems, minLength, maxLength, pattern (the subset of string_pattern.hpp), enum, const,
// anyOf, oneOf (as anyOf), $ref to #, #/$defs or #/definitions, and the annotations title, description,
// default, examples, $schema, $id, format (not checked). Throws SchemaError.
Node compile_schema(const nlohmann::ordered_json& schema);  // ordered: properties keep the schema's order
// Any JSON value (response_format json_object asks for an object: any_object()).
Node any_value();
Node any_object();
// Schemas built from compiled ones, each keeping its own $refs (a tool's parameters resolve "#" to themselves):
// an object of exactly these properties, all required, in this order; and any one of the options.
Node closed_object(const std::vector<std::pair<std::string, Node>>& properties);
Node one_of(const std::vector<Node>& options);
Node constant(const nlohmann::ordered_json& value);

}  // namespace tg::llm::constrain
