// Python methods on str, dict and list that chat templates call. The sandbox transformers uses forbids
// mutating methods (list.append, dict.update, ...), so only the read-only ones exist here.
#include "jinja/jinja_methods.hpp"

#include <algorithm>

#include "jinja/jinja_filters.hpp"
#include "jinja/jinja_python_format.hpp"
#include "jinja/jinja_unicode.hpp"

namespace tg::llm::jinja {

namespace {

const std::string& string_arg(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.get(i, name);
  if (v == nullptr) fail(std::string(method) + "() missing argument '" + name + "'");
  if (!v->is_string()) fail(std::string(method) + "() argument must be str, not " + v->type_name());
  return v->as_string();
}

int64_t int_arg(const CallArgs& a, size_t i, const char* name, int64_t dflt) {
  const Value* v = a.get(i, name);
  if (v == nullptr || v->is_none()) return dflt;
  if (!v->is_int()) fail(std::string("'") + v->type_name() + "' object cannot be interpreted as an integer");
  return v->as_int();
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& v) {
    if (!v.is_string())
      fail(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " +
           v.type_name());
    const std::string& a = v.as_string();
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list()) return std::any_of(affix.as_list().begin(), affix.as_list().end(), one);
  return one(affix);
}

// Adds one piece of a split, refusing a list that would break the size limit before it is built.
void add_piece(List& out, std::string piece) {
  if (static_cast<int64_t>(out.size() + 1) * Value::kItemBytes > Value::kMaxSize)
    fail("split into more than " + std::to_string(Value::kMaxSize / Value::kItemBytes) + " pieces");
  count_work(1);
  out.emplace_back(std::move(piece));
}

List split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (sep == nullptr || sep->is_none()) {
    // No separator: split on runs of whitespace and drop empty pieces, as Python does.
    size_t len = 0;
    std::vector<size_t> offsets = code_point_offsets(s);
    size_t i = 0, n = offsets.size() - 1;
    while (true) {
      while (i < n && is_python_space(decode_code_point(s, offsets[i], len))) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        add_piece(out, strip_string(s.substr(offsets[i]), nullptr, false, true));
        break;
      }
      size_t word = i;
      while (i < n && !is_python_space(decode_code_point(s, offsets[i], len))) ++i;
      add_piece(out, s.substr(offsets[word], offsets[i] - offsets[word]));
    }
    return out;
  }
  if (!sep->is_string()) fail("must be str or None, not " + sep->type_name());
  const std::string& d = sep->as_string();
  if (d.empty()) fail("empty separator");
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t hit = find_text(s, d, pos);
    if (hit == std::string::npos) break;
    add_piece(out, s.substr(pos, hit - pos));
    pos = hit + d.size();
  }
  add_piece(out, s.substr(pos));
  return out;
}

// Python's str.title(): a letter is uppercased after an uncased character, lowercased after a cased one.
// Non-ASCII bytes count as cased letters and are left as they are.
std::string python_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char c : s) {
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z', other = static_cast<unsigned char>(c) >= 0x80;
    if (upper || lower)
      out += prev_cased ? (upper ? static_cast<char>(c + 32) : c) : (lower ? static_cast<char>(c - 32) : c);
    else
      out += c;
    prev_cased = upper || lower || other;
  }
  return out;
}

int64_t code_point_index(const std::string& s, size_t byte_pos) { return code_point_count(s.substr(0, byte_pos)); }

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

std::optional<Value> string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.get(0, "chars");
    const std::string* set = chars != nullptr && chars->is_string() ? &chars->as_string() : nullptr;
    return Value(strip_string(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") return Value(split(s, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1)));
  if (name == "splitlines") {
    List lines;
    size_t pos = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      add_piece(lines, s.substr(pos, i - pos));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      pos = i + 1;
    }
    if (pos < s.size()) add_piece(lines, s.substr(pos));
    return Value(std::move(lines));
  }
  if (name == "replace") {
    return Value(replace_all(s, string_arg(a, 0, "old", "replace"), string_arg(a, 1, "new", "replace"),
                             int_arg(a, 2, "count", -1)));
  }
  if (name == "upper") return Value(to_upper(s));
  if (name == "lower") return Value(to_lower(s));
  if (name == "title") return Value(python_title(s));
  if (name == "capitalize") {
    std::string out = to_lower(s);
    if (!out.empty()) out[0] = to_upper(out.substr(0, 1))[0];
    return Value(out);
  }
  if (name == "startswith" || name == "endswith") {
    const Value* affix = a.get(0, "prefix");
    if (affix == nullptr) fail(name + "() takes at least 1 argument");
    return Value(affix_matches(s, *affix, name == "startswith"));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const std::string& sub = string_arg(a, 0, "sub", name.c_str());
    size_t hit = name[0] == 'r' ? rfind_text(s, sub) : find_text(s, sub);
    if (hit == std::string::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value(int64_t{-1});
    }
    return Value(code_point_index(s, hit));
  }
  if (name == "count") {
    const std::string& sub = string_arg(a, 0, "sub", "count");
    if (sub.empty()) return Value(code_point_count(s) + 1);
    int64_t n = 0;
    for (size_t pos = find_text(s, sub); pos != std::string::npos; pos = find_text(s, sub, pos + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    const Value* items = a.get(0, "iterable");
    if (items == nullptr) fail("join() takes exactly one argument");
    std::string out;
    List parts = items->iterate();
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].is_string())
        fail("sequence item " + std::to_string(i) + ": expected str instance, " + parts[i].type_name() + " found");
      check_text_size(out.size() + (i ? s.size() : 0) + parts[i].as_string().size());
      if (i) out += s;
      out += parts[i].as_string();
    }
    return Value(out);
  }
  if (name == "isdigit") return Value(all_chars(s, [](unsigned char c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha") return Value(all_chars(s, [](unsigned char c) { return std::isalpha(c) != 0; }));
  if (name == "isalnum") return Value(all_chars(s, [](unsigned char c) { return std::isalnum(c) != 0; }));
  if (name == "isspace") return Value(!s.empty() && strip_string(s, nullptr, true, true).empty());
  return std::nullopt;
}

std::optional<Value> dict_method(const Dict& d, const std::string& name, const CallArgs& a) {
  if (name == "get") {
    const Value* key = a.get(0, "key");
    if (key == nullptr) fail("get expected at least 1 argument, got 0");
    const Value* dflt = a.get(1, "default");
    const Value* v = key->is_string() ? d.find(key->as_string()) : nullptr;
    if (v != nullptr) return *v;
    return dflt != nullptr ? *dflt : Value::none();
  }
  if (name == "items") {
    List out;
    for (const auto& [k, v] : d.items) out.emplace_back(List{Value(k), v}, true);
    return Value(std::move(out));
  }
  if (name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : d.items) out.push_back(name == "keys" ? Value(k) : v);
    return Value(std::move(out));
  }
  return std::nullopt;
}

std::optional<Value> list_method(const List& l, const std::string& name, const CallArgs& a) {
  if (name != "index" && name != "count") return std::nullopt;
  const Value* x = a.get(0, "value");
  if (x == nullptr) fail(name + "() takes exactly one argument");
  count_work(static_cast<int64_t>(l.size()));
  int64_t n = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (!values_equal(l[i], *x)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++n;
  }
  if (name == "index") fail(py_repr(*x) + " is not in list");
  return Value(n);
}

}  // namespace

std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args) {
  if (obj.is_string()) return string_method(obj.as_string(), name, args);
  if (obj.kind() == Value::Kind::Dict) return dict_method(obj.as_dict(), name, args);
  if (obj.is_list()) return list_method(obj.as_list(), name, args);
  return std::nullopt;
}

}  // namespace tg::llm::jinja
