// Pattern matching over UOps and the fixpoint rewrite driver (bottom-up or top-down, budget, cycle checks).
#include "ir/pattern_matcher.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "tg/error.hpp"

namespace tg::ir {

namespace pat {
UPat any(std::string name) { return UPat{.name = std::move(name)}; }
UPat cvar(std::string name) { return UPat{.ops = {Op::CONST}, .name = std::move(name)}; }
UPat cint(int64_t v) {
  return UPat{.ops = {Op::CONST}, .pred = [v](const UOp& u) {
                return std::holds_alternative<int64_t>(u.arg) ? u.arg_int() == v
                                                              : u.arg_float() == static_cast<double>(v);
              }};
}
UPat op(Op o, std::vector<UPat> src, std::string name) {
  return UPat{.ops = {o}, .src = std::move(src), .name = std::move(name)};
}
UPat ops(std::vector<Op> o, std::string name) { return UPat{.ops = std::move(o), .name = std::move(name)}; }
}  // namespace pat

UPat operator+(const UPat& a, const UPat& b) { return pat::op(Op::ADD, {a, b}); }
UPat operator*(const UPat& a, const UPat& b) { return pat::op(Op::MUL, {a, b}); }

const UOpPtr& Match::operator[](const std::string& name) const {
  for (auto& [n, u] : binds)
    if (n == name) return u;
  assert(false && "pattern name not bound");
  static UOpPtr null;
  return null;
}

bool Match::bind(const std::string& name, const UOpPtr& u) {
  for (auto& [n, v] : binds)
    if (n == name) return v.get() == u.get();
  binds.emplace_back(name, u);
  return true;
}

namespace {

// A borrowed callable "and then": what must also hold once a pattern matched (the rest of the sources, the rule's
// callback). Matching backtracks through it, so every way a commutative node can match is tried.
class Then {
 public:
  template <class F>
  explicit Then(const F& f) : obj_(&f), call_([](const void* o, Match& m) { return (*static_cast<const F*>(o))(m); }) {}
  bool operator()(Match& m) const { return call_(obj_, m); }

 private:
  const void* obj_;
  bool (*call_)(const void*, Match&);
};

bool match(const UPat& p, const UOpPtr& u, Match& m, Then then);

bool match_src(const std::vector<UPat>& ps, const UOpPtr& u, size_t i, bool swap, Match& m, Then then) {
  if (i == ps.size()) return then(m);
  size_t j = swap ? ps.size() - 1 - i : i;
  auto rest = [&](Match& mm) { return match_src(ps, u, i + 1, swap, mm, then); };
  return match(ps[i], u->src[j], m, Then(rest));
}

// True once `then` accepted a set of bindings; on false, m is as it was.
bool match(const UPat& p, const UOpPtr& u, Match& m, Then then) {
  if (!p.ops.empty() && std::find(p.ops.begin(), p.ops.end(), u->op) == p.ops.end()) return false;
  if (p.pred && !p.pred(*u)) return false;
  if (p.src && p.src->size() != u->src.size()) return false;
  size_t mark = m.binds.size();
  if (!p.name.empty() && !m.bind(p.name, u)) return false;
  bool ok = !p.src ? then(m)
                   : match_src(*p.src, u, 0, false, m, then) ||
                         (is_commutative(u->op) && p.src->size() == 2 && match_src(*p.src, u, 0, true, m, then));
  if (!ok) m.binds.resize(mark);
  return ok;
}

}  // namespace

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) { index(); }

PatternMatcher::PatternMatcher(std::string set_name, std::vector<Rule> rules)
    : set_name_(std::move(set_name)), rules_(std::move(rules)) {
  index();
}

void PatternMatcher::index() {
  by_op_.assign(static_cast<size_t>(Op::COUNT_), {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& ops = rules_[i].pat.ops;
    for (size_t o = 0; o < by_op_.size(); ++o)
      if (ops.empty() || std::find(ops.begin(), ops.end(), static_cast<Op>(o)) != ops.end()) by_op_[o].push_back(i);
  }
}

std::pair<UOpPtr, size_t> PatternMatcher::rewrite_with_rule(const UOpPtr& u) const {
  for (size_t i : by_op_[static_cast<size_t>(u->op)]) {
    Match m;
    UOpPtr r;
    auto apply = [&](Match& mm) {
      r = rules_[i].fn(mm, u);
      return r && r.get() != u.get();
    };
    if (match(rules_[i].pat, u, m, Then(apply))) return {r, i};
  }
  return {nullptr, rules_.size()};
}

UOpPtr PatternMatcher::rewrite(const UOpPtr& u) const { return rewrite_with_rule(u).first; }

std::string PatternMatcher::rule_name(size_t index, const std::string& fallback_set) const {
  assert(index < rules_.size() && "rule index out of range");
  if (!rules_[index].name.empty()) return rules_[index].name;
  return (set_name_.empty() ? fallback_set : set_name_) + "#" + std::to_string(index);
}

std::vector<Rule> PatternMatcher::named_rules() const {
  std::vector<Rule> out = rules_;
  if (set_name_.empty()) return out;
  for (size_t i = 0; i < out.size(); ++i) out[i].name = rule_name(i);
  return out;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& other) const {
  auto rules = named_rules();
  auto more = other.named_rules();
  rules.insert(rules.end(), more.begin(), more.end());
  return PatternMatcher(std::move(rules));
}

namespace {

constexpr int kMaxDepth = 20000;  // recursion guard: the driver recurses once per level of the graph

class Driver {
 public:
  Driver(const PatternMatcher& pm, const RewriteOptions& opts) : pm_(pm), o_(opts) {}

  UOpPtr rw(const UOpPtr& u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    if (auto it = active_.find(u.get()); it != active_.end()) throw contains_itself(u, *it->second);
    if (++depth_ > kMaxDepth) throw fail("the graph is deeper than " + std::to_string(kMaxDepth) + " nodes");
    Position p;
    enter(p, u);
    UOpPtr cur = u;
    while (true) {
      if (o_.top_down) {
        if (auto [r, rule] = pm_.rewrite_with_rule(cur); r) {
          step(p, cur, r, rule);
          enter(p, r);
          cur = r;
          continue;
        }
        UOpPtr n = rebuild(cur);
        if (n.get() == cur.get()) break;
        enter(p, n);
        cur = n;
        continue;
      }
      UOpPtr n = rebuild(cur);
      if (n.get() != cur.get()) enter(p, n);
      auto [r, rule] = pm_.rewrite_with_rule(n);
      if (!r) {
        cur = n;
        break;
      }
      step(p, n, r, rule);
      enter(p, r);
      cur = r;
    }
    for (const UOpPtr& n : p.seen) {
      active_.erase(n.get());
      memo_.emplace(n.get(), cur);
      keep_.push_back(n);
    }
    memo_.emplace(cur.get(), cur);
    --depth_;
    return cur;
  }

  // Test mode: no rule applies anywhere in the result.
  void check_fixpoint(const UOpPtr& root) const {
    for (const UOp* u : toposort(std::span(&root, 1)))
      if (auto [r, rule] = pm_.rewrite_with_rule(u->ptr()); r)
        throw fail("the result is not a fixpoint: rule '" + name(rule) + "' still rewrites " + u->str(3));
  }

 private:
  // The nodes one position of the graph went through (all get its final result) and the rules applied there.
  struct Position {
    std::vector<UOpPtr> seen;
    std::vector<UOpPtr> fired_on;
    std::vector<size_t> rules;
    size_t last_rule = SIZE_MAX;
  };

  const PatternMatcher& pm_;
  const RewriteOptions& o_;
  std::unordered_map<const UOp*, UOpPtr> memo_;
  // nodes whose rewrite is in progress -> the last rule applied at their position; meeting one again means a
  // rule's result contains the node it came from, which can only grow forever
  std::unordered_map<const UOp*, const size_t*> active_;
  std::vector<UOpPtr> keep_;  // memo keys are raw pointers: keep them alive so addresses are not reused
  size_t applied_ = 0;
  int depth_ = 0;

  std::string name(size_t rule) const { return pm_.rule_name(rule, o_.name); }
  Error fail(const std::string& what) const { return Error("graph_rewrite '" + o_.name + "': " + what); }

  void enter(Position& p, const UOpPtr& n) {
    if (active_.emplace(n.get(), &p.last_rule).second) p.seen.push_back(n);
  }

  UOpPtr rebuild(const UOpPtr& u) {
    std::vector<UOpPtr> src;
    src.reserve(u->src.size());
    bool changed = false;
    for (const auto& s : u->src) {
      src.push_back(rw(s));
      changed |= src.back().get() != s.get();
    }
    return changed ? u->replace_src(std::move(src)) : u;
  }

  void step(Position& p, const UOpPtr& from, const UOpPtr& to, size_t rule) {
    p.last_rule = rule;
    if (o_.budget != 0 && ++applied_ > o_.budget)
      throw fail("no fixpoint after " + std::to_string(o_.budget) + " rewrites; the last, rule '" + name(rule) +
                 "', turned " + from->str(3) + " into " + to->str(3));
    if (!o_.converge_check) return;
    p.fired_on.push_back(from);
    p.rules.push_back(rule);
    for (size_t k = 0; k < p.fired_on.size(); ++k)
      if (p.fired_on[k].get() == to.get()) throw cycle(std::span(p.rules).subspan(k), to);
  }

  Error cycle(std::span<const size_t> rules, const UOpPtr& at) const {
    std::vector<size_t> distinct;
    for (size_t r : rules)
      if (std::find(distinct.begin(), distinct.end(), r) == distinct.end()) distinct.push_back(r);
    std::string where = " on " + at->str(3);
    if (distinct.size() == 1) return fail("rule '" + name(distinct[0]) + "' undoes itself" + where);
    if (distinct.size() == 2)
      return fail("rules '" + name(distinct[0]) + "' and '" + name(distinct[1]) + "' undo each other" + where);
    std::string list;
    for (size_t i = 0; i < distinct.size(); ++i)
      list += (i == 0 ? "'" : i + 1 == distinct.size() ? " and '" : ", '") + name(distinct[i]) + "'";
    return fail("rules " + list + " form a cycle" + where);
  }

  Error contains_itself(const UOpPtr& u, size_t rule) const {
    if (rule == SIZE_MAX) return fail("a rule's result contains the node it replaced, " + u->str(3));
    return fail("rule '" + name(rule) + "' rewrote " + u->str(3) + " into a graph that contains it");
  }
};

}  // namespace

UOpPtr rewrite(const UOpPtr& root, const PatternMatcher& pm, const RewriteOptions& opts) {
  Driver d(pm, opts);
  UOpPtr out = d.rw(root);
  if (opts.converge_check) d.check_fixpoint(out);
  return out;
}

UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm, const char* name) {
  return rewrite(root, pm, {.name = name});
}

UOpPtr substitute(const UOpPtr& root, const std::vector<std::pair<const UOp*, UOpPtr>>& map) {
  std::unordered_map<const UOp*, UOpPtr> memo(map.begin(), map.end());
  std::function<UOpPtr(const UOpPtr&)> go = [&](const UOpPtr& u) -> UOpPtr {
    if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
    std::vector<UOpPtr> src;
    bool changed = false;
    for (const auto& s : u->src) {
      src.push_back(go(s));
      changed |= src.back().get() != s.get();
    }
    UOpPtr out = changed ? u->replace_src(std::move(src)) : u;
    memo.emplace(u.get(), out);
    return out;
  };
  return go(root);
}

}  // namespace tg::ir
