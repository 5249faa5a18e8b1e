// Python's str(), repr() and json.dumps() layouts, so rendered prompts match transformers byte for byte.
#include "jinja/jinja_python_format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/jinja_unicode.hpp"

namespace tg::llm::jinja {

std::string py_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's choice: positional for 1e-4 <= |f| < 1e16, else exponent.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + ebuf;
}

static std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0, len = 0; pos < s.size(); pos += len) {
    check_text_size(out.size());  // \xNN makes a string four times longer
    uint32_t cp = decode_code_point(s, pos, len);
    if (cp == '\\' || cp == static_cast<uint32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      // Python escapes what it does not consider printable; this covers the Latin-1 range only.
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[cp >> 4];
      out += kHex[cp & 15];
    } else {
      out.append(s, pos, len);
    }
  }
  return out + quote;
}

// Printing checks its length as it goes: a value's size is bounded, but a namespace inside it is counted once
// however often it is printed, and repr may quadruple a string (\xNN).
static std::string repr_sequence(const List& items, const char* open, const char* close, bool tuple) {
  std::string out = open;
  count_work(static_cast<int64_t>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(items[i]);
    check_text_size(out.size());
  }
  if (tuple && items.size() == 1) out += ",";
  return out + close;
}

static std::string repr_dict(const Dict& d) {
  std::string out = "{";
  count_work(static_cast<int64_t>(d.items.size()));
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i) out += ", ";
    out += repr_string(d.items[i].first) + ": " + py_repr(d.items[i].second);
    check_text_size(out.size());
  }
  return out + "}";
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return py_float_repr(v.as_float());
    case Value::Kind::String: return v.as_string();
    case Value::Kind::List:
      return v.is_tuple() ? repr_sequence(v.as_list(), "(", ")", true) : repr_sequence(v.as_list(), "[", "]", false);
    case Value::Kind::Dict: return repr_dict(v.as_dict());
    case Value::Kind::Namespace: return "<Namespace " + repr_dict(v.as_dict()) + ">";
    case Value::Kind::Function: return "<function " + v.as_function().name + ">";
  }
  return "";
}

std::string py_repr(const Value& v) {
  if (v.is_string()) return repr_string(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return py_str(v);
}

static void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

namespace {
struct JsonWriter {
  const JsonDumpOptions& opt;
  std::string item_sep, key_sep;
  std::string out;

  void newline(int level) {
    check_text_size(out.size() + 1 + static_cast<size_t>(level) * opt.indent->size());
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  void write(const Value& v, int level) {
    count_work(1);
    check_text_size(out.size());  // indent and separators are any strings, repeated per item and level
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: {
        double f = v.as_float();
        out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity") : py_float_repr(f);
        return;
      }
      case Value::Kind::String: json_string(out, v.as_string()); return;
      case Value::Kind::List: {
        const List& l = v.as_list();
        if (l.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < l.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          write(l[i], level + 1);
        }
        if (opt.indent) newline(level);
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.as_dict().items) items.push_back(&kv);
        if (opt.sort_keys)
          std::sort(items.begin(), items.end(),
                    [](auto* a, auto* b) { return a->first < b->first; });  // keys are unique
        if (items.empty()) {
          out += "{}";
          return;
        }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          json_string(out, items[i]->first);
          out += key_sep;
          write(items[i]->second, level + 1);
        }
        if (opt.indent) newline(level);
        out += '}';
        return;
      }
      case Value::Kind::Undefined:
      case Value::Kind::Namespace:
      case Value::Kind::Function: break;
    }
    fail("object of type " + v.type_name() + " is not JSON serializable");
  }
};
}  // namespace

std::string py_json_dumps(const Value& v, const JsonDumpOptions& options) {
  // json.dumps drops the space after ',' when indenting, so lines do not end in a blank.
  JsonWriter w{
      options, options.item_separator.value_or(options.indent ? "," : ", "), options.key_separator.value_or(": "), {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace tg::llm::jinja
