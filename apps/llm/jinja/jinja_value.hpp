// jinja::Value: the dynamically typed value a chat template computes with, modelled on Python's objects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tg/error.hpp"

namespace tg::llm::jinja {

class Value;
using List = std::vector<Value>;

// Insertion-ordered string-keyed map (Python dicts keep insertion order, and tojson must too).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  void set(const std::string& key, Value v);
};

// Arguments of a call: positional, then keyword, as written.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument at `index` or named `name`, or nullptr when neither was passed.
  const Value* get(size_t index, const std::string& name) const;
};

// A native function or a template macro. Errors it throws are positioned at the call by the interpreter.
struct Function {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

// Work done by the value operations that walk containers or strings (compare, print, iterate, look up), in
// values visited. The interpreter turns it into steps of its budget, so one expression cannot hide unbounded
// work; thread_local, so renders on different threads count apart.
inline thread_local int64_t value_work = 0;
inline void count_work(int64_t n) { value_work += n; }

// An error raised while computing a value; the interpreter adds the template's line:column.
class ValueError : public tg::Error {
 public:
  explicit ValueError(const std::string& msg) : tg::Error(msg) {}
};
[[noreturn]] void fail(const std::string& msg);
// Fails when a string being built would grow past Value::kMaxSize bytes: builders whose output can be
// many times their input (replace, join, indent, printf-style formats) check before they append.
void check_text_size(size_t bytes);

class Value {
 public:
  // Namespace is a Dict that `set ns.x = ...` may mutate; every other container is immutable once built
  // (transformers renders in an ImmutableSandboxedEnvironment), so copies share storage.
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value() = default;  // undefined
  static Value undefined(std::string hint) {
    Value v;
    v.s_ = std::move(hint);
    return v;
  }
  static Value none() { return Value(Kind::None); }
  Value(bool b) : kind_(Kind::Bool), i_(b) {}
  Value(int i) : kind_(Kind::Int), i_(i) {}
  Value(int64_t i) : kind_(Kind::Int), i_(i) {}
  Value(double f) : kind_(Kind::Float), f_(f) {}
  Value(std::string s) : kind_(Kind::String), s_(std::move(s)) { check_string_size(); }
  Value(const char* s) : kind_(Kind::String), s_(s) { check_string_size(); }
  Value(List l, bool tuple = false);
  Value(Dict d);
  static Value namespace_(Dict d) {
    Value v(std::move(d));
    v.kind_ = Kind::Namespace;
    return v;
  }
  Value(std::shared_ptr<Function> f) : kind_(Kind::Function), fn_(std::move(f)) {}

  static Value from_json(const nlohmann::ordered_json& j);
  nlohmann::ordered_json to_json() const;  // throws for undefined, functions and namespaces

  // Containers nest at most this deep, so printing, comparing and destroying them cannot overflow the stack.
  static constexpr int kMaxDepth = 200;
  // A value's size counts its items with repeats (a list holding one list twice pays for it twice) and a string's
  // bytes; none may exceed this, so printing, comparing or copying one is bounded work and memory however the
  // template shares storage ([a, a] doubling). 64 MiB is the rendered-text limit too, far above any prompt.
  static constexpr int64_t kMaxSize = int64_t{64} << 20;
  static constexpr int64_t kItemBytes = 64;  // what one value costs in a size, besides its string bytes

  Kind kind() const { return kind_; }
  int depth() const { return depth_; }
  // A namespace's size is fixed when it is made: `set ns.x` cannot grow it without bound, since the value
  // assigned is itself bounded and cannot hold a namespace.
  int64_t size() const { return kind_ == Kind::String ? kItemBytes + static_cast<int64_t>(s_.size()) : size_; }
  bool contains_namespace_or_function() const;  // a namespace may not hold these: they could form a cycle
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int || kind_ == Kind::Bool; }  // Python: bool is an int
  bool is_number() const { return is_int() || kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }
  bool is_dict() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
  bool is_function() const { return kind_ == Kind::Function; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_float() const { return kind_ == Kind::Float ? f_ : static_cast<double>(i_); }
  const std::string& as_string() const { return s_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& mutable_namespace() const { return *dict_; }
  const Function& as_function() const { return *fn_; }
  // For an undefined value: what was missing, as jinja2 words it ("'x' is undefined").
  std::string undefined_message() const;

  bool truthy() const;
  std::string type_name() const;  // Python's: "str", "dict", "NoneType", ...
  // The items a for loop visits: list elements, dict keys, string characters; undefined is empty.
  List iterate() const;
  int64_t length() const;  // len(): code points of a string, items of a container

 private:
  explicit Value(Kind k) : kind_(k) {}
  static Value from_json_at(const nlohmann::ordered_json& j, int depth);
  void check_string_size() const;
  Kind kind_ = Kind::Undefined;
  bool tuple_ = false;
  int depth_ = 0;
  int64_t size_ = kItemBytes;  // containers: see size()
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;  // string value, or an undefined value's hint
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// Python semantics of ==, < and `in` on values (numbers across int/float/bool, containers elementwise).
bool values_equal(const Value& a, const Value& b);
bool value_less(const Value& a, const Value& b);  // throws ValueError for unorderable types
bool value_contains(const Value& container, const Value& item);
size_t value_hash(const Value& v);  // equal values (as values_equal says) hash equal

// obj.attr and obj[key] as jinja2 resolves them: a missing entry is an undefined value, not an error.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);

}  // namespace tg::llm::jinja
