// Jinja parser. Precedence, loosest first, as in jinja2: `a if c else b`, or, and, not, comparisons and `in`
// (chained), + -, ~, * / // %, **, unary - +, then postfix (. [] ()), then filters `|` and tests `is`.
#include "jinja/jinja_parser.hpp"

#include <initializer_list>

namespace tg::llm::jinja {

namespace {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Text: return "template text";
    case TokenKind::VarBegin: return "'{{'";
    case TokenKind::VarEnd: return "'}}'";
    case TokenKind::BlockBegin: return "'{%'";
    case TokenKind::BlockEnd: return "'%}'";
    case TokenKind::Name: return "'" + t.text + "'";
    case TokenKind::String: return "string literal";
    case TokenKind::Int:
    case TokenKind::Float: return "number " + t.text;
    case TokenKind::Op: return "'" + t.text + "'";
    case TokenKind::End: return "end of template";
  }
  return "token";
}

std::string join_names(std::initializer_list<const char*> names) {
  std::string out;
  size_t i = 0;
  for (const char* n : names) {
    if (i) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + std::string(n) + "'";
    ++i;
  }
  return out;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : toks_(tokens) {}

  Body parse_template() {
    Body body = subparse({}, nullptr);
    if (peek().kind != TokenKind::End) error(peek(), "unexpected " + describe(peek()));
    return body;
  }

 private:
  // Counts nesting on the way down; the limit keeps recursion bounded for any input.
  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxParseDepth)
        p.error(at, "template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // A chain (a + b + c, x.y.z, v | f | g) deepens the tree one level per link while the loop that parses it
  // does not recurse, so each link counts against the depth too: evaluating, checking and destroying the
  // tree recurse through every level.
  struct ChainGuard {
    Parser& p;
    int links = 0;
    explicit ChainGuard(Parser& parser) : p(parser) {}
    void link(const Token& at) {
      ++links;
      if (++p.depth_ > kMaxParseDepth)
        p.error(at, "template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
    }
    ~ChainGuard() { p.depth_ -= links; }
  };

  [[noreturn]] void error(const Token& t, const std::string& msg) const { throw_template_error(t.line, t.column, msg); }

  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Op && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op, const char* context) {
    if (!accept_op(op)) error(peek(), std::string("expected '") + op + "' " + context + ", got " + describe(peek()));
  }
  std::string expect_identifier(const char* context) {
    if (peek().kind != TokenKind::Name)
      error(peek(), std::string("expected a name ") + context + ", got " + describe(peek()));
    return next().text;
  }
  void expect_block_end(const char* after) {
    if (peek().kind != TokenKind::BlockEnd)
      error(peek(), std::string("expected '%}' after ") + after + ", got " + describe(peek()));
    next();
  }

  template <typename T>
  static std::unique_ptr<T> make(typename T::Kind kind, const Token& at) {
    auto n = std::make_unique<T>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // ---- statements ----

  // Parses until a `{% name %}` with name in `ends` (left unconsumed) or the end of the template.
  Body subparse(std::initializer_list<const char*> ends, const Token* opener) {
    struct OpenBlock {  // what a stray end tag inside this block is told was expected
      Parser& p;
      bool pushed;
      OpenBlock(Parser& parser, std::string expects, bool push) : p(parser), pushed(push) {
        if (pushed) p.open_blocks_.push_back(std::move(expects));
      }
      ~OpenBlock() {
        if (pushed) p.open_blocks_.pop_back();
      }
    } open(*this, join_names(ends), opener != nullptr);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::End) {
        if (opener != nullptr)
          error(*opener,
                "unexpected end of template: the '" + opener->text + "' block opened here expects " + join_names(ends));
        return body;
      }
      if (t.kind == TokenKind::Text) {
        auto n = make<Node>(Node::Kind::Text, t);
        n->text = next().text;
        body.push_back(std::move(n));
        continue;
      }
      if (t.kind == TokenKind::VarBegin) {
        next();
        auto n = make<Node>(Node::Kind::Output, t);
        n->expr = parse_tuple(true);
        if (peek().kind != TokenKind::VarEnd) error(peek(), "expected '}}', got " + describe(peek()));
        next();
        body.push_back(std::move(n));
        continue;
      }
      if (t.kind != TokenKind::BlockBegin) error(t, "unexpected " + describe(t));
      const Token& name = peek(1);
      for (const char* end : ends)
        if (name.kind == TokenKind::Name && name.text == end) return body;
      next();
      parse_statement(name, body);
    }
  }

  void parse_statement(const Token& name, Body& body) {
    DepthGuard guard(*this, name);
    if (name.kind != TokenKind::Name) error(name, "expected a statement name after '{%', got " + describe(name));
    const std::string& n = name.text;
    if (n == "if") return body.push_back(parse_if());
    if (n == "for") return body.push_back(parse_for());
    if (n == "set") return body.push_back(parse_set());
    if (n == "macro") return body.push_back(parse_macro());
    if (n == "call") return body.push_back(parse_call_block());
    if (n == "filter") return body.push_back(parse_filter_block());
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) error(name, "'" + n + "' outside a loop");
      auto node = make<Node>(n == "break" ? Node::Kind::Break : Node::Kind::Continue, next());
      expect_block_end(n.c_str());
      return body.push_back(std::move(node));
    }
    if (n == "generation") {
      // transformers' {% generation %} marks assistant text for masks; it renders its body unchanged.
      const Token& opener = next();
      expect_block_end("'generation'");
      Body inner = subparse({"endgeneration"}, &opener);
      end_block("endgeneration");
      for (auto& node : inner) body.push_back(std::move(node));
      return;
    }
    if (n.rfind("end", 0) == 0 || n == "elif" || n == "else")
      error(name, "unexpected '" + n + "'" +
                      (open_blocks_.empty() ? std::string(", no block is open") : ", expected " + open_blocks_.back()));
    if (n == "include" || n == "import" || n == "from" || n == "extends" || n == "block")
      error(name, "'" + n + "' is not supported in chat templates (there are no other templates to load)");
    error(name, "unknown statement '" + n + "'");
  }

  void end_block(const char* name) {
    next();  // {%
    next();  // the end name, already matched by subparse
    expect_block_end(("'" + std::string(name) + "'").c_str());
  }

  std::unique_ptr<Node> parse_if() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::If, opener);
    node->conditions.push_back(parse_tuple(false));
    expect_block_end("the 'if' condition");
    while (true) {
      node->bodies.push_back(subparse({"elif", "else", "endif"}, &opener));
      next();  // {%
      std::string which = next().text;
      if (which == "elif") {
        node->conditions.push_back(parse_tuple(false));
        expect_block_end("the 'elif' condition");
        continue;
      }
      if (which == "else") {
        expect_block_end("'else'");
        node->else_body = subparse({"endif"}, &opener);
        end_block("endif");
        return node;
      }
      expect_block_end("'endif'");
      return node;
    }
  }

  std::vector<std::string> parse_targets(const char* context) {
    std::vector<std::string> names;
    bool paren = accept_op("(");
    do {
      names.push_back(expect_identifier(context));
    } while (accept_op(","));
    if (paren) expect_op(")", context);
    return names;
  }

  std::unique_ptr<Node> parse_for() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::For, opener);
    node->targets = parse_targets("after 'for'");
    if (!accept_name("in")) error(peek(), "expected 'in' after the loop variable, got " + describe(peek()));
    node->expr = parse_tuple(false);
    if (accept_name("if")) node->filter = parse_expression(true);
    if (is_name("recursive")) error(peek(), "recursive loops are not supported");
    expect_block_end("the 'for' header");
    ++loop_depth_;
    node->body = subparse({"else", "endfor"}, &opener);
    --loop_depth_;
    node->uses_loop =
        mentions_name(node->body, "loop") || (node->filter && mentions_name_in(node->filter.get(), "loop"));
    if (is_name("else", 1)) {
      end_block("else");
      node->else_body = subparse({"endfor"}, &opener);
    }
    end_block("endfor");
    return node;
  }

  std::unique_ptr<Node> parse_set() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::Set, opener);
    if (peek().kind == TokenKind::Name && is_op(".", 1)) {
      // set ns.attr = value
      auto ns = make<Expr>(Expr::Kind::Name, peek());
      ns->name = next().text;
      next();
      node->target = std::move(ns);
      node->text = expect_identifier("after '.' in 'set'");
      expect_op("=", "in 'set'");
      node->expr = parse_tuple(true);
      expect_block_end("the 'set' value");
      return node;
    }
    node->targets = parse_targets("after 'set'");
    if (accept_op("=")) {
      node->expr = parse_tuple(true);
      expect_block_end("the 'set' value");
      return node;
    }
    if (node->targets.size() != 1) error(opener, "a 'set' block assigns exactly one name");
    expect_block_end("the 'set' name");
    node->kind = Node::Kind::SetBlock;
    node->body = subparse({"endset"}, &opener);
    end_block("endset");
    return node;
  }

  void parse_params(Node& node, const char* context) {
    expect_op("(", context);
    while (!is_op(")")) {
      std::string pname = expect_identifier(context);
      ExprPtr def;
      if (accept_op("=")) def = parse_expression(true);
      node.params.emplace_back(std::move(pname), std::move(def));
      if (!accept_op(",")) break;
    }
    expect_op(")", context);
  }

  std::unique_ptr<Node> parse_macro() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::Macro, opener);
    node->text = expect_identifier("after 'macro'");
    parse_params(*node, "in the macro's parameter list");
    expect_block_end("the macro signature");
    int saved = loop_depth_;
    loop_depth_ = 0;  // a loop around a macro definition does not make `break` valid inside it
    node->body = subparse({"endmacro"}, &opener);
    loop_depth_ = saved;
    end_block("endmacro");
    return node;
  }

  std::unique_ptr<Node> parse_call_block() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::CallBlock, opener);
    if (is_op("(")) parse_params(*node, "in the call block's parameter list");
    node->expr = parse_expression(true);
    if (node->expr->kind != Expr::Kind::Call) error(opener, "expected a macro call after 'call'");
    expect_block_end("the call expression");
    int saved = loop_depth_;
    loop_depth_ = 0;
    node->body = subparse({"endcall"}, &opener);
    loop_depth_ = saved;
    end_block("endcall");
    return node;
  }

  std::unique_ptr<Node> parse_filter_block() {
    const Token& opener = next();
    auto node = make<Node>(Node::Kind::FilterBlock, opener);
    // The filters apply to a name no template can spell; the interpreter binds it to the rendered body.
    ExprPtr input = make<Expr>(Expr::Kind::Name, opener);
    input->name = " filter body";
    node->expr = parse_filter(std::move(input));
    ChainGuard chain(*this);
    while (is_op("|")) {
      chain.link(peek());
      node->expr = parse_filter(std::move(node->expr));
    }
    expect_block_end("the filter");
    node->body = subparse({"endfilter"}, &opener);
    end_block("endfilter");
    return node;
  }

  // ---- expressions ----

  bool is_tuple_end() const {
    const Token& t = peek();
    return t.kind == TokenKind::VarEnd || t.kind == TokenKind::BlockEnd || (t.kind == TokenKind::Op && t.text == ")") ||
           t.kind == TokenKind::End;
  }

  // `a, b` makes a tuple where a single expression is also allowed (output, set, for, if, parentheses).
  ExprPtr parse_tuple(bool with_condexpr, bool parenthesized = false) {
    const Token& start = peek();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty() && !accept_op(",")) break;
      if (!items.empty()) is_tuple = true;
      if (is_tuple_end()) break;
      items.push_back(parse_expression(with_condexpr));
    }
    if (items.empty() && !parenthesized) error(peek(), "expected an expression, got " + describe(peek()));
    if (items.size() == 1 && !is_tuple) return std::move(items[0]);
    auto t = make<Expr>(Expr::Kind::Tuple, start);
    t->args = std::move(items);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, peek());
    if (!with_condexpr) return parse_or();
    ExprPtr expr = parse_or();
    ChainGuard chain(*this);
    while (is_name("if")) {
      chain.link(peek());
      auto cond = make<Expr>(Expr::Kind::Conditional, next());
      cond->args.push_back(parse_or());
      cond->args.push_back(std::move(expr));
      cond->args.push_back(accept_name("else") ? parse_expression(true) : nullptr);
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, ExprPtr a, ExprPtr b) {
    auto e = make<Expr>(kind, at);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    ChainGuard chain(*this);
    while (is_name("or")) {
      chain.link(peek());
      const Token& t = next();
      e = binary(Expr::Kind::Or, t, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    ChainGuard chain(*this);
    while (is_name("and")) {
      chain.link(peek());
      const Token& t = next();
      e = binary(Expr::Kind::And, t, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (!is_name("not")) return parse_compare();
    DepthGuard guard(*this, peek());
    auto e = make<Expr>(Expr::Kind::Not, next());
    e->args.push_back(parse_not());
    return e;
  }

  ExprPtr parse_compare() {
    const Token& start = peek();
    ExprPtr first = parse_math1();
    auto cmp = make<Expr>(Expr::Kind::Compare, start);
    while (true) {
      static const std::pair<const char*, Expr::Op> kOps[] = {{"==", Expr::Op::Eq}, {"!=", Expr::Op::Ne},
                                                              {"<", Expr::Op::Lt},  {"<=", Expr::Op::Le},
                                                              {">", Expr::Op::Gt},  {">=", Expr::Op::Ge}};
      bool matched = false;
      for (const auto& [text, op] : kOps) {
        if (!is_op(text)) continue;
        next();
        cmp->ops.push_back(op);
        matched = true;
        break;
      }
      if (!matched && is_name("in")) {
        next();
        cmp->ops.push_back(Expr::Op::In);
      } else if (!matched && is_name("not") && is_name("in", 1)) {
        next();
        next();
        cmp->ops.push_back(Expr::Op::NotIn);
      } else if (!matched) {
        break;
      }
      if (cmp->args.empty()) cmp->args.push_back(std::move(first));
      cmp->args.push_back(parse_math1());
    }
    if (cmp->ops.empty()) return first;
    return cmp;
  }

  ExprPtr arith(const Token& at, Expr::Op op, ExprPtr a, ExprPtr b) {
    auto e = binary(Expr::Kind::Binary, at, std::move(a), std::move(b));
    e->op = op;
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    ChainGuard chain(*this);
    while (is_op("+") || is_op("-")) {
      chain.link(peek());
      const Token& t = next();
      e = arith(t, t.text == "+" ? Expr::Op::Add : Expr::Op::Sub, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    ChainGuard chain(*this);
    while (is_op("~")) {
      chain.link(peek());
      const Token& t = next();
      e = arith(t, Expr::Op::Concat, std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    ChainGuard chain(*this);
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain.link(peek());
      const Token& t = next();
      Expr::Op op = t.text == "*"    ? Expr::Op::Mul
                    : t.text == "/"  ? Expr::Op::Div
                    : t.text == "//" ? Expr::Op::FloorDiv
                                     : Expr::Op::Mod;
      e = arith(t, op, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    ChainGuard chain(*this);
    while (is_op("**")) {
      chain.link(peek());
      const Token& t = next();
      e = arith(t, Expr::Op::Pow, std::move(e), parse_unary(true));
    }
    return e;
  }

  // jinja2 applies a filter after a unary minus to the negated value: -3|abs is abs(-3).
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this, peek());
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make<Expr>(t.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, t);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr literal(const Token& at, Value v) {
    auto e = make<Expr>(Expr::Kind::Literal, at);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::Name: {
        next();
        if (t.text == "true" || t.text == "True") return literal(t, Value(true));
        if (t.text == "false" || t.text == "False") return literal(t, Value(false));
        if (t.text == "none" || t.text == "None") return literal(t, Value::none());
        auto e = make<Expr>(Expr::Kind::Name, t);
        e->name = t.text;
        return e;
      }
      case TokenKind::String: {
        std::string s = next().text;
        while (peek().kind == TokenKind::String) s += next().text;  // adjacent literals concatenate
        return literal(t, Value(std::move(s)));
      }
      case TokenKind::Int: return literal(next(), Value(t.int_value));
      case TokenKind::Float: return literal(next(), Value(t.float_value));
      case TokenKind::Op:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(true, true);
          expect_op(")", "to close '('");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      case TokenKind::Text:
      case TokenKind::VarBegin:
      case TokenKind::VarEnd:
      case TokenKind::BlockBegin:
      case TokenKind::BlockEnd:
      case TokenKind::End: break;
    }
    error(t, "expected an expression, got " + describe(t));
  }

  ExprPtr parse_list() {
    auto e = make<Expr>(Expr::Kind::List, next());
    while (!is_op("]")) {
      e->args.push_back(parse_expression(true));
      if (!accept_op(",")) break;
    }
    expect_op("]", "to close the list");
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make<Expr>(Expr::Kind::Dict, next());
    while (!is_op("}")) {
      e->keys.push_back(parse_expression(true));
      expect_op(":", "after a dict key");
      e->args.push_back(parse_expression(true));
      if (!accept_op(",")) break;
    }
    expect_op("}", "to close the dict");
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    ChainGuard chain(*this);
    while (true) {
      if (is_op(".") || is_op("[") || is_op("(")) chain.link(peek());
      if (is_op(".")) {
        const Token& dot = next();
        if (peek().kind == TokenKind::Int) {
          auto item = make<Expr>(Expr::Kind::Item, dot);
          item->args.push_back(std::move(e));
          item->args.push_back(literal(peek(), Value(peek().int_value)));
          next();
          e = std::move(item);
          continue;
        }
        auto attr = make<Expr>(Expr::Kind::Attr, dot);
        attr->name = expect_identifier("after '.'");
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token& open = next();
    ExprPtr parts[3];
    int colons = 0;
    while (true) {
      if (is_op(":")) {
        next();
        if (++colons > 2) error(peek(), "too many ':' in a slice");
        continue;
      }
      if (is_op("]")) break;
      if (parts[colons]) error(peek(), "expected ':' or ']' in a subscript, got " + describe(peek()));
      parts[colons] = parse_expression(true);
    }
    expect_op("]", "to close the subscript");
    if (colons == 0) {
      if (!parts[0]) error(open, "empty subscript");
      auto e = make<Expr>(Expr::Kind::Item, open);
      e->args.push_back(std::move(obj));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make<Expr>(Expr::Kind::Slice, open);
    e->args.push_back(std::move(obj));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(", "to start the arguments");
    while (!is_op(")")) {
      if (peek().kind == TokenKind::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error(peek(), "positional argument after a keyword argument");
        e.args.push_back(parse_expression(true));
      }
      if (!accept_op(",")) break;
    }
    expect_op(")", "to close the arguments");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make<Expr>(Expr::Kind::Call, peek());
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr input) {
    const Token& bar = next();  // '|', or the filter name of a filter block
    auto e = make<Expr>(Expr::Kind::Filter, bar);
    if (bar.kind == TokenKind::Name) {
      e->name = bar.text;
    } else {
      e->name = expect_identifier("after '|'");
    }
    e->args.push_back(std::move(input));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    ChainGuard chain(*this);
    while (true) {
      if (is_op("|") || is_name("is") || is_op("(")) chain.link(peek());
      if (is_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_test(ExprPtr input) {
    auto e = make<Expr>(Expr::Kind::Test, next());
    e->negate = accept_name("not");
    e->name = expect_identifier("after 'is'");
    e->args.push_back(std::move(input));
    if (is_op("(")) {
      parse_call_args(*e);
      return e;
    }
    // One bare argument, as in `x is divisibleby 3` or `x is sameas none`.
    const Token& t = peek();
    bool starts_arg = t.kind == TokenKind::Name || t.kind == TokenKind::String || t.kind == TokenKind::Int ||
                      t.kind == TokenKind::Float || is_op("[") || is_op("{");
    if (starts_arg && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error(t, "tests cannot be chained with 'is'");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::string> open_blocks_;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace tg::llm::jinja
