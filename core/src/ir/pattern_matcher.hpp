// Pattern matcher and rewrite driver: rule sets are data (pattern + callback) applied to a fixpoint.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/uop.hpp"

namespace tg::ir {

// A pattern over op / dtype / sources. Unset fields match anything; `name` binds the matched node.
struct UPat {
  std::vector<Op> ops;                   // empty: any op
  std::function<bool(const UOp&)> pred;  // extra condition (dtype, arg, bounds...)
  std::optional<std::vector<UPat>> src;  // nullopt: any sources
  std::string name;

  UPat named(std::string n) const {
    UPat p = *this;
    p.name = std::move(n);
    return p;
  }
  UPat where(std::function<bool(const UOp&)> f) const {
    UPat p = *this;
    p.pred = std::move(f);
    return p;
  }
};

namespace pat {
UPat any(std::string name);                                    // any node
UPat cvar(std::string name);                                   // any CONST
UPat cint(int64_t v);                                          // the integer CONST v
UPat op(Op op, std::vector<UPat> src, std::string name = "");  // op with these sources (commutative: both orders)
UPat ops(std::vector<Op> ops, std::string name = "");          // any of these ops, any sources
}  // namespace pat

UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);

class Match {
 public:
  const UOpPtr& operator[](const std::string& name) const;
  bool bind(const std::string& name, const UOpPtr& u);  // false if bound to a different node
  std::vector<std::pair<std::string, UOpPtr>> binds;
};

// A rule returns the replacement, or nullptr for "no match".
using RewriteFn = std::function<UOpPtr(const Match&, const UOpPtr&)>;

// One row of a rule set: {pattern, callback} or {pattern, callback, "name"}. The name is what driver errors
// print; a rule without one is called "<set>#<index>".
struct Rule {
  UPat pat;
  RewriteFn fn;
  std::string name;
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);
  PatternMatcher(std::string set_name, std::vector<Rule> rules);
  // first rule that matches and returns non-null
  UOpPtr rewrite(const UOpPtr& u) const;
  // the same, and which rule it was (index into this set)
  std::pair<UOpPtr, size_t> rewrite_with_rule(const UOpPtr& u) const;
  // the rule's own name, or "<set>#<index>" (`fallback_set` stands in for an unnamed set)
  std::string rule_name(size_t index, const std::string& fallback_set = "rules") const;
  size_t size() const { return rules_.size(); }
  const std::string& set_name() const { return set_name_; }
  // Both sets' rules in order; rules of a named set keep their "<set>#<index>" names.
  PatternMatcher operator+(const PatternMatcher& other) const;

 private:
  std::string set_name_;
  std::vector<Rule> rules_;
  std::vector<std::vector<size_t>> by_op_;  // op -> rule indices (rules with no op listed go everywhere)
  void index();
  std::vector<Rule> named_rules() const;
};

struct RewriteOptions {
  std::string name = "rewrite";  // what errors (and DEBUG output) call this rewrite
  // false (bottom-up): a node's sources reach their fixpoint before rules run on the node.
  // true (top-down): rules run on a node first; its sources are visited once none applies, and the rebuilt
  // node gets the rules again.
  bool top_down = false;
  size_t budget = 250000;  // successful rule applications in one call before giving up (0: no limit)
  // Test mode: a rule cycle (A turns x into y, B turns y back into x) fails naming both rules, and the result
  // is checked to be a fixpoint (no rule applies to any node of it).
  bool converge_check = false;
};

// Rewrites to a fixpoint. Throws tg::Error, naming the rules involved, for a cycle, for a rule whose result
// contains the node it replaced, or when the budget runs out.
UOpPtr rewrite(const UOpPtr& root, const PatternMatcher& pm, const RewriteOptions& opts);

// Bottom-up rewrite with the default budget (the historical entry point).
UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm, const char* name = "rewrite");

// Replaces nodes by identity (keys are raw pointers into the graph of root).
UOpPtr substitute(const UOpPtr& root, const std::vector<std::pair<const UOp*, UOpPtr>>& map);

}  // namespace tg::ir
