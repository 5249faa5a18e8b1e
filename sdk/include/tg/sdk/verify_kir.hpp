// tg::sdk::verify_kir: the KIR rules plugin_abi.h states, checked once for every consumer (the C renderer base,
// INTERP, and the core after lowering in debug builds). It answers with the first broken rule as one message,
// "kernel <name>: inst <i> (<OP>): <what>", so a renderer only checks what its own backend cannot express.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/abi_names.hpp>
#include <tg/sdk/status.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::sdk {

namespace kir_rules {

inline bool is_int_dtype(uint32_t d) { return d >= TG_DTYPE_INT8 && d <= TG_DTYPE_UINT64; }
inline bool is_comparison(uint32_t op) { return op == TG_KIR_CMPLT || op == TG_KIR_CMPNE || op == TG_KIR_CMPEQ; }
inline bool has_value(uint32_t op) {
  return op != TG_KIR_ENDRANGE && op != TG_KIR_IF && op != TG_KIR_ENDIF && op != TG_KIR_BARRIER && op != TG_KIR_STORE &&
         op != TG_KIR_CUSTOM && op != TG_KIR_TILE_MMA;
}
// ALU ops: operands share one dtype and the result's lanes (comparisons give bool, WHERE's condition is bool).
inline bool is_alu(uint32_t op) {
  return (op >= TG_KIR_NEG && op <= TG_KIR_TRUNC) || (op >= TG_KIR_ADD && op <= TG_KIR_MULACC) || op == TG_KIR_FMA ||
         op == TG_KIR_DOT4 || op == TG_KIR_LUT16;
}

// One pass over a kernel; check() throws the first broken rule.
class Verifier {
 public:
  explicit Verifier(const tg_kir_kernel& k) : k_(k) {}

  void check() {
    check_header();
    scope_of_.assign(k_.ninsts, 0);
    closed_.assign(1, false);
    for (uint32_t i = 0; i < k_.ninsts; ++i) check_inst(i);
    if (!blocks_.empty())
      throw invalid(blocks_.back().inst, cat(op_name(inst(blocks_.back().inst).op), " is never closed"));
  }

 private:
  struct Block {
    uint32_t inst, scope;
  };
  const tg_kir_kernel& k_;
  std::vector<uint32_t> scope_of_;  // per instruction: the block its value lives in (0: the kernel body)
  std::vector<bool> closed_;        // per block: whether it has ended
  std::vector<Block> blocks_;       // open RANGE/IF blocks, innermost last

  const tg_kir_inst& inst(uint32_t i) const { return k_.insts[i]; }
  uint32_t src(uint32_t i, uint32_t j) const { return static_cast<uint32_t>(k_.src_pool[inst(i).src_start + j]); }
  const tg_kir_inst& operand_inst(uint32_t i, uint32_t j) const { return inst(src(i, j)); }
  Error invalid(uint32_t i, const std::string& what) const {
    return Error(TG_ERR_INVALID_ARGUMENT,
                 cat("kernel ", k_.name, ": inst ", i, " (", op_name(inst(i).op), "): ", what));
  }
  Error invalid_kernel(const std::string& what) const {
    return Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", k_.name, ": ", what));
  }
  bool is_pointer(uint32_t s) const {
    const tg_kir_inst& in = inst(s);
    if (in.op == TG_KIR_PARAM) return k_.params[in.arg.i].kind != TG_PARAM_VAR;
    return in.op == TG_KIR_DEFINE_REG || in.op == TG_KIR_DEFINE_LOCAL;
  }

  void check_header() {
    if (!TG_ABI_HAS(&k_, tg_kir_kernel, global_dims))  // a 1.0 core's kernel ends there; what 1.1 added is optional
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel struct_size ", k_.struct_size, " is smaller than ABI 1.0's"));
    if (k_.name == nullptr || *k_.name == '\0') throw Error(TG_ERR_INVALID_ARGUMENT, "kernel has no name");
    if ((k_.ninsts && !k_.insts) || (k_.nsrc_pool && !k_.src_pool) || (k_.nparams && !k_.params))
      throw invalid_kernel("null insts, src_pool or params array");
    if (k_.global_dims > 3) throw invalid_kernel(cat("global_dims is ", k_.global_dims, ", at most 3"));
    for (uint32_t p = 0; p < k_.nparams; ++p) {
      const tg_kir_param& param = k_.params[p];
      if (param.kind > TG_PARAM_IMAGE || param.dtype >= TG_DTYPE_COUNT)
        throw invalid_kernel(cat("parameter ", p, " has kind ", param.kind, " and dtype ", param.dtype));
      if (param.kind == TG_PARAM_IMAGE && (param.dtype != TG_DTYPE_FLOAT32 || param.writable || param.reserved == 0))
        throw invalid_kernel(cat("image parameter ", p, " must be read-only float32 with a width (reserved) above 0"));
    }
  }

  // Operand j of instruction i is a value (or, if `pointer`, a pointer) whose block has not ended.
  const tg_kir_inst& operand(uint32_t i, uint32_t j, bool pointer = false) const {
    const uint32_t s = src(i, j);
    if (!has_value(inst(s).op)) throw invalid(i, cat("operand ", j, " (inst ", s, ") has no value"));
    if (is_pointer(s) != pointer)
      throw invalid(i, cat("operand ", j, " (inst ", s, ") is ", pointer ? "not " : "", "a pointer"));
    if (closed_[scope_of_[s]]) throw invalid(i, cat("operand ", j, " (inst ", s, ") is out of scope"));
    return inst(s);
  }
  // CUSTOM/CUSTOMI operands may be values or pointers.
  void any_operand(uint32_t i, uint32_t j) const { operand(i, j, is_pointer(src(i, j))); }

  void check_fields(uint32_t i) const {
    const tg_kir_inst& in = inst(i);
    if (in.op >= TG_KIR_OP_COUNT) throw invalid_kernel(cat("inst ", i, " has op ", in.op));
    if (in.dtype >= TG_DTYPE_COUNT || in.vcount == 0) throw invalid(i, cat("dtype ", +in.dtype, " x ", +in.vcount));
    if (uint64_t{in.src_start} + in.nsrc > k_.nsrc_pool) throw invalid(i, "operands past the end of src_pool");
    const auto [lo, hi] = kir_arity(in);
    if (in.nsrc < lo || in.nsrc > hi) throw invalid(i, cat(+in.nsrc, " operands, expected ", lo, "..", hi));
    for (uint32_t j = 0; j < in.nsrc; ++j) {
      const int32_t s = k_.src_pool[in.src_start + j];
      if (s < 0 || static_cast<uint32_t>(s) >= i)
        throw invalid(i, cat("operand ", j, " is inst ", s, ", not an earlier one"));
    }
  }

  void open(uint32_t i) {
    blocks_.push_back({i, static_cast<uint32_t>(closed_.size())});
    closed_.push_back(false);
  }
  void close(uint32_t i, uint32_t opener) {
    if (blocks_.empty() || blocks_.back().inst != src(i, 0) || inst(src(i, 0)).op != opener)
      throw invalid(i, cat("does not close the innermost ", op_name(opener)));
    closed_[blocks_.back().scope] = true;
    blocks_.pop_back();
  }

  void check_inst(uint32_t i) {
    check_fields(i);
    const tg_kir_inst& in = inst(i);
    scope_of_[i] = blocks_.empty() ? 0 : blocks_.back().scope;
    switch (static_cast<tg_kir_op>(in.op)) {
      case TG_KIR_PARAM:
        if (in.arg.i < 0 || static_cast<uint64_t>(in.arg.i) >= k_.nparams)
          throw invalid(i, cat("no parameter ", in.arg.i));
        if (k_.params[in.arg.i].dtype != in.dtype) throw invalid(i, "dtype differs from the parameter's");
        return;
      case TG_KIR_CONST:
      case TG_KIR_BARRIER: return;
      case TG_KIR_SPECIAL: {
        const uint64_t kind = static_cast<uint64_t>(in.arg.i) / 4, dim = static_cast<uint64_t>(in.arg.i) % 4;
        if (in.arg.i < 0 || kind > TG_SPECIAL_LOCAL || dim > 2) throw invalid(i, cat("bad work-item id ", in.arg.i));
        if (in.nsrc == 1) operand(i, 0);
        return;
      }
      case TG_KIR_DEFINE_REG:
      case TG_KIR_DEFINE_LOCAL:
        if (in.arg.i <= 0) throw invalid(i, cat("array of ", in.arg.i, " elements"));
        return;
      case TG_KIR_RANGE:
        if (!is_int_dtype(in.dtype) || in.vcount != 1) throw invalid(i, "loop variable is not a scalar integer");
        operand(i, 0);
        open(i);
        scope_of_[i] = blocks_.back().scope;  // the loop variable lives inside its loop
        return;
      case TG_KIR_IF: {
        const tg_kir_inst& cond = operand(i, 0);
        if (cond.dtype != TG_DTYPE_BOOL || cond.vcount != 1) throw invalid(i, "condition is not a bool");
        open(i);
        return;
      }
      case TG_KIR_ENDRANGE: close(i, TG_KIR_RANGE); return;
      case TG_KIR_ENDIF: close(i, TG_KIR_IF); return;
      case TG_KIR_LOAD:
      case TG_KIR_STORE: return check_memory(i);
      case TG_KIR_VECTORIZE:
        for (uint32_t j = 0; j < in.nsrc; ++j) {
          const tg_kir_inst& lane = operand(i, j);
          if (lane.dtype != in.dtype || lane.vcount != 1)
            throw invalid(i, cat("lane ", j, " is not a ", dtype_name(in.dtype), " scalar"));
        }
        return;
      case TG_KIR_GEP: {
        const tg_kir_inst& v = operand(i, 0);
        if (in.arg.i < 0 || in.arg.i >= v.vcount) throw invalid(i, cat("no lane ", in.arg.i));
        if (v.dtype != in.dtype || in.vcount != 1) throw invalid(i, "result is not one lane of the operand");
        return;
      }
      case TG_KIR_CAST:
        if (operand(i, 0).vcount != in.vcount) throw invalid(i, "a cast keeps the lane count");
        return;
      case TG_KIR_BITCAST: {
        const tg_kir_inst& from = operand(i, 0);
        if (tg_dtype_size(from.dtype) * from.vcount != tg_dtype_size(in.dtype) * in.vcount)
          throw invalid(i, "sizes differ");
        return;
      }
      case TG_KIR_CUSTOM:
      case TG_KIR_CUSTOMI:
        if (!TG_ABI_HAS(&k_, tg_kir_kernel, nstrings) || in.arg.i < 0 ||
            static_cast<uint64_t>(in.arg.i) >= k_.nstrings || k_.strings == nullptr || k_.strings[in.arg.i] == nullptr)
          throw invalid(i, cat("no snippet ", in.arg.i, " in the kernel's strings"));
        for (uint32_t j = 0; j < in.nsrc; ++j) any_operand(i, j);
        return;
      case TG_KIR_WMMA:
        for (uint32_t j = 0; j < in.nsrc; ++j) operand(i, j);
        return;
      case TG_KIR_TILE_MMA:
        return check_tile_mma(i);
      TG_SDK_KIR_ALU_CASES:
        return check_alu(i);
      case TG_KIR_OP_COUNT: break;
    }
    throw invalid(i, "unknown op");
  }

  // Operands share the result's dtype and lanes, except a comparison's (its result is bool) and WHERE's condition
  // (bool, scalar or as wide as the result).
  void check_alu(uint32_t i) const {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = operand_inst(i, in.op == TG_KIR_WHERE ? 1 : 0).dtype;
    for (uint32_t j = 0; j < in.nsrc; ++j) {
      const tg_kir_inst& s = operand(i, j);
      const bool is_cond = in.op == TG_KIR_WHERE && j == 0;
      if (is_cond ? s.dtype != TG_DTYPE_BOOL : s.dtype != src_dtype)
        throw invalid(i, cat("operand ", j, " is ", dtype_name(s.dtype)));
      if (s.vcount != in.vcount && !(is_cond && s.vcount == 1))
        throw invalid(i, cat("operand ", j, " has ", +s.vcount, " lanes"));
    }
    if ((is_comparison(in.op) ? uint32_t{TG_DTYPE_BOOL} : src_dtype) != in.dtype)
      throw invalid(i, cat("result dtype ", dtype_name(in.dtype)));
  }

  // TILE_MMA: C, A and B are scalar pointers of the pairs plugin_abi.h names (float32 from bfloat16, int32 from
  // int8), the indices, strides and steps scalar integers, the shape 16 or 32 by 16 or 32.
  void check_tile_mma(uint32_t i) const {
    const tg_kir_inst& in = inst(i);
    const uint32_t ab = in.dtype == TG_DTYPE_FLOAT32 ? TG_DTYPE_BFLOAT16 : TG_DTYPE_INT8;
    if ((in.dtype != TG_DTYPE_FLOAT32 && in.dtype != TG_DTYPE_INT32) || in.vcount != 1)
      throw invalid(i, cat("C is ", dtype_name(in.dtype), " x ", +in.vcount, ", not float32 or int32"));
    const int64_t mt = in.arg.i & 15, nt = (in.arg.i >> 4) & 15;
    if (mt < 1 || mt > 2 || nt < 1 || nt > 2 || (in.arg.i & ~int64_t{0x1ff}) != 0)
      throw invalid(i, cat("shape bits ", in.arg.i, ": M and N are 16 or 32"));
    for (uint32_t j = 0; j < 10; ++j) {
      const bool pointer = j % 3 == 0 && j < 9;
      const tg_kir_inst& s = operand(i, j, pointer);
      if (pointer && (s.dtype != (j == 0 ? in.dtype : ab) || s.vcount != 1))
        throw invalid(
            i, cat("operand ", j, " points to ", dtype_name(s.dtype), ", not ", dtype_name(j == 0 ? in.dtype : ab)));
      if (!pointer && (!is_int_dtype(s.dtype) || s.vcount != 1))
        throw invalid(i, cat("operand ", j, " is not a scalar integer"));
    }
    const tg_kir_inst& c = operand_inst(i, 0);
    if (c.op == TG_KIR_PARAM && !k_.params[c.arg.i].writable)
      throw invalid(i, cat("C is read-only parameter ", c.arg.i));
  }

  // LOAD/STORE: `vcount` lanes at element `index` of a pointer whose elements have the pointer's lanes; either
  // the lanes match (a register accumulator) or the pointer is scalar and the access covers consecutive elements.
  // A packed load (ABI 1.3) reads a wider dtype from scalar uint8 memory; whether a backend takes it is its call.
  void check_memory(uint32_t i) const {
    const tg_kir_inst& in = inst(i);
    const bool is_store = in.op == TG_KIR_STORE;
    const tg_kir_inst& ptr = operand(i, 0, true);
    const tg_kir_inst& index = operand(i, 1);
    const tg_kir_inst& elem = is_store ? operand(i, 2) : in;
    const bool packed = !is_store && ptr.dtype == TG_DTYPE_UINT8 && ptr.vcount == 1;
    if (elem.dtype != ptr.dtype && !packed)
      throw invalid(i, cat("accesses ", dtype_name(ptr.dtype), " memory as ", dtype_name(elem.dtype)));
    if (elem.vcount != ptr.vcount && ptr.vcount != 1)
      throw invalid(i, cat(+elem.vcount, " lanes of ", +ptr.vcount, "-lane elements"));
    if (!is_int_dtype(index.dtype) || index.vcount != 1) throw invalid(i, "index is not a scalar integer");
    const uint32_t gate = is_store ? 3 : 2;
    if (in.nsrc > gate && operand(i, gate).dtype != TG_DTYPE_BOOL) throw invalid(i, "gate is not bool");
    if (is_store && ptr.op == TG_KIR_PARAM && !k_.params[ptr.arg.i].writable)
      throw invalid(i, cat("stores to read-only parameter ", ptr.arg.i));
  }
};

}  // namespace kir_rules

// Throws Error (TG_ERR_INVALID_ARGUMENT) naming the kernel, the instruction and the first rule it breaks.
inline void check_kir(const tg_kir_kernel& kernel) { kir_rules::Verifier(kernel).check(); }

// The first broken rule as a message, or nullopt for a well-formed kernel.
inline std::optional<std::string> verify_kir(const tg_kir_kernel* kernel) {
  if (kernel == nullptr) return std::string("no kernel (null pointer)");
  try {
    check_kir(*kernel);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace tg::sdk
