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

struct SchemaNode;
using Node = std::shared_ptr<const SchemaNode>;

struct SchemaNode {
  enum class Kind { any, object, array, string, number, integer, boolean, null, literals, any_of } kind = Kind::any;
  // object: properties in schema order, whether each is required, and whether other keys may appear (any value)
  std::vector<std::pair<std::string, Node>> properties;
  std::vector<bool> required;
  std::vector<std::string> quoted_keys;  // each property name as a JSON string, as a key is written
  bool additional = true;
  // array
  Node items;  // null: any values
  int64_t min_items = 0, max_items = -1;
  // string: length in characters (code points)
  int64_t min_length = 0, max_length = -1;
  // literals (enum, const, and true / false / null): each value's compact JSON text
  std::vector<std::string> literals;
  // any_of (also a "type" list)
  std::vector<Node> options;
};

// Supported (at most 64 properties an object, 64 values an enum): type (one or a list), properties, required,
// additionalProperties (false or true), items,
// minItems, maxItems, minLength, maxLength, enum, const, anyOf, oneOf (as anyOf), $ref to #/$defs or #/definitions,
// and the annotations title, description, default, examples, $schema, $id, format (not checked). Throws SchemaError.
Node compile_schema(const nlohmann::ordered_json& schema);  // ordered: properties keep the schema's order
// Any JSON value (response_format json_object asks for an object: any_object()).
Node any_value();
Node any_object();

}  // namespace tg::llm::constrain
