// Global functions for chat templates. raise_exception and strftime_now are what transformers'
// apply_chat_template adds to its jinja2 environment; range follows jinja2's sandbox and is capped.
#include "jinja/jinja_globals.hpp"

#include <ctime>

namespace tg::llm::jinja {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE), so a template cannot allocate without bound.
constexpr int64_t kMaxRange = 100000;

int64_t int_arg(const Value& v, const char* fn) {
  if (!v.is_int())
    fail(std::string("'") + v.type_name() + "' object cannot be interpreted as an integer in " + fn + "()");
  return v.as_int();
}

Value range(const CallArgs& args) {
  if (!args.kw.empty()) fail("range() takes no keyword arguments");
  if (args.pos.empty() || args.pos.size() > 3)
    fail("range expected 1 to 3 arguments, got " + std::to_string(args.pos.size()));
  int64_t start = 0, stop = 0, step = 1;
  if (args.pos.size() == 1) {
    stop = int_arg(args.pos[0], "range");
  } else {
    start = int_arg(args.pos[0], "range");
    stop = int_arg(args.pos[1], "range");
    if (args.pos.size() == 3) step = int_arg(args.pos[2], "range");
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  // Count first (in 128 bits, so huge bounds cannot overflow) and refuse before allocating; then step by
  // index, since start + step * count may not fit in 64 bits even when every item does.
  __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 by = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  __int128 count = span <= 0 ? 0 : (span + by - 1) / by;
  if (count > kMaxRange) fail("range too big: more than " + std::to_string(kMaxRange) + " items");
  count_work(static_cast<int64_t>(count));
  List out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
    out.emplace_back(static_cast<int64_t>(start + static_cast<__int128>(step) * k));
  return Value(std::move(out));
}

Dict keyword_dict(const CallArgs& args, const char* fn) {
  Dict d;
  if (args.pos.size() > 1) fail(std::string(fn) + "() takes at most one positional argument");
  if (!args.pos.empty()) {
    if (!args.pos[0].is_dict())
      fail(std::string(fn) + "() positional argument must be a dict, not " + args.pos[0].type_name());
    d = args.pos[0].as_dict();
  }
  for (const auto& [k, v] : args.kw) d.set(k, v);
  return d;
}

Value make_namespace(const CallArgs& args) {
  Dict d = keyword_dict(args, "namespace");
  for (const auto& kv : d.items)
    if (kv.second.contains_namespace_or_function()) fail("a namespace cannot hold a namespace or a function");
  return Value::namespace_(std::move(d));
}

Value raise_exception(const CallArgs& args) {
  const Value* msg = args.get(0, "message");
  fail(msg == nullptr ? std::string("raise_exception called") : msg->is_string() ? msg->as_string() : msg->type_name());
}

Value strftime_now(const CallArgs& args) {
  const Value* fmt = args.get(0, "format");
  if (fmt == nullptr || !fmt->is_string()) fail("strftime_now() expects a format string");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  size_t n = std::strftime(buf, sizeof buf, fmt->as_string().c_str(), &local);
  if (n == 0 && !fmt->as_string().empty()) fail("strftime_now(): the formatted date is empty or too long");
  return Value(std::string(buf, n));
}

Value function(const char* name, Value (*fn)(const CallArgs&)) {
  return Value(std::make_shared<Function>(Function{name, fn}));
}

}  // namespace

Dict make_globals() {
  Dict g;
  g.set("range", function("range", range));
  g.set("namespace", function("namespace", make_namespace));
  g.set("dict", function("dict", [](const CallArgs& a) { return Value(keyword_dict(a, "dict")); }));
  g.set("raise_exception", function("raise_exception", raise_exception));
  g.set("strftime_now", function("strftime_now", strftime_now));
  return g;
}

}  // namespace tg::llm::jinja
