// Jinja interpreter. Scoping follows jinja2: each for-loop iteration and each macro call gets a fresh
// scope (so `set` inside a loop does not leak out, which is why templates use namespace()), while if-blocks
// share their enclosing scope.
#include "jinja/jinja_interpreter.hpp"

#include <cmath>
#include <limits>

#include "jinja/jinja_filters.hpp"
#include "jinja/jinja_globals.hpp"
#include "jinja/jinja_lexer.hpp"
#include "jinja/jinja_methods.hpp"
#include "jinja/jinja_predicates.hpp"
#include "jinja/jinja_python_format.hpp"
#include "jinja/jinja_unicode.hpp"

namespace tg::llm::jinja {

namespace {

struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Scope> parent;

  // Scans count as work, 8 names a step: the root scope holds every context key, and a caller may pass
  // thousands of kwargs.
  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      count_work(static_cast<int64_t>(s->vars.size() / 8));
      for (const auto& [k, v] : s->vars)
        if (k == name) return &v;
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    count_work(static_cast<int64_t>(vars.size() / 8));
    for (auto& [k, old] : vars)
      if (k == name) {
        old = std::move(v);
        return;
      }
    vars.emplace_back(name, std::move(v));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

[[noreturn]] void fail_at(int line, int column, const std::string& msg) { throw_template_error(line, column, msg); }

Value checked_int(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
    fail("integer overflow (tg's templates compute with 64-bit integers)");
  return Value(static_cast<int64_t>(v));
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// The items a slice takes: index `first`, then every `step`, `count` of them.
struct SliceRange {
  int64_t first, step, count;
};

// Python's slice.indices for a sequence of length n. The count is computed, not stepped to: `i += step`
// overflowed for huge steps, and a list of every index cost memory for long strings.
SliceRange slice_range(int64_t n, const Value& start, const Value& stop, const Value& step_v) {
  auto as_index = [](const Value& v, const char* what) {
    if (!v.is_int()) fail(std::string("slice ") + what + " must be an integer or none, not " + v.type_name());
    return v.as_int();
  };
  int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : as_index(step_v, "step");
  if (step == 0) fail("slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t dflt, const char* what) {
    if (v.is_none() || v.is_undefined()) return dflt;
    int64_t i = as_index(v, what);
    if (i < 0)
      i = std::max<int64_t>(i + n, step < 0 ? -1 : 0);
    else if (i > n)
      i = step < 0 ? n - 1 : n;
    return i;
  };
  int64_t lo = adjust(start, step < 0 ? n - 1 : 0, "start");
  int64_t hi = adjust(stop, step < 0 ? -1 : n, "stop");
  __int128 span = step > 0 ? static_cast<__int128>(hi) - lo : static_cast<__int128>(lo) - hi;
  __int128 by = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  int64_t count = span <= 0 ? 0 : static_cast<int64_t>((span + by - 1) / by);  // at most n + 1
  return {lo, step, count};
}

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) { value_work = 0; }

  std::string run(const Body& program, const Value& context) {
    auto root = std::make_shared<Scope>();
    for (auto& kv : make_globals().items) root->set(kv.first, kv.second);
    for (const auto& kv : context.as_dict().items) root->set(kv.first, kv.second);
    std::string out;
    render_body(program, root, out);
    return out;
  }

 private:
  void step(const Expr& at) { step(at.line, at.column); }
  void step(int line, int column) {
    steps_ += value_work;  // copying or comparing a value costs about what one step does (under ASan)
    value_work = 0;
    if (++steps_ > limits_.max_steps)
      fail_at(line, column, "template exceeded its budget of " + std::to_string(limits_.max_steps) + " steps");
  }
  // 64 bytes a step: at that rate the budget is a few seconds of string work even under ASan.
  void charge_bytes(size_t n) { steps_ += static_cast<int64_t>(n / 64); }

  // Counts one level of evaluation for as long as it lives; see RenderLimits::max_nesting.
  struct Nest {
    Interpreter& in;
    Nest(Interpreter& interp, int line, int column) : in(interp) {
      if (++in.nesting_ <= in.limits_.max_nesting) return;
      --in.nesting_;
      fail_at(
          line, column,
          "template nests deeper than " + std::to_string(in.limits_.max_nesting) + " levels (counting macro calls)");
    }
    ~Nest() { --in.nesting_; }
  };

  void append(std::string& out, const std::string& s, int line, int column) {
    if (out.size() + s.size() > limits_.max_output_bytes)
      fail_at(line, column, "rendered text exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    out += s;
  }

  // ---- statements ----

  Flow render_body(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& node : body) {
      Flow f = render_node(*node, scope, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow render_node(const Node& n, const ScopePtr& scope, std::string& out) {
    step(n.line, n.column);
    Nest nest(*this, n.line, n.column);
    switch (n.kind) {
      case Node::Kind::Text: append(out, n.text, n.line, n.column); return Flow::Normal;
      case Node::Kind::Output: append(out, py_str(eval(*n.expr, scope)), n.line, n.column); return Flow::Normal;
      case Node::Kind::If:
        for (size_t i = 0; i < n.conditions.size(); ++i)
          if (eval(*n.conditions[i], scope).truthy()) return render_body(n.bodies[i], scope, out);
        return render_body(n.else_body, scope, out);
      case Node::Kind::For: render_for(n, scope, out); return Flow::Normal;
      case Node::Kind::Set: render_set(n, scope); return Flow::Normal;
      case Node::Kind::SetBlock: {
        std::string text;
        render_body(n.body, scope, text);
        scope->set(n.targets[0], Value(std::move(text)));
        return Flow::Normal;
      }
      case Node::Kind::Macro: scope->set(n.text, make_macro(n, n.text, scope)); return Flow::Normal;
      case Node::Kind::CallBlock: {
        Value caller = make_macro(n, "caller", scope);
        append(out, py_str(eval_call(*n.expr, scope, &caller)), n.line, n.column);
        return Flow::Normal;
      }
      case Node::Kind::FilterBlock: {
        std::string text;
        render_body(n.body, scope, text);
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        inner->set(" filter body", Value(std::move(text)));
        append(out, py_str(eval(*n.expr, inner)), n.line, n.column);
        return Flow::Normal;
      }
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  void bind_targets(const Node& n, Scope& scope, const Value& item) {
    if (n.targets.size() == 1) {
      scope.set(n.targets[0], item);
      return;
    }
    List parts;
    try {
      parts = item.iterate();
    } catch (const ValueError& e) {
      fail_at(n.line, n.column, std::string("cannot unpack: ") + e.what());
    }
    if (parts.size() != n.targets.size())
      fail_at(n.line, n.column,
              "cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(n.targets.size()) +
                  " names");
    for (size_t i = 0; i < parts.size(); ++i) scope.set(n.targets[i], parts[i]);
  }

  void render_for(const Node& n, const ScopePtr& scope, std::string& out) {
    Value iterable = eval(*n.expr, scope);
    List items;
    try {
      items = iterable.iterate();
    } catch (const ValueError& e) {
      fail_at(n.expr->line, n.expr->column, e.what());
    }
    if (n.filter) {
      // `for x in xs if cond` filters first, so loop.index and loop.length count only the kept items.
      List kept;
      for (const Value& item : items) {
        auto probe = std::make_shared<Scope>();
        probe->parent = scope;
        bind_targets(n, *probe, item);
        if (eval(*n.filter, probe).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      render_body(n.else_body, scope, out);
      return;
    }
    int64_t length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      steps_ += 3;  // an iteration allocates a scope (and a loop object): dearer than one evaluation
      step(n.line, n.column);
      auto iter = std::make_shared<Scope>();
      iter->parent = scope;
      bind_targets(n, *iter, items[static_cast<size_t>(i)]);
      if (n.uses_loop) iter->set("loop", loop_object(items, i));
      if (render_body(n.body, iter, out) == Flow::Break) break;
    }
  }

  static Value loop_object(const List& items, int64_t i) {
    int64_t length = static_cast<int64_t>(items.size());
    Dict loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value(i + 1));
    loop.items.emplace_back("index0", Value(i));
    loop.items.emplace_back("revindex", Value(length - i));
    loop.items.emplace_back("revindex0", Value(length - i - 1));
    loop.items.emplace_back("first", Value(i == 0));
    loop.items.emplace_back("last", Value(i == length - 1));
    loop.items.emplace_back("length", Value(length));
    loop.items.emplace_back("depth", Value(1));
    loop.items.emplace_back("depth0", Value(0));
    loop.items.emplace_back("previtem",
                            i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.items.emplace_back(
        "nextitem", i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    auto cycle = std::make_shared<Function>(Function{"cycle", [i](const CallArgs& a) {
                                                       if (a.pos.empty()) fail("no items for cycling given");
                                                       return a.pos[static_cast<size_t>(i) % a.pos.size()];
                                                     }});
    loop.items.emplace_back("cycle", Value(std::move(cycle)));
    return Value(std::move(loop));
  }

  void render_set(const Node& n, const ScopePtr& scope) {
    Value v = eval(*n.expr, scope);
    if (n.target) {
      Value ns = eval(*n.target, scope);
      if (ns.kind() != Value::Kind::Namespace)
        fail_at(n.line, n.column,
                "cannot assign attribute '" + n.text + "' on " + ns.type_name() + " (only on a namespace)");
      if (v.contains_namespace_or_function())
        fail_at(n.line, n.column, "a namespace cannot hold a namespace or a function");
      ns.mutable_namespace().set(n.text, std::move(v));
      return;
    }
    bind_targets(n, *scope, v);
  }

  // A macro closes over its defining scope weakly: scopes own macros, so a strong reference would be a cycle.
  Value make_macro(const Node& n, const std::string& name, const ScopePtr& scope) {
    std::weak_ptr<Scope> closure = scope;
    const Node* node = &n;
    auto fn = std::make_shared<Function>();
    fn->name = name;
    fn->call = [this, node, closure, name](const CallArgs& args) { return call_macro(*node, name, closure, args); };
    return Value(std::move(fn));
  }

  Value call_macro(const Node& n, const std::string& name, const std::weak_ptr<Scope>& closure, const CallArgs& args) {
    ScopePtr parent = closure.lock();
    if (!parent) fail("macro '" + name + "' called after the scope that defined it ended");
    if (depth_ >= limits_.max_call_depth)
      fail("macro calls nest deeper than " + std::to_string(limits_.max_call_depth) + " levels");
    if (args.pos.size() > n.params.size())
      fail("macro '" + name + "' takes not more than " + std::to_string(n.params.size()) + " argument(s)");
    auto scope = std::make_shared<Scope>();
    scope->parent = parent;
    for (size_t i = 0; i < n.params.size(); ++i) {
      const auto& [pname, def] = n.params[i];
      if (const Value* v = args.get(i, pname))
        scope->set(pname, *v);
      else if (def)
        scope->set(pname, eval(*def, scope));
      else
        scope->set(pname, Value::undefined("parameter '" + pname + "' was not provided"));
    }
    for (const auto& [k, v] : args.kw) {
      bool known = k == "caller";
      for (const auto& p : n.params) known = known || p.first == k;
      if (!known) fail("macro '" + name + "' takes no keyword argument '" + k + "'");
      if (k == "caller") scope->set(k, v);
    }
    ++depth_;
    std::string text;
    try {
      render_body(n.body, scope, text);
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    return Value(std::move(text));
  }

  // ---- expressions ----

  Value eval(const Expr& e, const ScopePtr& scope) {
    step(e);
    Nest nest(*this, e.line, e.column);
    Value v;
    try {
      v = eval_unpositioned(e, scope);
    } catch (const ValueError& err) {
      fail_at(e.line, e.column, err.what());
    }
    // A string value is copied wherever it goes, so reading one costs its length: otherwise indexing a
    // long string in a loop is quadratic work on a linear budget.
    if (v.is_string()) charge_bytes(v.as_string().size());
    return v;
  }

  CallArgs eval_args(const Expr& e, const ScopePtr& scope, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.pos.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) args.kw.emplace_back(k, eval(*v, scope));
    return args;
  }

  Value eval_call(const Expr& e, const ScopePtr& scope, const Value* caller) {
    const Expr& callee = *e.args[0];
    CallArgs args = eval_args(e, scope, 1);
    if (caller != nullptr) args.kw.emplace_back("caller", *caller);
    if (callee.kind == Expr::Kind::Attr) {
      // Python looks methods up before dict keys, so message.get(...) is dict.get even with a "get" key.
      Value obj = eval(*callee.args[0], scope);
      if (obj.is_undefined()) fail_at(callee.line, callee.column, obj.undefined_message());
      try {
        if (std::optional<Value> r = call_method(obj, callee.name, args)) return *r;
      } catch (const ValueError& err) {
        fail_at(e.line, e.column, err.what());
      }
      return call_value(e, get_attr(obj, callee.name), args);
    }
    return call_value(e, eval(callee, scope), args);
  }

  Value call_value(const Expr& e, const Value& fn, const CallArgs& args) {
    if (fn.is_undefined()) fail_at(e.line, e.column, fn.undefined_message());
    if (!fn.is_function()) fail_at(e.line, e.column, "'" + fn.type_name() + "' object is not callable");
    try {
      return fn.as_function().call(args);
    } catch (const ValueError& err) {
      fail_at(e.line, e.column, err.what());
    }
  }

  Value eval_unpositioned(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: {
        if (const Value* v = scope->lookup(e.name)) return *v;
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::Attr: return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::Kind::Item: {
        Value obj = eval(*e.args[0], scope);
        return get_item(obj, eval(*e.args[1], scope));
      }
      case Expr::Kind::Slice: return eval_slice(e, scope);
      case Expr::Kind::Call: return eval_call(e, scope, nullptr);
      case Expr::Kind::Filter: {
        Value input = eval(*e.args[0], scope);
        return apply_filter(e.name, input, eval_args(e, scope, 1));
      }
      case Expr::Kind::Test: {
        Value input = eval(*e.args[0], scope);
        bool r = apply_test(e.name, input, eval_args(e, scope, 1));
        return Value(e.negate ? !r : r);
      }
      case Expr::Kind::Neg:
      case Expr::Kind::Pos: {
        Value v = eval(*e.args[0], scope);
        if (v.is_undefined()) fail(v.undefined_message());
        if (!v.is_number())
          fail(std::string("bad operand type for unary ") + (e.kind == Expr::Kind::Neg ? "-" : "+") + ": '" +
               v.type_name() + "'");
        if (e.kind == Expr::Kind::Pos) return v.is_bool() ? Value(v.as_int()) : v;
        if (v.is_int()) return checked_int(-static_cast<__int128>(v.as_int()));
        return Value(-v.as_float());
      }
      case Expr::Kind::Not: return Value(!eval(*e.args[0], scope).truthy());
      case Expr::Kind::And: {
        Value a = eval(*e.args[0], scope);
        return a.truthy() ? eval(*e.args[1], scope) : a;
      }
      case Expr::Kind::Or: {
        Value a = eval(*e.args[0], scope);
        return a.truthy() ? a : eval(*e.args[1], scope);
      }
      case Expr::Kind::Binary: {
        Value a = eval(*e.args[0], scope);
        return binary(e.op, a, eval(*e.args[1], scope));
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.args[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], scope);
          if (!compare(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::Conditional:
        if (eval(*e.args[0], scope).truthy()) return eval(*e.args[1], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the conditional expression had no else branch");
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a, scope));
        return Value(std::move(items), e.kind == Expr::Kind::Tuple);
      }
      case Expr::Kind::Dict: {
        Dict d;
        for (size_t i = 0; i < e.keys.size(); ++i) {
          Value k = eval(*e.keys[i], scope);
          if (!k.is_string()) fail("dict keys must be strings in chat templates, not " + k.type_name());
          d.set(k.as_string(), eval(*e.args[i], scope));
        }
        return Value(std::move(d));
      }
    }
    return Value();
  }

  Value eval_slice(const Expr& e, const ScopePtr& scope) {
    Value obj = eval(*e.args[0], scope);
    Value parts[3];
    for (int i = 0; i < 3; ++i)
      if (e.args[static_cast<size_t>(i) + 1]) parts[i] = eval(*e.args[static_cast<size_t>(i) + 1], scope);
    if (obj.is_undefined()) fail(obj.undefined_message());
    if (!obj.is_list() && !obj.is_string()) fail("'" + obj.type_name() + "' object is not subscriptable");
    SliceRange r = slice_range(obj.length(), parts[0], parts[1], parts[2]);
    count_work(r.count);
    // (count - 1) * |step| is less than the length, so the index arithmetic below stays in range.
    if (obj.is_list()) {
      List out;
      out.reserve(static_cast<size_t>(r.count));
      for (int64_t k = 0; k < r.count; ++k) out.push_back(obj.as_list()[static_cast<size_t>(r.first + k * r.step)]);
      return Value(std::move(out), obj.is_tuple());
    }
    const std::string& s = obj.as_string();
    if (r.step == 1) {
      size_t from = code_point_offset(s, r.first), to = code_point_offset(s, r.first + r.count);
      return Value(s.substr(from, to - from));
    }
    std::vector<size_t> offsets = code_point_offsets(s);
    std::string out;
    for (int64_t k = 0; k < r.count; ++k) {
      size_t at = static_cast<size_t>(r.first + k * r.step);
      out.append(s, offsets[at], offsets[at + 1] - offsets[at]);
    }
    return Value(std::move(out));
  }

  bool compare(Expr::Op op, const Value& a, const Value& b) {
    switch (op) {
      case Expr::Op::Eq: return values_equal(a, b);
      case Expr::Op::Ne: return !values_equal(a, b);
      case Expr::Op::In: return value_contains(b, a);
      case Expr::Op::NotIn: return !value_contains(b, a);
      case Expr::Op::Lt:
      case Expr::Op::Le:
      case Expr::Op::Gt:
      case Expr::Op::Ge: break;
      case Expr::Op::Add:
      case Expr::Op::Sub:
      case Expr::Op::Mul:
      case Expr::Op::Div:
      case Expr::Op::FloorDiv:
      case Expr::Op::Mod:
      case Expr::Op::Pow:
      case Expr::Op::Concat: fail("not a comparison operator");
    }
    if (a.is_undefined()) fail(a.undefined_message());
    if (b.is_undefined()) fail(b.undefined_message());
    if (op == Expr::Op::Lt) return value_less(a, b);
    if (op == Expr::Op::Gt) return value_less(b, a);
    if (op == Expr::Op::Le) return value_less(a, b) || values_equal(a, b);
    return value_less(b, a) || values_equal(a, b);
  }

  Value repeat(const Value& seq, int64_t n) {
    bool empty = seq.is_string() ? seq.as_string().empty() : seq.as_list().empty();
    if (n <= 0 || empty)
      return seq.is_string() ? Value(std::string()) : Value(List{}, seq.is_tuple());  // '' * 10**18 used to loop
    // A list is limited by the size of its items counted with repeats ([s] * n copies s n times), checked
    // before anything is built.
    size_t unit = seq.is_string() ? seq.as_string().size() : static_cast<size_t>(seq.size() - Value::kItemBytes);
    size_t limit = seq.is_string() ? limits_.max_output_bytes : static_cast<size_t>(Value::kMaxSize);
    if (unit != 0 && static_cast<uint64_t>(n) > limit / unit)
      fail("repetition result is larger than " + std::to_string(limit) + " bytes");
    charge_bytes(unit * static_cast<size_t>(n));
    if (seq.is_string()) {
      std::string out;
      out.reserve(unit * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) out += seq.as_string();
      return Value(std::move(out));
    }
    List out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return Value(std::move(out), seq.is_tuple());
  }

  void check_size(size_t bytes) const {
    if (bytes > limits_.max_output_bytes)
      fail("string result exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }

  Value checked_string(std::string s) {
    check_size(s.size());
    charge_bytes(s.size());
    return Value(std::move(s));
  }

  [[noreturn]] static void unsupported(const char* op, const Value& a, const Value& b) {
    fail(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" + b.type_name() +
         "'");
  }

  Value binary(Expr::Op op, const Value& a, const Value& b) {
    if (op == Expr::Op::Concat) {
      std::string x = py_str(a), y = py_str(b);
      check_size(x.size() + y.size());
      return checked_string(x + y);
    }
    if (a.is_undefined()) fail(a.undefined_message());
    if (b.is_undefined()) fail(b.undefined_message());
    bool ints = a.is_int() && b.is_int(), nums = a.is_number() && b.is_number();
    switch (op) {
      case Expr::Op::Add:
        if (ints) return checked_int(static_cast<__int128>(a.as_int()) + b.as_int());
        if (nums) return Value(a.as_float() + b.as_float());
        if (a.is_string() && b.is_string()) {
          check_size(a.as_string().size() + b.as_string().size());
          return checked_string(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
          if (a.as_list().size() + b.as_list().size() > limits_.max_output_bytes) fail("list result is too long");
          List out = a.as_list();
          out.insert(out.end(), b.as_list().begin(), b.as_list().end());
          charge_bytes(out.size() * 16);
          return Value(std::move(out), a.is_tuple());
        }
        unsupported("+", a, b);
      case Expr::Op::Sub:
        if (ints) return checked_int(static_cast<__int128>(a.as_int()) - b.as_int());
        if (nums) return Value(a.as_float() - b.as_float());
        unsupported("-", a, b);
      case Expr::Op::Mul:
        if (ints) return checked_int(static_cast<__int128>(a.as_int()) * b.as_int());
        if (nums) return Value(a.as_float() * b.as_float());
        if ((a.is_string() || a.is_list()) && b.is_int()) return repeat(a, b.as_int());
        if (a.is_int() && (b.is_string() || b.is_list())) return repeat(b, a.as_int());
        unsupported("*", a, b);
      case Expr::Op::Div:
        if (!nums) unsupported("/", a, b);
        if (b.as_float() == 0) fail("division by zero");
        return Value(a.as_float() / b.as_float());
      case Expr::Op::FloorDiv:
        if (!nums) unsupported("//", a, b);
        if (b.as_float() == 0) fail("integer division or modulo by zero");
        if (ints) {
          if (a.as_int() == std::numeric_limits<int64_t>::min() && b.as_int() == -1) fail("integer overflow");
          return Value(floor_div(a.as_int(), b.as_int()));
        }
        return Value(std::floor(a.as_float() / b.as_float()));
      case Expr::Op::Mod:
        if (a.is_string()) return checked_string(percent_format(a.as_string(), b));
        if (!nums) unsupported("%", a, b);
        if (b.as_float() == 0) fail("integer division or modulo by zero");
        if (ints) {
          if (b.as_int() == -1) return Value(int64_t{0});
          return Value(a.as_int() - floor_div(a.as_int(), b.as_int()) * b.as_int());
        }
        {
          double m = std::fmod(a.as_float(), b.as_float());
          if (m != 0 && ((m < 0) != (b.as_float() < 0))) m += b.as_float();
          return Value(m);
        }
      case Expr::Op::Pow:
        if (!nums) unsupported("**", a, b);
        if (ints && b.as_int() >= 0) {
          __int128 r = 1, base = a.as_int();
          for (int64_t i = 0; i < b.as_int(); ++i) {
            r *= base;
            if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min()) checked_int(r);
            if (r == 0 || r == 1) break;
          }
          return checked_int(r);
        }
        if (a.as_float() == 0 && b.as_float() < 0) fail("0.0 cannot be raised to a negative power");
        return Value(std::pow(a.as_float(), b.as_float()));
      case Expr::Op::Concat:
      case Expr::Op::Eq:
      case Expr::Op::Ne:
      case Expr::Op::Lt:
      case Expr::Op::Le:
      case Expr::Op::Gt:
      case Expr::Op::Ge:
      case Expr::Op::In:
      case Expr::Op::NotIn: break;
    }
    fail("not an arithmetic operator");
  }

  RenderLimits limits_;
  int64_t steps_ = 0;
  int depth_ = 0;    // macro calls
  int nesting_ = 0;  // see Nest
};

void check_expr_names(const Expr* e) {
  if (e == nullptr) return;
  if (e->kind == Expr::Kind::Filter && !has_filter(e->name))
    fail_at(e->line, e->column, "no filter named '" + e->name + "'");
  if (e->kind == Expr::Kind::Test && !has_test(e->name)) fail_at(e->line, e->column, "no test named '" + e->name + "'");
  for (const auto& a : e->args) check_expr_names(a.get());
  for (const auto& k : e->keys) check_expr_names(k.get());
  for (const auto& kv : e->kwargs) check_expr_names(kv.second.get());
}

}  // namespace

void check_names(const Body& program) {
  for (const auto& n : program) {
    check_expr_names(n->expr.get());
    check_expr_names(n->target.get());
    check_expr_names(n->filter.get());
    for (const auto& c : n->conditions) check_expr_names(c.get());
    for (const auto& p : n->params) check_expr_names(p.second.get());
    for (const auto& b : n->bodies) check_names(b);
    check_names(n->body);
    check_names(n->else_body);
  }
}

std::string render_program(const Body& program, const Value& context, const RenderLimits& limits) {
  if (!context.is_dict())
    throw tg::Error("chat template: the render context must be a JSON object, not " + context.type_name());
  return Interpreter(limits).run(program, context);
}

}  // namespace tg::llm::jinja
