// Pattern matching over UOps and the bottom-up fixpoint rewrite driver.
#include "ir/pattern_matcher.hpp"

#include <cassert>
#include <unordered_map>

#include "tg/error.hpp"

namespace tg::ir {

namespace pat {
UPat any(std::string name) { return UPat{.name = std::move(name)}; }
UPat cvar(std::string name) { return UPat{.ops = {Op::CONST}, .name = std::move(name)}; }
UPat cint(int64_t v) {
  return UPat{.ops = {Op::CONST}, .pred = [v](const UOp& u) {
                return std::holds_alternative<int64_t>(u.arg) ? u.arg_int() == v : u.arg_float() == static_cast<double>(v);
              }};
}
UPat op(Op o, std::vector<UPat> src, std::string name) { return UPat{.ops = {o}, .src = std::move(src), .name = std::move(name)}; }
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

bool match(const UPat& p, const UOpPtr& u, Match& m);

bool match_src(const std::vector<UPat>& ps, const UOpPtr& u, Match& m, bool swap) {
  if (ps.size() != u->src.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i) {
    size_t j = swap ? ps.size() - 1 - i : i;
    if (!match(ps[i], u->src[j], m)) return false;
  }
  return true;
}

bool match(const UPat& p, const UOpPtr& u, Match& m) {
  if (!p.ops.empty() && std::find(p.ops.begin(), p.ops.end(), u->op) == p.ops.end()) return false;
  if (p.pred && !p.pred(*u)) return false;
  if (!p.name.empty() && !m.bind(p.name, u)) return false;
  if (!p.src) return true;
  Match saved = m;
  if (match_src(*p.src, u, m, false)) return true;
  if (!is_commutative(u->op) || p.src->size() != 2) return false;
  m = std::move(saved);
  return match_src(*p.src, u, m, true);
}

}  // namespace

PatternMatcher::PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules) : rules_(std::move(rules)) { index(); }

void PatternMatcher::index() {
  by_op_.assign(static_cast<size_t>(Op::COUNT_), {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& ops = rules_[i].first.ops;
    for (size_t o = 0; o < by_op_.size(); ++o)
      if (ops.empty() || std::find(ops.begin(), ops.end(), static_cast<Op>(o)) != ops.end()) by_op_[o].push_back(i);
  }
}

UOpPtr PatternMatcher::rewrite(const UOpPtr& u) const {
  for (size_t i : by_op_[static_cast<size_t>(u->op)]) {
    Match m;
    if (!match(rules_[i].first, u, m)) continue;
    if (UOpPtr r = rules_[i].second(m, u); r && r.get() != u.get()) return r;
  }
  return nullptr;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& other) const {
  auto rules = rules_;
  rules.insert(rules.end(), other.rules_.begin(), other.rules_.end());
  return PatternMatcher(std::move(rules));
}

namespace {

struct Rewriter {
  const PatternMatcher& pm;
  const char* name;
  std::unordered_map<const UOp*, UOpPtr> memo;
  int depth = 0;

  UOpPtr rw(const UOpPtr& u) {
    if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
    if (++depth > 20000) throw Error(std::string("graph_rewrite '") + name + "': rules do not reach a fixpoint");
    std::vector<UOpPtr> src;
    src.reserve(u->src.size());
    bool changed = false;
    for (const auto& s : u->src) {
      src.push_back(rw(s));
      changed |= src.back().get() != s.get();
    }
    UOpPtr n = changed ? u->replace_src(std::move(src)) : u;
    UOpPtr r = pm.rewrite(n);
    UOpPtr out = r ? rw(r) : n;
    --depth;
    memo.emplace(u.get(), out);
    memo.emplace(out.get(), out);
    keep.push_back(u);
    return out;
  }
  std::vector<UOpPtr> keep;  // memo keys are raw pointers: keep them alive so addresses are not reused
};

}  // namespace

UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm, const char* name) {
  Rewriter r{pm, name};
  return r.rw(root);
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
