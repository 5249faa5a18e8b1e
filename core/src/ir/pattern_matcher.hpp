// Pattern matcher and rewrite driver: rule sets are data (pattern + callback) applied to a fixpoint.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/uop.hpp"

namespace tg::ir {

// A pattern over op / dtype / sources. Unset fields match anything; `name` binds the matched node.
struct UPat {
  std::vector<Op> ops;                       // empty: any op
  std::function<bool(const UOp&)> pred;      // extra condition (dtype, arg, bounds...)
  std::optional<std::vector<UPat>> src;      // nullopt: any sources
  std::string name;

  UPat named(std::string n) const { UPat p = *this; p.name = std::move(n); return p; }
  UPat where(std::function<bool(const UOp&)> f) const { UPat p = *this; p.pred = std::move(f); return p; }
};

namespace pat {
UPat any(std::string name);                                       // any node
UPat cvar(std::string name);                                      // any CONST
UPat cint(int64_t v);                                             // the integer CONST v
UPat op(Op op, std::vector<UPat> src, std::string name = "");     // op with these sources (commutative: both orders)
UPat ops(std::vector<Op> ops, std::string name = "");             // any of these ops, any sources
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

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules);
  // first rule that matches and returns non-null
  UOpPtr rewrite(const UOpPtr& u) const;
  PatternMatcher operator+(const PatternMatcher& other) const;

 private:
  std::vector<std::pair<UPat, RewriteFn>> rules_;
  std::vector<std::vector<size_t>> by_op_;  // op -> rule indices (rules with no op listed go everywhere)
  void index();
};

// Rewrites bottom-up to a fixpoint: sources first, then rules on the node until none applies.
// Throws tg::Error if a node keeps changing past the budget (a cycle in the rules).
UOpPtr graph_rewrite(const UOpPtr& root, const PatternMatcher& pm, const char* name = "rewrite");

// Replaces nodes by identity (keys are raw pointers into the graph of root).
UOpPtr substitute(const UOpPtr& root, const std::vector<std::pair<const UOp*, UOpPtr>>& map);

}  // namespace tg::ir
