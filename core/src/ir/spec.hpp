// IR specs as rule sets: each rule looks at one node and says "allowed" or "refused, because ...". A node no
// rule matches is refused. verify() walks a graph and names the first offending node.
//   pm_spec_kernel: what a scheduled kernel's sink (lower_kernel's input) may contain.
#pragma once

#include <optional>
#include <string>

#include "ir/pattern_matcher.hpp"

namespace tg::ir {

// A spec rule's answers (a spec rule returns one of these; nullptr means "not mine", as in any rule set).
UOpPtr spec_ok();
UOpPtr spec_refuse(const std::string& why);

// Scheduled kernels: a SINK of statements (STOREs; custom kernels also END/BARRIER/CUSTOM/AFTER), loads and
// stores through a PARAM/DEFINE_REG/DEFINE_LOCAL/AFTER at an int index (bool gate), RANGEs with int ends,
// REDUCEs over RANGEs, ALU ops with operands of matching dtypes; no tensor-graph op.
const PatternMatcher& pm_spec_kernel();

// The first node of root's graph the spec refuses: "spec 'kernel': <why>: <node>", or nullopt.
std::optional<std::string> check_spec(const UOpPtr& root, const PatternMatcher& spec);

// Throws tg::Error "tg: kernel <name>: ..." when the spec refuses a node.
void verify(const UOpPtr& root, const PatternMatcher& spec, const std::string& kernel_name);

}  // namespace tg::ir
