// Jinja filters. Each follows jinja2's filter of the same name (and tojson follows transformers' override:
// json.dumps with ensure_ascii=False and no HTML escaping). Filters that return generators in jinja2
// (map, select, unique, ...) return lists here; templates pass them on to |list, |join or a loop anyway.
#include "jinja/jinja_filters.hpp"

#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "jinja/jinja_predicates.hpp"
#include "jinja/jinja_python_format.hpp"
#include "jinja/jinja_unicode.hpp"

namespace tg::llm::jinja {

namespace {

using FilterFn = Value (*)(const Value&, const CallArgs&);

const Value* arg(const CallArgs& a, size_t i, const char* name) { return a.get(i, name); }

std::string str_arg(const CallArgs& a, size_t i, const char* name, const char* filter, std::string dflt) {
  const Value* v = arg(a, i, name);
  if (v == nullptr || v->is_none()) return dflt;
  if (!v->is_string()) fail(std::string(filter) + ": argument '" + name + "' must be a string, not " + v->type_name());
  return v->as_string();
}

bool bool_arg(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = arg(a, i, name);
  return v == nullptr ? dflt : v->truthy();
}

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Python's str.upper() / str.lower(): Unicode's full case mappings (ICU's root locale: "é" -> "É", "ß" -> "SS"),
// ASCII without a detour through UTF-16.
std::string map_case(std::string s, bool upper) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0x80) == 0; })) {
    for (char& c : s) c = upper ? ascii_upper(c) : ascii_lower(c);
    return s;
  }
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  std::string out;
  (upper ? u.toUpper(icu::Locale::getRoot()) : u.toLower(icu::Locale::getRoot())).toUTF8String(out);
  return out;
}

}  // namespace

std::string to_upper(std::string s) { return map_case(std::move(s), true); }
std::string to_lower(std::string s) { return map_case(std::move(s), false); }

namespace {

// jinja2's title filter: uppercase the first character of each word, where words start after '-',
// whitespace or an opening bracket, and lowercase the rest.
Value f_title(const Value& in, const CallArgs&) {
  std::string s = py_str(in), out;
  bool start = true;
  for (char c : s) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || c == '\t' || c == '\n' ||
               c == '\r' || c == '\f' || c == '\v';
    out += start ? ascii_upper(c) : ascii_lower(c);
    // A UTF-8 continuation byte belongs to the character that just started, so it does not end the word start.
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) start = sep;
  }
  return Value(out);
}

Value f_capitalize(const Value& in, const CallArgs&) {
  std::string s = to_lower(py_str(in));
  if (!s.empty()) s[0] = ascii_upper(s[0]);
  return Value(s);
}

Value f_upper(const Value& in, const CallArgs&) { return Value(to_upper(py_str(in))); }
Value f_lower(const Value& in, const CallArgs&) { return Value(to_lower(py_str(in))); }

Value f_trim(const Value& in, const CallArgs& a) {
  const Value* chars = arg(a, 0, "chars");
  std::string set = chars != nullptr && chars->is_string() ? chars->as_string() : std::string();
  return Value(strip_string(py_str(in), chars != nullptr && chars->is_string() ? &set : nullptr, true, true));
}

Value f_length(const Value& in, const CallArgs&) { return Value(in.length()); }

}  // namespace

std::string replace_all(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::vector<size_t> offsets = code_point_offsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        check_text_size(out.size() + repl.size());
        out += repl, ++done;
      }
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    }
    check_text_size(out.size() + repl.size());
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    size_t hit = find_text(s, old, pos);
    if (hit == std::string::npos) break;
    check_text_size(out.size() + (hit - pos) + repl.size());
    out.append(s, pos, hit - pos);
    out += repl;
    pos = hit + old.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

namespace {

Value f_replace(const Value& in, const CallArgs& a) {
  const Value* old = arg(a, 0, "old");
  const Value* repl = arg(a, 1, "new");
  const Value* count = arg(a, 2, "count");
  if (old == nullptr || repl == nullptr) fail("replace() expects the old and new strings");
  int64_t n = count != nullptr && count->is_int() ? count->as_int() : -1;
  return Value(replace_all(py_str(in), py_str(*old), py_str(*repl), n));
}

Value f_tojson(const Value& in, const CallArgs& a) {
  JsonDumpOptions opt;
  if (const Value* indent = arg(a, 1, "indent"); indent != nullptr && !indent->is_none()) {
    if (indent->is_string())
      opt.indent = indent->as_string();
    else if (indent->is_int())
      opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
    else
      fail("tojson: indent must be an integer or a string");
  }
  if (const Value* sep = arg(a, 2, "separators"); sep != nullptr && !sep->is_none()) {
    if (!sep->is_list() || sep->as_list().size() != 2 || !sep->as_list()[0].is_string() ||
        !sep->as_list()[1].is_string())
      fail("tojson: separators must be a pair of strings");
    opt.item_separator = sep->as_list()[0].as_string();
    opt.key_separator = sep->as_list()[1].as_string();
  }
  opt.sort_keys = bool_arg(a, 3, "sort_keys", false);
  std::string out = py_json_dumps(in, opt);
  if (!bool_arg(a, 0, "ensure_ascii", false)) return Value(out);
  std::string ascii;
  for (size_t pos = 0, len = 0; pos < out.size(); pos += len) {
    check_text_size(ascii.size());  // each code point adds at most 12 bytes
    uint32_t cp = decode_code_point(out, pos, len);
    char buf[16];
    if (cp < 0x80) {
      ascii += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      ascii += buf;
    } else {
      uint32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      ascii += buf;
    }
  }
  return Value(ascii);
}

// jinja2's attribute lookup for filters: "a.b.0" walks items, digits index lists.
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    // Past 18 digits an index is past the end of any list, which is what jinja2 finds too: undefined.
    if (digits && part.size() > 18) return Value::undefined("no element " + part);
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

Value f_join(const Value& in, const CallArgs& a) {
  std::string sep = str_arg(a, 0, "d", "join", "");
  const Value* attr = arg(a, 1, "attribute");
  std::string out;
  List items = in.iterate();
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = py_str(attr != nullptr && !attr->is_none() ? attribute_path(items[i], py_str(*attr)) : items[i]);
    check_text_size(out.size() + (i ? sep.size() : 0) + item.size());
    if (i) out += sep;
    out += item;
  }
  return Value(out);
}

Value f_default(const Value& in, const CallArgs& a) {
  const Value* dflt = arg(a, 0, "default_value");
  bool boolean = bool_arg(a, 1, "boolean", false);
  if (in.is_undefined() || (boolean && !in.truthy())) return dflt != nullptr ? *dflt : Value(std::string());
  return in;
}

// A list's or string's end is read in place: copying every item to take one made `messages | last` in a loop
// quadratic, and a string too long to iterate still has a first character.
Value f_first(const Value& in, const CallArgs&) {
  if ((in.is_list() || in.is_string()) && in.length() > 0) return get_item(in, Value(int64_t{0}));
  List items = in.is_list() || in.is_string() ? List{} : in.iterate();
  return items.empty() ? Value::undefined("no first item, sequence was empty") : items.front();
}

Value f_last(const Value& in, const CallArgs&) {
  if ((in.is_list() || in.is_string()) && in.length() > 0) return get_item(in, Value(int64_t{-1}));
  List items = in.is_list() || in.is_string() ? List{} : in.iterate();
  return items.empty() ? Value::undefined("no last item, sequence was empty") : items.back();
}

Value f_list(const Value& in, const CallArgs&) { return Value(in.iterate()); }
Value f_string(const Value& in, const CallArgs&) { return in.is_string() ? in : Value(py_str(in)); }
Value f_safe(const Value& in, const CallArgs&) { return in; }

// Python's int(str): optional sign and surrounding whitespace, underscores between digits.
bool parse_python_int(const std::string& raw, int64_t base, int64_t& out) {
  std::string s = strip_string(raw, nullptr, true, true), digits;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != '_' || (i > 0 && i + 1 < s.size() && s[i - 1] != '_' && s[i + 1] != '_')) digits += s[i];
  if (digits.empty() || base < 2 || base > 36) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
  if (errno != 0 || end != digits.c_str() + digits.size() || !(std::isalnum(static_cast<unsigned char>(digits.back()))))
    return false;
  out = v;
  return true;
}

bool parse_python_float(const std::string& raw, double& out) {
  std::string s = strip_string(raw, nullptr, true, true);
  if (s.empty() || s.find('_') != std::string::npos || s.find("0x") != std::string::npos ||
      s.find("0X") != std::string::npos)
    return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

Value f_int(const Value& in, const CallArgs& a) {
  const Value* dflt = arg(a, 0, "default");
  const Value* base = arg(a, 1, "base");
  Value fallback = dflt != nullptr ? *dflt : Value(int64_t{0});
  if (in.is_int()) return Value(in.as_int());
  if (in.is_number()) {
    double f = in.as_float();
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return fallback;
    return Value(static_cast<int64_t>(f));
  }
  if (!in.is_string()) return fallback;
  int64_t v = 0;
  if (parse_python_int(in.as_string(), base != nullptr && base->is_int() ? base->as_int() : 10, v)) return Value(v);
  double f = 0;
  if (parse_python_float(in.as_string(), f) && std::isfinite(f) && std::fabs(f) < 9.2e18)
    return Value(static_cast<int64_t>(f));
  return fallback;
}

Value f_float(const Value& in, const CallArgs& a) {
  const Value* dflt = arg(a, 0, "default");
  Value fallback = dflt != nullptr ? *dflt : Value(0.0);
  if (in.is_number()) return Value(in.as_float());
  double f = 0;
  if (in.is_string() && parse_python_float(in.as_string(), f)) return Value(f);
  return fallback;
}

Value f_items(const Value& in, const CallArgs&) {
  if (in.is_undefined()) return Value(List{});
  if (!in.is_dict()) fail("can only get item pairs from a mapping, not " + in.type_name());
  List out;
  for (const auto& [k, v] : in.as_dict().items) out.emplace_back(List{Value(k), v}, true);
  return Value(std::move(out));
}

// A string is reversed by code point offsets rather than a list of one value per character, which long
// strings may not have.
Value f_reverse(const Value& in, const CallArgs&) {
  if (in.is_string()) {
    const std::string& s = in.as_string();
    std::vector<size_t> offsets = code_point_offsets(s);
    std::string out;
    out.reserve(s.size());
    for (size_t i = offsets.size() - 1; i > 0; --i) out.append(s, offsets[i - 1], offsets[i] - offsets[i - 1]);
    return Value(std::move(out));
  }
  List items = in.iterate();
  std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

// The key jinja2 sorts and deduplicates by: the attribute if given, lowercased unless case-sensitive.
Value sort_key(const Value& v, const Value* attribute, bool case_sensitive) {
  Value key = attribute != nullptr && !attribute->is_none() ? attribute_path(v, py_str(*attribute)) : v;
  if (!case_sensitive && key.is_string()) return Value(to_lower(key.as_string()));
  return key;
}

Value f_sort(const Value& in, const CallArgs& a) {
  bool reverse = bool_arg(a, 0, "reverse", false);
  bool case_sensitive = bool_arg(a, 1, "case_sensitive", false);
  const Value* attribute = arg(a, 2, "attribute");
  List items = in.iterate();
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(sort_key(items[i], attribute, case_sensitive), i);
  // Stable like Python's sorted (the index breaks ties); std::sort, as clang 19 rejects libstdc++ 12's stable_sort.
  std::sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (reverse ? value_less(y.first, x.first) : value_less(x.first, y.first)) return true;
    if (reverse ? value_less(x.first, y.first) : value_less(y.first, x.first)) return false;
    return x.second < y.second;
  });
  List out;
  for (const auto& k : keyed) out.push_back(items[k.second]);
  return Value(std::move(out));
}

Value f_unique(const Value& in, const CallArgs& a) {
  bool case_sensitive = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  // Keys are bucketed by a hash that agrees with values_equal, so only equal-hash keys are compared: a
  // pairwise scan made range(100000) | unique take minutes.
  List out;
  std::unordered_map<size_t, std::vector<Value>> seen;
  for (const Value& item : in.iterate()) {
    Value key = sort_key(item, attribute, case_sensitive);
    std::vector<Value>& bucket = seen[value_hash(key)];
    if (std::any_of(bucket.begin(), bucket.end(), [&](const Value& s) { return values_equal(s, key); })) continue;
    bucket.push_back(key);
    out.push_back(item);
  }
  return Value(std::move(out));
}

Value f_escape(const Value& in, const CallArgs&) {
  std::string out;
  for (char c : py_str(in)) {
    check_text_size(out.size());
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(out);
}

CallArgs shift_args(const CallArgs& a, size_t n) {
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(n, a.pos.size())), a.pos.end());
  rest.kw = a.kw;
  return rest;
}

Value f_map(const Value& in, const CallArgs& a) {
  List out;
  // Mapped items can each be far larger than their inputs, so the list's size is checked as it grows.
  int64_t size = 0;
  auto add = [&](Value v) {
    size += v.size();
    if (size > Value::kMaxSize)
      fail("map(): the mapped list is larger than " + std::to_string(Value::kMaxSize >> 20) + " MiB");
    out.push_back(std::move(v));
  };
  if (const Value* attribute = arg(a, 99, "attribute")) {
    const Value* dflt = arg(a, 99, "default");
    for (const Value& item : in.iterate()) {
      Value v = attribute_path(item, py_str(*attribute));
      add(v.is_undefined() && dflt != nullptr ? *dflt : v);
    }
    return Value(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) fail("map() expects a filter name or attribute=");
  const std::string& name = a.pos[0].as_string();
  if (!has_filter(name)) fail("no filter named '" + name + "'");
  CallArgs rest = shift_args(a, 1);
  for (const Value& item : in.iterate()) add(apply_filter(name, item, rest));
  return Value(std::move(out));
}

// select/reject/selectattr/rejectattr share this: keep items whose (attribute's) test result is `keep`.
Value select_items(const Value& in, const CallArgs& a, bool by_attribute, bool keep) {
  size_t first = by_attribute ? 1 : 0;
  std::string attribute;
  if (by_attribute) {
    if (a.pos.empty()) fail("selectattr/rejectattr expect an attribute name");
    attribute = py_str(a.pos[0]);
  }
  std::string test;
  if (a.pos.size() > first) {
    if (!a.pos[first].is_string()) fail("the test name must be a string");
    test = a.pos[first].as_string();
    if (!has_test(test)) fail("no test named '" + test + "'");
  }
  CallArgs rest = shift_args(a, first + 1);
  rest.kw.clear();
  List out;
  for (const Value& item : in.iterate()) {
    Value v = by_attribute ? attribute_path(item, attribute) : item;
    bool r = test.empty() ? v.truthy() : apply_test(test, v, rest);
    if (r == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value f_select(const Value& in, const CallArgs& a) { return select_items(in, a, false, true); }
Value f_reject(const Value& in, const CallArgs& a) { return select_items(in, a, false, false); }
Value f_selectattr(const Value& in, const CallArgs& a) { return select_items(in, a, true, true); }
Value f_rejectattr(const Value& in, const CallArgs& a) { return select_items(in, a, true, false); }

Value f_abs(const Value& in, const CallArgs&) {
  if (in.is_int()) {
    if (in.as_int() == INT64_MIN) fail("integer overflow");
    return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
  }
  if (in.is_number()) return Value(std::fabs(in.as_float()));
  fail("bad operand type for abs(): '" + in.type_name() + "'");
}

Value f_round(const Value& in, const CallArgs& a) {
  if (!in.is_number()) fail("round() expects a number, not " + in.type_name());
  const Value* prec = arg(a, 0, "precision");
  int64_t p = prec != nullptr && prec->is_int() ? prec->as_int() : 0;
  std::string method = str_arg(a, 1, "method", "round", "common");
  double x = in.as_float(), scale = std::pow(10.0, static_cast<double>(p));
  if (method == "ceil") return Value(std::ceil(x * scale) / scale);
  if (method == "floor") return Value(std::floor(x * scale) / scale);
  if (method != "common") fail("round(): method must be 'common', 'ceil' or 'floor'");
  if (!std::isfinite(x) || p > 300) return Value(x);
  // Python rounds the exact binary value half-to-even; printf's correctly rounded %.*f does the same.
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::max<int64_t>(p, 0)), x);
  double r = std::strtod(buf, nullptr);
  if (p < 0) r = std::nearbyint(x * scale) / scale;
  return Value(r);
}

Value f_sum(const Value& in, const CallArgs& a) {
  const Value* attribute = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start != nullptr ? *start : Value(int64_t{0});
  for (const Value& item : in.iterate()) {
    Value v = attribute != nullptr && !attribute->is_none() ? attribute_path(item, py_str(*attribute)) : item;
    if (!total.is_number() || !v.is_number())
      fail("sum(): unsupported operand types '" + total.type_name() + "' and '" + v.type_name() + "'");
    if (total.is_int() && v.is_int()) {
      int64_t r = 0;
      if (__builtin_add_overflow(total.as_int(), v.as_int(), &r))
        fail("integer overflow (tg's templates compute with 64-bit integers)");
      total = Value(r);
    } else {
      total = Value(total.as_float() + v.as_float());
    }
  }
  return total;
}

Value min_max(const Value& in, const CallArgs& a, bool want_max) {
  bool case_sensitive = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  List items = in.iterate();
  if (items.empty()) return Value::undefined("no aggregated item, sequence was empty");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = sort_key(items[i], attribute, case_sensitive), b = sort_key(items[best], attribute, case_sensitive);
    if (want_max ? value_less(b, k) : value_less(k, b)) best = i;
  }
  return items[best];
}

Value f_min(const Value& in, const CallArgs& a) { return min_max(in, a, false); }
Value f_max(const Value& in, const CallArgs& a) { return min_max(in, a, true); }

Value f_indent(const Value& in, const CallArgs& a) {
  const Value* width = arg(a, 0, "width");
  std::string pad = width == nullptr ? "    "
                    : width->is_string()
                        ? width->as_string()
                        : std::string(static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 256)), ' ');
  bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
  std::vector<std::string> lines;
  std::string s = py_str(in), cur;
  // Every line may gain the pad, and the pad is any string: bound the result before building it.
  size_t breaks = static_cast<size_t>(std::count(s.begin(), s.end(), '\n') + std::count(s.begin(), s.end(), '\r'));
  check_text_size(s.size() + (breaks + 1) * pad.size());  // both at most 64 MiB: no overflow
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(out);
}

Value f_dictsort(const Value& in, const CallArgs& a) {
  bool case_sensitive = bool_arg(a, 0, "case_sensitive", false);
  std::string by = str_arg(a, 1, "by", "dictsort", "key");
  bool reverse = bool_arg(a, 2, "reverse", false);
  List pairs = f_items(in, {}).as_list();
  size_t col = by == "value" ? 1 : 0;
  CallArgs sort_args;
  sort_args.kw = {{"reverse", Value(reverse)},
                  {"case_sensitive", Value(case_sensitive)},
                  {"attribute", Value(std::to_string(col))}};
  return f_sort(Value(std::move(pairs)), sort_args);
}

Value f_format(const Value& in, const CallArgs& a) {
  if (!a.kw.empty()) fail("format(): keyword arguments are not supported");
  return Value(percent_format(py_str(in), a.pos.size() == 1 ? a.pos[0] : Value(a.pos, true)));
}

Value f_attr(const Value& in, const CallArgs& a) {
  const Value* name = arg(a, 0, "name");
  if (name == nullptr) fail("attr() expects an attribute name");
  return get_attr(in, py_str(*name));
}

Value f_wordcount(const Value& in, const CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char c : py_str(in)) {
    bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (static_cast<unsigned char>(c) & 0x80);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"capitalize", f_capitalize},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail("no filter named '" + name + "'");
  return it->second(input, args);
}

namespace {

// Width and precision are capped so one conversion cannot print megabytes of padding.
constexpr int64_t kMaxFormatWidth = 4096;

// snprintf into a buffer of the size it asks for (a fixed buffer silently cut long output short).
template <typename T>
std::string c_format(const std::string& spec, T value) {
  int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n < 0) fail("bad format '" + spec + "'");
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.pop_back();
  return out;
}

// Python's int() of a float for %d: truncation, refusing what int64 cannot hold.
int64_t format_int(const Value& v) {
  if (v.is_int()) return v.as_int();
  double f = v.as_float();
  if (std::isnan(f)) fail("cannot convert float NaN to integer");
  if (std::isinf(f)) fail("cannot convert float infinity to integer");
  if (std::fabs(f) >= 9.2e18) fail("%d format: " + py_float_repr(f) + " is outside the 64-bit integer range");
  return static_cast<int64_t>(f);
}

// %s and %r as Python pads and cuts them: a precision keeps that many characters, a width pads with spaces (on
// the right after '-'), both counted in code points.
std::string pad_text(std::string s, const std::string& spec) {
  size_t i = 1;
  bool left = false;
  for (; i < spec.size() && std::string("-+ #0").find(spec[i]) != std::string::npos; ++i) left |= spec[i] == '-';
  const size_t width = static_cast<size_t>(std::atoll(spec.c_str() + i));
  const size_t dot = spec.find('.');
  const std::vector<size_t> at = code_point_offsets(s);  // each code point's start, then s.size()
  size_t chars = at.size() - 1;
  if (dot != std::string::npos) {
    chars = std::min(chars, static_cast<size_t>(std::atoll(spec.c_str() + dot + 1)));
    s.resize(at[chars]);
  }
  if (chars >= width) return s;
  const std::string fill(width - chars, ' ');
  return left ? s + fill : fill + s;
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
  List values = args.is_tuple() ? args.as_list() : List{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) fail("incomplete format");
    // flags, width, .precision: anything else in their place is the (unsupported) conversion character
    std::string spec = "%";
    while (i < format.size() && std::string("-+ #0").find(format[i]) != std::string::npos) spec += format[i++];
    for (int part = 0; part < 2 && i < format.size(); ++part) {
      if (part == 1) {
        if (format[i] != '.') break;
        spec += format[i++];
      }
      int64_t n = 0;
      for (; i < format.size() && format[i] >= '0' && format[i] <= '9'; ++i) {
        n = std::min<int64_t>(n * 10 + (format[i] - '0'), kMaxFormatWidth + 1);
        spec += format[i];
      }
      if (n > kMaxFormatWidth) fail("format width and precision are limited to " + std::to_string(kMaxFormatWidth));
    }
    if (i >= format.size()) fail("incomplete format");
    char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) fail("not enough arguments for format string");
    const Value& v = values[next++];
    std::string piece;
    switch (conv) {
      case 's': piece = pad_text(py_str(v), spec); break;
      case 'r': piece = pad_text(py_repr(v), spec); break;
      case 'd':
      case 'i':
        if (!v.is_number())
          fail("%" + std::string(1, conv) + " format: a real number is required, not " + v.type_name());
        piece = c_format(spec + "lld", static_cast<long long>(format_int(v)));
        break;
      case 'f':
      case 'e':
      case 'g':
        if (!v.is_number())
          fail("%" + std::string(1, conv) + " format: a real number is required, not " + v.type_name());
        piece = c_format(spec + conv, v.as_float());
        break;
      default: fail(std::string("unsupported format character '") + conv + "'");
    }
    check_text_size(out.size() + piece.size());
    out += piece;
  }
  if (next < values.size() && args.is_tuple()) fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace tg::llm::jinja
