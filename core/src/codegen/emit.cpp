// The linearizer's walk (emitter.hpp): each value emitted once per scope, sources first; loops and work-item ids;
// statements (stores, barriers, END's unrolled copies, inline code); ALU ops the renderer lacks through the
// decompositions (decompositions.hpp).
#include <algorithm>
#include <set>

#include "codegen/emitter.hpp"

namespace tg::codegen {

using namespace ir;

void Emitter::require_local(const char* what) const {
  if (!caps_.has_local)
    throw Error(std::string("tg: ") + what + " needs local memory, which this renderer does not have");
}

int32_t Emitter::emit(const UOpPtr& u) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto f = it->find(u.get()); f != it->end()) return f->second;
  int32_t id = emit_uncached(u);
  scopes_.back().emplace(u.get(), id);
  keep_.push_back(u);
  return id;
}

void Emitter::declare(const UOpPtr& sink, Op op) {
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
    if (n->op == op) emit(n->ptr());
}

int32_t Emitter::open_loop(const UOpPtr& range) {
  const UOpPtr& end_node = range->src[0];
  bool fixed = end_node->op == Op::CONST;
  int64_t end = fixed ? end_node->arg_int() : end_node->vmax();
  int32_t e = fixed ? k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end}) : emit(end_node);
  int32_t r = k_.add(TG_KIR_RANGE, dt(range->dtype), 1, {e}, {.i = range->range().id});
  scopes_.emplace_back();
  vscopes_.emplace_back();
  set(range, r);
  mult_ *= static_cast<double>(end);
  ends_.push_back(end);
  return r;
}

void Emitter::close_loop(int32_t r) {
  k_.add(TG_KIR_ENDRANGE, 0, 1, {r});
  scopes_.pop_back();
  vscopes_.pop_back();
  mult_ /= static_cast<double>(ends_.back());
  ends_.pop_back();
}

void Emitter::special(const UOpPtr& range, uint32_t kind, uint32_t dim, uint32_t local) {
  int64_t end = range->src[0]->arg_int();
  int32_t e = k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end});
  int32_t s = k_.add(TG_KIR_SPECIAL, dt(range->dtype), 1, {e}, {.i = static_cast<int64_t>(kind) * 4 + dim});
  set(range, s);
  if (kind == TG_SPECIAL_LOCAL) {
    k_.dims.local[dim] = static_cast<uint32_t>(end);
  } else {
    k_.global_dims = std::max(k_.global_dims, dim + 1);
    k_.dims.global[dim] = static_cast<uint32_t>(end / local);
    if (kind == TG_SPECIAL_GLOBAL) k_.dims.local[dim] = local;
  }
  mult_ *= static_cast<double>(end);
}

int32_t Emitter::emit_uncached(const UOpPtr& u) {
  switch (u->op) {
    case Op::CONST: {
      tg_kir_arg a{};
      if (u->dtype.is_float())
        a.f = u->const_value();
      else
        a.i = std::holds_alternative<int64_t>(u->arg) ? u->arg_int() : static_cast<int64_t>(u->const_value());
      return k_.add(TG_KIR_CONST, dt(u->dtype), 1, {}, a);
    }
    case Op::PARAM: return k_.add(TG_KIR_PARAM, dt(u->dtype), 1, {}, {.i = u->arg_int()});
    case Op::DEFINE_VAR: {
      auto it = var_params_.find(u->var().name);
      if (it == var_params_.end())
        throw Error("tg: internal: variable " + u->var().name + " is not a kernel parameter");
      return k_.add(TG_KIR_PARAM, dt(u->dtype), 1, {}, {.i = it->second});
    }
    case Op::RANGE: throw Error("tg: internal: range r" + std::to_string(u->range().id) + " used outside its loop");
    case Op::LOAD: {
      if (is_packed_load(*u) && !takes_packed(u->dtype)) return emit(packed_load_from_bytes(u));
      std::vector<int32_t> src{emit(u->src[0]), emit(u->src[1])};
      if (u->src.size() > 2) src.push_back(emit(u->src[2]));
      return k_.add(TG_KIR_LOAD, dt(u->dtype), u->dtype.count, std::move(src));  // (a vector from a vector array)
    }
    case Op::REDUCE:
      throw Error("tg: internal: a REDUCE reached the linearizer (lower_reduces makes accumulators of them)");
    case Op::STORE: {
      std::vector<int32_t> src{emit(u->src[0]), emit(u->src[1]), emit(u->src[2])};
      if (u->src.size() > 3) src.push_back(emit(u->src[3]));
      return k_.add(TG_KIR_STORE, dt(u->src[2]->dtype), u->src[2]->dtype.count, std::move(src));
    }
    case Op::VECTORIZE:  // lanes into one vector, through the lane expansion (neighbouring loads as vector loads)
      return broadcast(emit_lanes(u->src), u->dtype, static_cast<int>(u->src.size()));
    case Op::GEP:  // lane i of lanes (a VECTORIZE): taken from whatever the lane expansion made of them
      if (u->src[0]->op == Op::VECTORIZE)
        return lane(emit_lanes(u->src[0]->src), u->dtype, static_cast<int>(u->arg_int()));
      return k_.add(TG_KIR_GEP, dt(u->dtype), 1, {emit(u->src[0])}, {.i = u->arg_int()});
    case Op::WMMA: {
      std::vector<int32_t> src;
      for (const auto& s : u->src) src.push_back(emit(s));
      return k_.add(TG_KIR_WMMA, dt(u->dtype), u->dtype.count, std::move(src), {.i = u->arg_int()});
    }
    case Op::END: {
      int64_t n = u->arg_int();
      emit_carried_inits(std::vector<UOpPtr>(u->src.begin(), u->src.begin() + n),
                         std::vector<UOpPtr>(u->src.begin() + n, u->src.end()));
      emit_end(std::vector<UOpPtr>(u->src.begin(), u->src.begin() + n),
               std::vector<UOpPtr>(u->src.begin() + n, u->src.end()), 0);
      return -1;
    }
    case Op::AFTER:  // the statements first, then the buffer itself
      for (size_t i = 1; i < u->src.size(); ++i) emit(u->src[i]);
      return emit(u->src[0]);
    case Op::BARRIER:
      require_local("a barrier");
      for (const auto& st : u->src) emit(st);
      return k_.add(TG_KIR_BARRIER, 0, 1, {});
    case Op::CUSTOM:
    case Op::CUSTOMI: {
      std::optional<std::string> text = custom_code_in(u->arg_str());
      if (u->op == Op::CUSTOM && text && text->empty()) return -1;  // an empty statement: a hint this language skips
      std::vector<int32_t> src;
      for (const auto& s : u->src) src.push_back(emit(s));  // (their errors first: they are inside)
      const int64_t code = k_.add_string(text ? *text : custom_code_for(u->arg_str()));
      return k_.add(u->op == Op::CUSTOM ? TG_KIR_CUSTOM : TG_KIR_CUSTOMI, dt(u->dtype), 1, std::move(src), {.i = code});
    }
    case Op::TILE_MMA: {  // the matrix unit where the renderer has one, else the loops it means
      if (!supports(u->op, u->dtype)) return emit(decompose(u));
      std::vector<int32_t> src;
      for (const auto& s : u->src) src.push_back(emit(s));
      const UOpPtr& steps = u->src[9];
      if (steps->op == Op::CONST)
        flops_ += mult_ * 2 * 256 * (u->arg_int() & 15) * ((u->arg_int() >> 4) & 15) * steps->arg_int() * 64 /
                  u->src[3]->dtype.itemsize();
      return k_.add(TG_KIR_TILE_MMA, dt(u->dtype), 1, std::move(src), {.i = u->arg_int()});
    }
    case Op::DEFINE_REG:
      return k_.add(TG_KIR_DEFINE_REG, dt(u->dtype), u->dtype.count, {}, {.i = u->arg_ints()[0]}, TG_ADDR_REG);
    case Op::DEFINE_LOCAL:
      require_local("a local array");
      local_bytes_ += static_cast<uint64_t>(u->arg_ints()[0]) * u->dtype.itemsize();
      return k_.add(TG_KIR_DEFINE_LOCAL, dt(u->dtype), 1, {}, {.i = u->arg_ints()[0]}, TG_ADDR_LOCAL);
    default: break;
  }
  if (!is_alu(u->op)) throw Error(std::string("tg: cannot lower ") + op_name(u->op));
  DType d = op_dtype(*u);
  if (!supports(u->op, d)) {
    if (UOpPtr alt = decompose(u)) return emit(alt);
    throw Error(std::string("tg: renderer cannot compute ") + op_name(u->op) + " on " + d.name());
  }
  std::vector<int32_t> src;
  for (const auto& s : u->src) src.push_back(emit(s));
  flops_ += mult_ * u->dtype.count * (u->op == Op::FMA ? 2 : 1);
  // DOT4 carries its narrow promise (TG_KIR_DOT4_NARROW) to the renderer
  const tg_kir_arg arg{.i = u->op == Op::DOT4 && std::holds_alternative<int64_t>(u->arg) ? u->arg_int() : 0};
  return k_.add(kir_op(u->op), dt(u->dtype), u->dtype.count, std::move(src), arg);  // (a vector op: pm_vectorize_for's)
}

std::optional<std::string> Emitter::custom_code_in(const std::string& variants) const {
  const char* language = caps_.language;  // NULL from a renderer without inline code (or an ABI 1.0 plugin)
  std::optional<std::string> any;
  for (const auto& [lang, code] : custom_variants(variants)) {
    if (language && lang == language) return code;
    if (lang == "*") any = code;
  }
  return any;
}

std::string Emitter::custom_code_for(const std::string& variants) const {
  if (std::optional<std::string> code = custom_code_in(variants)) return *code;
  std::string offered;
  for (const auto& v : custom_variants(variants)) offered += (offered.empty() ? "" : ", ") + v.first;
  const char* language = caps_.language;
  throw Error("tg: inline code is written for " + (offered.empty() ? std::string("no language") : offered) +
              ", but this renderer " + (language ? "speaks " + std::string(language) : "takes no inline code"));
}

std::vector<std::pair<std::string, std::string>> Emitter::custom_variants(const std::string& variants) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t pos = 0; pos < variants.size();) {
    std::string lang = variants.c_str() + pos;
    pos += lang.size() + 1;
    std::string code = pos < variants.size() ? std::string(variants.c_str() + pos) : "";
    pos += code.size() + 1;
    out.emplace_back(std::move(lang), std::move(code));
  }
  return out;
}

void Emitter::emit_carried_inits(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges) {
  std::set<const UOp*> carried;
  for (const auto& st : stmts)
    if (st->op == Op::STORE && st->src[0]->op == Op::DEFINE_REG) carried.insert(st->src[0].get());
  if (carried.empty()) return;
  for (const UOpPtr& init :
       independent_of(stmts, ranges, [&](const UOp& n) { return n.op == Op::AFTER && carried.count(n.src[0].get()); }))
    emit(init);
}

void Emitter::emit_end(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges, size_t i) {
  if (i == ranges.size()) {
    for (const auto& st : stmts) emit(st);
    return;
  }
  const UOpPtr& r = ranges[i];
  if (r->op != Op::RANGE) return emit_end(stmts, ranges, i + 1);  // a size-1 range, folded to 0
  // a work-group kernel's GLOBAL and LOCAL ranges are work-item ids, bound for the whole kernel: each work-item
  // runs the statements for its own index
  if (r->range().type == AxisType::LOCAL || (r->range().type == AxisType::GLOBAL && bound(r)))
    return emit_end(stmts, ranges, i + 1);
  if (is_unrolled(r)) {  // (an innermost UPCAST over stores is a vector already: expand_upcast_stores)
    for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
      std::vector<UOpPtr> copy;
      for (const auto& st : stmts) copy.push_back(simplify_substituted(st, {{r.get(), const_int(r->dtype, k)}}));
      emit_end(copy, ranges, i + 1);
    }
    return;
  }
  int32_t loop = open_loop(r);
  emit_end(stmts, ranges, i + 1);
  close_loop(loop);
}

}  // namespace tg::codegen
