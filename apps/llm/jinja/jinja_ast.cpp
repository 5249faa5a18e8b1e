// Queries over the Jinja syntax tree.
#include "jinja/jinja_ast.hpp"

namespace tg::llm::jinja {

bool mentions_name_in(const Expr* e, const std::string& name) {
  if (e == nullptr) return false;
  if (e->kind == Expr::Kind::Name && e->name == name) return true;
  for (const auto& a : e->args)
    if (mentions_name_in(a.get(), name)) return true;
  for (const auto& k : e->keys)
    if (mentions_name_in(k.get(), name)) return true;
  for (const auto& kv : e->kwargs)
    if (mentions_name_in(kv.second.get(), name)) return true;
  return false;
}

bool mentions_name(const Body& body, const std::string& name) {
  for (const auto& n : body) {
    if (mentions_name_in(n->expr.get(), name) || mentions_name_in(n->target.get(), name) ||
        mentions_name_in(n->filter.get(), name))
      return true;
    for (const auto& c : n->conditions)
      if (mentions_name_in(c.get(), name)) return true;
    for (const auto& p : n->params)
      if (mentions_name_in(p.second.get(), name)) return true;
    for (const auto& b : n->bodies)
      if (mentions_name(b, name)) return true;
    if (mentions_name(n->body, name) || mentions_name(n->else_body, name)) return true;
  }
  return false;
}

}  // namespace tg::llm::jinja
