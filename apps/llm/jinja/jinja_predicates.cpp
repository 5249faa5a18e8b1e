// Jinja tests, as jinja2 defines them. Note Python's view of types: a bool is an integer and a number,
// a string is iterable and a sequence, a dict is iterable and a mapping but not a sequence.
#include "jinja/jinja_predicates.hpp"

#include <cmath>
#include <map>

namespace tg::llm::jinja {

namespace {

using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& operand(const CallArgs& a, const char* test) {
  const Value* v = a.get(0, "other");
  if (v == nullptr) v = a.get(0, "value");
  if (v == nullptr) fail(std::string("test '") + test + "' expects an argument");
  return *v;
}

bool is_lower_text(const std::string& s, bool upper) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (upper) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (!upper) return false;
      cased = true;
    }
  }
  return cased;
}

bool ordered(const Value& a, const Value& b) {
  if (a.is_undefined()) fail(a.undefined_message());
  if (b.is_undefined()) fail(b.undefined_message());
  return value_less(a, b);
}

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Int; }},
      {"float", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Float; }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Dict; }},
      {"iterable",
       [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"sequence",
       [](const Value& v, const CallArgs&) {
         return v.is_string() || v.is_list() || v.kind() == Value::Kind::Dict || v.is_undefined();
       }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_function(); }},
      {"odd",
       [](const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'odd' expects an integer, not " + v.type_name());
         return v.as_int() % 2 != 0;
       }},
      {"even",
       [](const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'even' expects an integer, not " + v.type_name());
         return v.as_int() % 2 == 0;
       }},
      {"divisibleby",
       [](const Value& v, const CallArgs& a) {
         const Value& n = operand(a, "divisibleby");
         if (!v.is_number() || !n.is_number()) fail("test 'divisibleby' expects numbers");
         if (n.as_float() == 0) fail("integer division or modulo by zero");
         if (v.is_int() && n.is_int()) return n.as_int() == -1 || v.as_int() % n.as_int() == 0;  // INT64_MIN % -1 traps
         return std::fmod(v.as_float(), n.as_float()) == 0;
       }},
      {"lower", [](const Value& v, const CallArgs&) { return v.is_string() && is_lower_text(v.as_string(), false); }},
      {"upper", [](const Value& v, const CallArgs&) { return v.is_string() && is_lower_text(v.as_string(), true); }},
      {"in", [](const Value& v, const CallArgs& a) { return value_contains(operand(a, "in"), v); }},
      {"eq", [](const Value& v, const CallArgs& a) { return values_equal(v, operand(a, "eq")); }},
      {"equalto", [](const Value& v, const CallArgs& a) { return values_equal(v, operand(a, "equalto")); }},
      {"==", [](const Value& v, const CallArgs& a) { return values_equal(v, operand(a, "==")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !values_equal(v, operand(a, "ne")); }},
      {"!=", [](const Value& v, const CallArgs& a) { return !values_equal(v, operand(a, "!=")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return ordered(v, operand(a, "lt")); }},
      {"lessthan", [](const Value& v, const CallArgs& a) { return ordered(v, operand(a, "lessthan")); }},
      {"<", [](const Value& v, const CallArgs& a) { return ordered(v, operand(a, "<")); }},
      {"gt", [](const Value& v, const CallArgs& a) { return ordered(operand(a, "gt"), v); }},
      {"greaterthan", [](const Value& v, const CallArgs& a) { return ordered(operand(a, "greaterthan"), v); }},
      {">", [](const Value& v, const CallArgs& a) { return ordered(operand(a, ">"), v); }},
      {"le", [](const Value& v, const CallArgs& a) { return !ordered(operand(a, "le"), v); }},
      {"<=", [](const Value& v, const CallArgs& a) { return !ordered(operand(a, "<="), v); }},
      {"ge", [](const Value& v, const CallArgs& a) { return !ordered(v, operand(a, "ge")); }},
      {">=", [](const Value& v, const CallArgs& a) { return !ordered(v, operand(a, ">=")); }},
      {"sameas",
       [](const Value& v, const CallArgs& a) {
         // Python identity: only singletons (None, True, False) can be compared meaningfully here.
         const Value& o = operand(a, "sameas");
         if (v.is_none() || o.is_none()) return v.is_none() && o.is_none();
         if (v.is_bool() || o.is_bool()) return v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool();
         return v.is_dict() && o.is_dict() && &v.as_dict() == &o.as_dict();
       }},
  };
  return table;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(const std::string& name, const Value& input, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) fail("no test named '" + name + "'");
  return it->second(input, args);
}

}  // namespace tg::llm::jinja
