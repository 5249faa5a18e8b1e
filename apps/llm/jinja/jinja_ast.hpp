// Jinja syntax tree: expressions and statements as the parser builds them and the interpreter walks them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

struct Expr;
struct Node;
using ExprPtr = std::unique_ptr<Expr>;
using Body = std::vector<std::unique_ptr<Node>>;

struct Expr {
  enum class Kind {
    Literal,      // value
    Name,         // name
    Attr,         // args[0].name
    Item,         // args[0][args[1]]
    Slice,        // args[0][args[1]:args[2]:args[3]], absent parts are null
    Call,         // args[0](args[1..], kwargs)
    Filter,       // args[0] | name(args[1..], kwargs)
    Test,         // args[0] is [not] name(args[1..], kwargs); `negate`
    Neg,          // -args[0]
    Pos,          // +args[0]
    Not,          // not args[0]
    Binary,       // args[0] op args[1]
    And,          // args[0] and args[1]
    Or,           // args[0] or args[1]
    Compare,      // args[0] ops[0] args[1] ops[1] args[2] ... (chained as in Python)
    Conditional,  // args[1] if args[0] else args[2] (args[2] may be null)
    List,         // [args...]
    Tuple,        // (args...)
    Dict,         // {keys[i]: args[i]}
  };
  enum class Op { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

  Kind kind;
  int line = 0, column = 0;
  Value value;                // Literal
  std::string name;           // Name, Attr, Filter, Test
  bool negate = false;        // Test
  Op op = Op::Add;            // Binary
  std::vector<Op> ops;        // Compare
  std::vector<ExprPtr> args;  // operands, in the order documented above (entries may be null for Slice)
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call, Filter, Test
  std::vector<ExprPtr> keys;                            // Dict
};

struct Node {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // if exprs[i]: bodies[i] ... else: else_body
    For,          // for targets in expr [if filter]: body else: else_body
    Set,          // set targets = expr, or set expr(.attr) = value for namespaces
    SetBlock,     // set targets[0] %}body{% endset
    Macro,        // macro name(params=defaults): body
    CallBlock,    // call(params) expr: body (the body becomes `caller`)
    FilterBlock,  // filter name(args): body; expr holds the filter applied to a placeholder
    Break,
    Continue,
  };

  Kind kind;
  int line = 0, column = 0;
  std::string text;                  // Text; Macro name; Set attribute for `set ns.attr = ...`
  ExprPtr expr;                      // Output, For iterable, Set value, CallBlock call, FilterBlock filter
  ExprPtr target;                    // Set: the namespace expression for `set ns.attr`, else null
  ExprPtr filter;                    // For: the `if` condition
  std::vector<std::string> targets;  // For/Set/SetBlock names (several to unpack tuples)
  std::vector<ExprPtr> conditions;   // If
  std::vector<Body> bodies;          // If: one per condition
  Body body;                         // For, SetBlock, Macro, CallBlock, FilterBlock
  Body else_body;                    // If, For
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro, CallBlock: name and default (may be null)
  bool uses_loop = true;  // For: whether the body names `loop` (if not, no loop object is built)
};

// Whether `name` appears as a variable anywhere in `body` (conservatively, in nested blocks too).
bool mentions_name(const Body& body, const std::string& name);
bool mentions_name_in(const Expr* e, const std::string& name);  // e may be null

}  // namespace tg::llm::jinja
