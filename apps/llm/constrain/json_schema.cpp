// Schema keywords to grammar nodes: a table of the keywords each construct reads, every other keyword refused.
#include "constrain/json_schema.hpp"

#include <deque>
#include <map>
#include <set>

#include "constrain/string_pattern.hpp"

namespace tg::llm::constrain {

using json = nlohmann::ordered_json;

namespace {

// Keywords that only describe: accepted and not enforced.
const std::set<std::string> kAnnotations = {"title",  "description", "default", "examples",    "$schema", "$id",
                                            "format", "$comment",    "$defs",   "definitions", "strict"};
const std::set<std::string> kKnown = {"type",      "properties", "required", "additionalProperties",
                                      "items",     "minItems",   "maxItems", "minLength",
                                      "maxLength", "pattern",    "enum",     "const",
                                      "anyOf",     "oneOf",      "$ref"};

// Where a schema's nodes live (json_schema.hpp: Node)
struct Arena {
  std::deque<SchemaNode> nodes;
  std::deque<StringPattern> patterns;
  std::vector<Node> kept;  // other schemas' roots that these nodes point into
  SchemaNode* make() { return &nodes.emplace_back(); }
};

Node root_of(std::shared_ptr<Arena> arena, const SchemaNode* root) { return Node(std::move(arena), root); }

SchemaNode* literals(Arena& arena, const json& values) {
  SchemaNode* n = arena.make();
  n->kind = SchemaNode::Kind::literals;
  if (values.size() > 64) throw SchemaError("an enum of more than 64 values is not supported");
  for (const json& v : values) n->literals.push_back(v.dump());
  return n;
}

class Compiler {
 public:
  Compiler(const json& root, Arena& arena) : root_(root), arena_(arena) {}

  const SchemaNode* compile(const json& s, int depth) {
    if (depth > 64) throw SchemaError("the schema nests deeper than 64 levels (or its $refs loop)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) throw SchemaError("the schema 'false' accepts nothing");
      return any_value().get();
    }
    if (!s.is_object()) throw SchemaError("a schema must be an object or a boolean, not " + s.dump());
    for (const auto& [k, v] : s.items())
      if (!kKnown.count(k) && !kAnnotations.count(k))
        throw SchemaError("the schema keyword '" + k + "' is not supported");
    if (s.contains("$ref")) {  // compiled once: a recursive schema (a tree) points back at its own node
      const std::string ref = s["$ref"].is_string() ? s["$ref"].get<std::string>() : s["$ref"].dump();
      if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
      SchemaNode* n = arena_.make();
      refs_[ref] = n;
      *n = *compile(resolve(s["$ref"]), depth + 1);
      return n;
    }
    if (s.contains("const")) return literals(arena_, json::array({s["const"]}));
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) throw SchemaError("'enum' must be a non-empty list");
      return literals(arena_, s["enum"]);
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        if (!s[key].is_array() || s[key].empty())
          throw SchemaError(std::string("'") + key + "' must be a non-empty list");
        SchemaNode* n = arena_.make();
        n->kind = SchemaNode::Kind::any_of;
        for (const json& o : s[key]) n->options.push_back(compile(o, depth + 1));
        return n;
      }
    if (!s.contains("type")) {
      if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
        return typed(s, "object", depth);
      if (s.contains("items")) return typed(s, "array", depth);
      if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) return typed(s, "string", depth);
      return any_value().get();
    }
    const json& t = s["type"];
    if (t.is_string()) return typed(s, t.get<std::string>(), depth);
    if (!t.is_array() || t.empty()) throw SchemaError("'type' must be a type name or a non-empty list of them");
    SchemaNode* n = arena_.make();
    n->kind = SchemaNode::Kind::any_of;
    for (const json& name : t) {
      if (!name.is_string()) throw SchemaError("'type' lists names: " + t.dump());
      n->options.push_back(typed(s, name.get<std::string>(), depth));
    }
    return n;
  }

 private:
  const json& resolve(const json& ref) {
    if (!ref.is_string()) throw SchemaError("'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (r.rfind(p, 0) == 0) {
        const std::string group = p.substr(2, p.size() - 3), name = r.substr(p.size());
        if (root_.contains(group) && root_[group].is_object() && root_[group].contains(name)) return root_[group][name];
        throw SchemaError("'$ref' " + r + " names no definition");
      }
    }
    if (r == "#") return root_;
    throw SchemaError("'$ref' " + r + " is not supported: only #, #/$defs/NAME and #/definitions/NAME");
  }

  static int64_t count(const json& s, const char* key, int64_t def) {
    if (!s.contains(key)) return def;
    if (!s[key].is_number_integer() || s[key].get<int64_t>() < 0)
      throw SchemaError(std::string("'") + key + "' must be a non-negative integer");
    return s[key].get<int64_t>();
  }

  const SchemaNode* typed(const json& s, const std::string& type, int depth) {
    SchemaNode* n = arena_.make();
    if (type == "object") {
      n->kind = SchemaNode::Kind::object;
      if (s.contains("properties")) {
        if (!s["properties"].is_object()) throw SchemaError("'properties' must be an object");
        for (const auto& [name, sub] : s["properties"].items())
          n->properties.push_back({name, compile(sub, depth + 1)});
      }
      if (n->properties.size() > 64)
        throw SchemaError("an object schema with more than 64 properties is not supported");
      for (const auto& [name, sub] : n->properties) n->quoted_keys.push_back(json(name).dump());
      n->required.assign(n->properties.size(), false);
      if (s.contains("required")) {
        if (!s["required"].is_array()) throw SchemaError("'required' must be a list of property names");
        for (const json& r : s["required"]) {
          size_t i = 0;
          while (i < n->properties.size() && (!r.is_string() || n->properties[i].first != r.get<std::string>())) ++i;
          if (i == n->properties.size())
            throw SchemaError("'required' names " + r.dump() + ", which 'properties' does not define");
          n->required[i] = true;
        }
      }
      // other keys only where the schema asks for them (additionalProperties true), as llama.cpp's grammars do:
      // a reply without them still validates, and small models otherwise wander through invented keys
      n->additional = false;
      if (s.contains("additionalProperties")) {
        const json& a = s["additionalProperties"];
        if (a.is_boolean()) {
          n->additional = a.get<bool>();
        } else if (a.is_object() && a.empty()) {
          n->additional = true;
        } else {
          throw SchemaError("'additionalProperties' with a schema is not supported: use true or false");
        }
      }
    } else if (type == "array") {
      n->kind = SchemaNode::Kind::array;
      if (s.contains("items")) n->items = compile(s["items"], depth + 1);
      n->min_items = count(s, "minItems", 0);
      n->max_items = count(s, "maxItems", -1);
      if (n->max_items >= 0 && n->max_items < n->min_items) throw SchemaError("'maxItems' is below 'minItems'");
    } else if (type == "string") {
      n->kind = SchemaNode::Kind::string;
      n->min_length = count(s, "minLength", 0);
      n->max_length = count(s, "maxLength", -1);
      if (n->max_length >= 0 && n->max_length < n->min_length) throw SchemaError("'maxLength' is below 'minLength'");
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) throw SchemaError("'pattern' must be a string");
        n->pattern = &arena_.patterns.emplace_back(s["pattern"].get<std::string>());
      }
    } else if (type == "number" || type == "integer") {
      n->kind = type == "number" ? SchemaNode::Kind::number : SchemaNode::Kind::integer;
    } else if (type == "boolean") {
      return literals(arena_, json::array({true, false}));
    } else if (type == "null") {
      return literals(arena_, json::array({nullptr}));
    } else {
      throw SchemaError("the type '" + type + "' is not a JSON Schema type");
    }
    return n;
  }

  const json& root_;
  Arena& arena_;
  std::map<std::string, SchemaNode*> refs_;
};

}  // namespace

Node compile_schema(const json& schema) {
  auto arena = std::make_shared<Arena>();
  const SchemaNode* root = Compiler(schema, *arena).compile(schema, 0);
  return root_of(std::move(arena), root);
}

Node closed_object(const std::vector<std::pair<std::string, Node>>& properties) {
  auto arena = std::make_shared<Arena>();
  SchemaNode* n = arena->make();
  n->kind = SchemaNode::Kind::object;
  n->additional = false;
  for (const auto& [name, sub] : properties) {
    n->properties.push_back({name, sub.get()});
    n->quoted_keys.push_back(json(name).dump());
    n->required.push_back(true);
    arena->kept.push_back(sub);
  }
  return root_of(std::move(arena), n);
}

Node one_of(const std::vector<Node>& options) {
  auto arena = std::make_shared<Arena>();
  SchemaNode* n = arena->make();
  n->kind = SchemaNode::Kind::any_of;
  for (const Node& o : options) n->options.push_back(o.get());
  arena->kept = options;
  return root_of(std::move(arena), n);
}

Node constant(const json& value) {
  auto arena = std::make_shared<Arena>();
  return root_of(arena, literals(*arena, json::array({value})));
}

Node any_value() {
  static const Node n = std::make_shared<SchemaNode>();
  return n;
}

Node any_object() {
  static const Node n = [] {
    auto o = std::make_shared<SchemaNode>();
    o->kind = SchemaNode::Kind::object;
    return o;
  }();
  return n;
}

}  // namespace tg::llm::constrain
