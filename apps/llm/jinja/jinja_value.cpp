// jinja::Value: construction from JSON, truthiness, equality, ordering and attribute/item lookup.
#include "jinja/jinja_value.hpp"

#include <algorithm>
#include <functional>

#include "jinja/jinja_unicode.hpp"

namespace tg::llm::jinja {

void fail(const std::string& msg) { throw ValueError(msg); }

// A scan of 8 keys costs about one step.
const Value* Dict::find(const std::string& key) const {
  count_work(static_cast<int64_t>(items.size() / 8));
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Dict::find(const std::string& key) {
  count_work(static_cast<int64_t>(items.size() / 8));
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  if (Value* slot = find(key)) {
    *slot = std::move(v);
    return;
  }
  items.emplace_back(key, std::move(v));
}

const Value* CallArgs::get(size_t index, const std::string& name) const {
  if (index < pos.size()) return &pos[index];
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

static int nested_depth(int child_depth) {
  if (child_depth + 1 > Value::kMaxDepth)
    fail("containers nested deeper than " + std::to_string(Value::kMaxDepth) + " levels");
  return child_depth + 1;
}

// Items are each at most kMaxSize, and a vector holds far fewer than 2^37 of them, so the sum cannot overflow.
static int64_t checked_size(int64_t size) {
  if (size > Value::kMaxSize)
    fail("value larger than " + std::to_string(Value::kMaxSize >> 20) + " MiB (items counted with repeats)");
  return size;
}

void check_text_size(size_t bytes) {
  if (bytes > static_cast<size_t>(Value::kMaxSize))
    fail("string longer than " + std::to_string(Value::kMaxSize >> 20) + " MiB");
}

void Value::check_string_size() const { check_text_size(s_.size()); }

Value::Value(List l, bool tuple) : kind_(Kind::List), tuple_(tuple) {
  int d = 0;
  int64_t size = kItemBytes;
  for (const Value& v : l) {
    d = std::max(d, v.depth_);
    size += v.size();
  }
  depth_ = nested_depth(d);
  size_ = checked_size(size);
  list_ = std::make_shared<List>(std::move(l));
}

Value::Value(Dict dict) : kind_(Kind::Dict) {
  int d = 0;
  int64_t size = kItemBytes;
  for (const auto& kv : dict.items) {
    d = std::max(d, kv.second.depth_);
    size += static_cast<int64_t>(kv.first.size()) + kv.second.size();
  }
  depth_ = nested_depth(d);
  size_ = checked_size(size);
  dict_ = std::make_shared<Dict>(std::move(dict));
}

bool Value::contains_namespace_or_function() const {
  if (kind_ == Kind::Namespace || kind_ == Kind::Function) return true;
  if (kind_ == Kind::List)
    return std::any_of(list_->begin(), list_->end(), [](const Value& v) { return v.contains_namespace_or_function(); });
  if (kind_ == Kind::Dict)
    return std::any_of(dict_->items.begin(), dict_->items.end(),
                       [](const auto& kv) { return kv.second.contains_namespace_or_function(); });
  return false;
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

// The depth is checked on the way down: the constructors would refuse too deep a value only after the
// recursion, which a deeply nested JSON document would already have taken past the end of the stack.
Value Value::from_json_at(const nlohmann::ordered_json& j, int depth) {
  if ((j.is_array() || j.is_object()) && depth >= kMaxDepth)
    fail("containers nested deeper than " + std::to_string(kMaxDepth) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
    case nlohmann::ordered_json::value_t::discarded: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::binary: fail("binary JSON values are not supported in chat templates");
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(from_json_at(e, depth + 1));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      // JSON object keys are unique already, so append without the duplicate check of Dict::set.
      for (const auto& [k, v] : j.items()) d.items.emplace_back(k, from_json_at(v, depth + 1));
      return Value(std::move(d));
    }
  }
  return none();
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind_) {
    case Kind::None: return nullptr;
    case Kind::Bool: return as_bool();
    case Kind::Int: return i_;
    case Kind::Float: return f_;
    case Kind::String: return s_;
    case Kind::List: {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const Value& v : *list_) a.push_back(v.to_json());
      return a;
    }
    case Kind::Dict: {
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (const auto& [k, v] : dict_->items) o[k] = v.to_json();
      return o;
    }
    case Kind::Undefined:
    case Kind::Namespace:
    case Kind::Function: break;
  }
  fail("object of type " + type_name() + " is not JSON serializable");
}

std::string Value::undefined_message() const { return s_.empty() ? "value is undefined" : s_; }

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool:
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Namespace:
    case Kind::Function: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return tuple_ ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Function: return "function";
  }
  return "object";
}

List Value::iterate() const {
  switch (kind_) {
    case Kind::Undefined: return {};
    case Kind::List: count_work(static_cast<int64_t>(list_->size())); return *list_;
    case Kind::Dict:
    case Kind::Namespace: {
      count_work(static_cast<int64_t>(dict_->items.size()));
      List keys;
      keys.reserve(dict_->items.size());
      for (const auto& kv : dict_->items) keys.emplace_back(kv.first);
      return keys;
    }
    case Kind::String: {
      // One value per character: refused before building a list that would break the size limit.
      int64_t n = code_point_count(s_);
      if (n > kMaxSize / kItemBytes)
        fail("cannot iterate over a string of " + std::to_string(n) + " characters (a list of more than " +
             std::to_string(kMaxSize / kItemBytes) + " items)");
      count_work(n);
      List chars;
      std::vector<size_t> offsets = code_point_offsets(s_);
      for (size_t i = 0; i + 1 < offsets.size(); ++i)
        chars.emplace_back(s_.substr(offsets[i], offsets[i + 1] - offsets[i]));
      return chars;
    }
    case Kind::None:
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
    case Kind::Function: break;
  }
  fail("'" + type_name() + "' object is not iterable");
}

int64_t Value::length() const {
  switch (kind_) {
    case Kind::Undefined: return 0;
    case Kind::String: return code_point_count(s_);
    case Kind::List: return static_cast<int64_t>(list_->size());
    case Kind::Dict:
    case Kind::Namespace: return static_cast<int64_t>(dict_->items.size());
    case Kind::None:
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
    case Kind::Function: break;
  }
  fail("object of type '" + type_name() + "' has no len()");
}

bool values_equal(const Value& a, const Value& b) {
  count_work(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const List &x = a.as_list(), &y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const Dict &x = a.as_dict(), &y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find(k);
        if (w == nullptr || !values_equal(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::Namespace: return &a.as_dict() == &b.as_dict();
    case Value::Kind::Function: return &a.as_function() == &b.as_function();
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float: break;  // handled by the numeric case above
  }
  return false;
}

bool value_less(const Value& a, const Value& b) {
  count_work(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
    return a.as_float() < b.as_float();
  }
  // UTF-8 byte order is code point order, which is how Python orders str.
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return value_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool value_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
      return find_text(container.as_string(), item.as_string()) != std::string::npos;
    case Value::Kind::List: {
      const List& l = container.as_list();
      count_work(static_cast<int64_t>(l.size()));
      return std::any_of(l.begin(), l.end(), [&](const Value& v) { return values_equal(v, item); });
    }
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Value::Kind::None:
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float:
    case Value::Kind::Function: break;
  }
  fail("argument of type '" + container.type_name() + "' is not iterable");
}

size_t value_hash(const Value& v) {
  count_work(1);
  auto mix = [](size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); };
  switch (v.kind()) {
    case Value::Kind::Undefined: return 1;
    case Value::Kind::None: return 2;
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float: return std::hash<double>{}(v.as_float());  // 1, 1.0 and True are equal
    case Value::Kind::String: return std::hash<std::string>{}(v.as_string());
    case Value::Kind::List: {
      size_t h = v.is_tuple() ? 3 : 4;
      for (const Value& x : v.as_list()) h = mix(h, value_hash(x));
      return h;
    }
    case Value::Kind::Dict: {
      size_t h = 5;  // order-independent, as dict equality is
      for (const auto& [k, x] : v.as_dict().items) h += mix(std::hash<std::string>{}(k), value_hash(x));
      return h;
    }
    case Value::Kind::Namespace: return std::hash<const void*>{}(&v.as_dict());
    case Value::Kind::Function: return std::hash<const void*>{}(&v.as_function());
  }
  return 0;
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail(obj.undefined_message());
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail(obj.undefined_message());
  if (key.is_string() && obj.is_dict()) return get_attr(obj, key.as_string());
  if (key.is_int() && (obj.is_list() || obj.is_string())) {
    int64_t n = obj.length(), i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.as_list()[static_cast<size_t>(i)];
      size_t at = code_point_offset(obj.as_string(), i), len = 0;  // no table of every offset for one character
      decode_code_point(obj.as_string(), at, len);
      return Value(obj.as_string().substr(at, len));
    }
    return Value::undefined("'" + obj.type_name() + " object' has no element " + std::to_string(key.as_int()));
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute or element of that key");
}

}  // namespace tg::llm::jinja
