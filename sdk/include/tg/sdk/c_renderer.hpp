// tg::sdk::CRenderer: the C-style source renderer base every source-emitting plugin shares. It checks a
// tg_kir_kernel with verify_kir.hpp's rules, walks it and emits C-like text, asking virtual hooks for everything a
// backend spells its own way.
//
// Shape of the output: preamble(), then signature() + " {", the prologue, one line per KIR instruction (each value
// becomes a named local such as `alu12`; CONSTs are inlined; RANGE/IF open a block that ENDRANGE/ENDIF close),
// and "}". A backend may also open "implicit" blocks (the CPU's work-item loop) that close at the function's end.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/abi_names.hpp>
#include <tg/sdk/status.hpp>
#include <tg/sdk/verify_kir.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tg::sdk {

inline bool is_float(uint32_t dtype) { return dtype >= TG_DTYPE_FLOAT16 && dtype <= TG_DTYPE_FLOAT64; }
inline bool is_signed_int(uint32_t dtype) { return dtype >= TG_DTYPE_INT8 && dtype <= TG_DTYPE_INT64; }
inline bool is_unsigned_int(uint32_t dtype) { return dtype >= TG_DTYPE_UINT8 && dtype <= TG_DTYPE_UINT64; }
inline bool is_int(uint32_t dtype) { return is_signed_int(dtype) || is_unsigned_int(dtype); }
inline bool is_cmp(uint32_t op) { return op == TG_KIR_CMPLT || op == TG_KIR_CMPNE || op == TG_KIR_CMPEQ; }

// An op template with its operands substituted: fill("({0}+{1})", {"a", "b"}) == "(a+b)". Other braces are kept.
inline std::string fill(std::string_view tmpl, const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const bool is_slot =
        tmpl[i] == '{' && i + 2 < tmpl.size() && tmpl[i + 2] == '}' && tmpl[i + 1] >= '0' && tmpl[i + 1] <= '9';
    if (!is_slot) {
      out += tmpl[i];
      continue;
    }
    const size_t k = static_cast<size_t>(tmpl[i + 1] - '0');
    if (k >= args.size()) throw Error(TG_ERR_INTERNAL, cat("op template '", tmpl, "' uses operand ", k));
    out += args[k];
    i += 2;
  }
  return out;
}

// `static inline T tg_idiv_NAME(T a, T b)` and `tg_mod_NAME` for an integer type T: dividing by zero gives 0 and
// MIN / -1 wraps (MIN % -1 is 0), where C and OpenCL C leave both undefined (and a CPU would trap). The core guards
// zero divisors, but a launch must never crash. `qualifier` and `u64` (the 64-bit unsigned type) are the language's.
inline std::string guarded_division_helpers(const std::string& t, const std::string& name, bool is_signed,
                                            const std::string& qualifier = "static inline",
                                            const std::string& u64 = "unsigned long long") {
  if (!is_signed)
    return cat(qualifier, " ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a / b; }\n",
               qualifier, " ", t, " tg_mod_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a % b; }\n");
  return cat(qualifier, " ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : b == -1 ? (", t, ")((",
             u64, ")0 - (", u64, ")a) : a / b; }\n", qualifier, " ", t, " tg_mod_", name, "(", t, " a, ", t,
             " b) { return b == 0 || b == -1 ? 0 : a % b; }\n");
}

class CRenderer {
 public:
  virtual ~CRenderer() = default;

  // The kernel as source text. Throws Error: TG_ERR_INVALID_ARGUMENT for malformed KIR, TG_ERR_UNSUPPORTED for a
  // construct this backend cannot express.
  std::string render(const tg_kir_kernel& kernel) {
    start(kernel);
    emit_prologue();
    for (uint32_t i = 0; i < kernel.ninsts; ++i) emit(i);
    while (!blocks_.empty()) close_block();
    std::string source = preamble();
    source += signature() + " {\n" + body_ + "}\n";
    return source;
  }

 protected:
  // One LOAD or STORE: `ptr` holds `ptr_vcount`-lane elements; the access reads `vcount` lanes at `index`, which
  // is known to be a multiple of `index_multiple` (a power of two; see known_multiple()). `image_width` is the
  // texels per row of a TG_PARAM_IMAGE pointer's view (0: not an image).
  struct Access {
    std::string ptr, index;
    uint32_t dtype, vcount, ptr_vcount, addrspace;
    uint64_t index_multiple;
    uint32_t image_width;
  };

  // ---- hooks: capabilities -----------------------------------------------------------------------------------
  // The ALU ops this renderer takes whole for operands of `dtype`: its caps.ops[dtype]. The base refuses any other
  // op before asking a hook to spell it (TG_ERR_UNSUPPORTED naming the op, the dtype and the instruction), so a
  // backend's templates never meet an op its caps did not promise. Default: every op.
  virtual uint64_t claimed_ops(uint32_t /*dtype*/) { return ~uint64_t{0}; }
  // The renderer's name in messages ("the CPU renderer has no ...").
  virtual std::string renderer_name() { return "this"; }

  // ---- hooks: types ------------------------------------------------------------------------------------------
  virtual std::string scalar_type(uint32_t dtype) {
    static const char* const names[TG_DTYPE_COUNT] = {
        "bool",         "signed char",        "short", "int",    "long long", "unsigned char", "unsigned short",
        "unsigned int", "unsigned long long", "half",  "__bf16", "float",     "double"};
    return names[dtype];
  }
  // OpenCL-style names ("float4", "uchar8"); a backend that needs declarations emits them from preamble().
  virtual std::string vector_type(uint32_t dtype, uint32_t vcount) {
    static const char* const bases[TG_DTYPE_COUNT] = {"bool", "char",  "short", "int",   "long",  "uchar", "ushort",
                                                      "uint", "ulong", "half",  "bf16_", "float", "double"};
    return cat(bases[dtype], vcount);
  }

  // ---- hooks: the kernel frame -------------------------------------------------------------------------------
  virtual std::string preamble() { return ""; }  // called after the body, so it may declare what the body used
  virtual std::string signature() = 0;           // e.g. `extern "C" __global__ void E_4(float* data0)`
  virtual void emit_prologue() {}                // lines before the first instruction (parameter unpacking)
  // A work-item id. The default declares `T name = special_expr(kind, dim);`.
  virtual void emit_special(uint32_t i, uint32_t kind, uint32_t dim) {
    line(cat(type_of(i), " ", names_[i], " = ", special_expr(kind, dim), ";"));
  }
  virtual std::string special_expr(uint32_t kind, uint32_t dim) {
    throw Error(TG_ERR_UNSUPPORTED, cat("this renderer has no work-item id of kind ", kind, " dim ", dim));
  }
  virtual std::string special_name(uint32_t kind, uint32_t dim) {
    static const char* const prefixes[3] = {"gidx", "grp", "lidx"};
    return cat(prefixes[kind], dim);
  }
  virtual std::string barrier() { throw Error(TG_ERR_UNSUPPORTED, "this renderer has no BARRIER"); }
  virtual std::string local_decl(const std::string& type, const std::string& name, int64_t count) {
    throw Error(TG_ERR_UNSUPPORTED, cat("this renderer has no local memory (", type, " ", name, "[", count, "])"));
  }
  virtual std::string reg_decl(const std::string& type, const std::string& name, int64_t count) {
    return cat(type, " ", name, "[", count, "];");
  }
  virtual std::string range_header(const std::string& type, const std::string& name, const std::string& end) {
    return cat("for (", type, " ", name, " = 0; ", name, " < ", end, "; ", name, "++)");
  }
  virtual std::string if_header(const std::string& cond) { return cat("if (", cond, ")"); }

  // ---- hooks: values -----------------------------------------------------------------------------------------
  // The op table: an expression template per ALU op, {N} standing for operand N.
  virtual std::string op_template(uint32_t op, uint32_t /*dtype*/, uint32_t /*src_dtype*/) {
    switch (static_cast<tg_kir_op>(op)) {
      case TG_KIR_NEG: return "(-{0})";
      case TG_KIR_EXP2: return "exp2({0})";
      case TG_KIR_LOG2: return "log2({0})";
      case TG_KIR_SIN: return "sin({0})";
      case TG_KIR_SQRT: return "sqrt({0})";
      case TG_KIR_RECIP: return "(1/{0})";
      case TG_KIR_TRUNC: return "trunc({0})";
      case TG_KIR_ADD: return "({0}+{1})";
      case TG_KIR_SUB: return "({0}-{1})";
      case TG_KIR_MUL: return "({0}*{1})";
      case TG_KIR_IDIV: return "({0}/{1})";
      case TG_KIR_MOD: return "({0}%{1})";
      case TG_KIR_FDIV: return "({0}/{1})";
      case TG_KIR_MAX: return "max({0},{1})";
      case TG_KIR_CMPLT: return "({0}<{1})";
      case TG_KIR_CMPNE: return "({0}!={1})";
      case TG_KIR_CMPEQ: return "({0}=={1})";
      case TG_KIR_AND: return "({0}&{1})";
      case TG_KIR_OR: return "({0}|{1})";
      case TG_KIR_XOR: return "({0}^{1})";
      case TG_KIR_SHL: return "({0}<<{1})";
      case TG_KIR_SHR: return "({0}>>{1})";
      case TG_KIR_WHERE: return "({0}?{1}:{2})";
      case TG_KIR_MULACC: return "(({0}*{1})+{2})";
      case TG_KIR_FMA: return "fma({0},{1},{2})";
      case TG_KIR_DOT4:  // the renderers that take these name their instructions
      case TG_KIR_LUT16:
      case TG_KIR_TILE_MMA:
      case TG_KIR_PARAM:
      case TG_KIR_CONST:
      case TG_KIR_SPECIAL:
      case TG_KIR_DEFINE_REG:
      case TG_KIR_DEFINE_LOCAL:
      case TG_KIR_RANGE:
      case TG_KIR_ENDRANGE:
      case TG_KIR_IF:
      case TG_KIR_ENDIF:
      case TG_KIR_BARRIER:
      case TG_KIR_LOAD:
      case TG_KIR_STORE:
      case TG_KIR_VECTORIZE:
      case TG_KIR_GEP:
      case TG_KIR_CAST:
      case TG_KIR_BITCAST:
      case TG_KIR_CUSTOM:
      case TG_KIR_CUSTOMI:
      case TG_KIR_WMMA:
      case TG_KIR_OP_COUNT: break;
    }
    throw Error(TG_ERR_INTERNAL, cat(op_name(op), " is not an ALU op"));
  }
  // ALU instruction i on its rendered operands (inst(i) and operand_inst(i, j) tell dtypes and lanes).
  virtual std::string alu(uint32_t i, const std::vector<std::string>& srcs) {
    return fill(op_template(inst(i).op, inst(i).dtype, alu_src_dtype(i)), srcs);
  }
  virtual std::string cast(uint32_t to, uint32_t vcount, uint32_t /*from*/, const std::string& x) {
    return cat("((", type(to, vcount), ")(", x, "))");
  }
  virtual std::string bitcast(uint32_t to, uint32_t vcount, uint32_t /*from*/, const std::string& x) {
    return cat("__builtin_bit_cast(", type(to, vcount), ", ", x, ")");
  }
  virtual std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) {
    std::string out = cat("((", type(dtype, vcount), "){");
    for (size_t k = 0; k < lanes.size(); ++k) out += (k ? "," : "") + lanes[k];
    return out + "})";
  }
  virtual std::string gep(const std::string& x, uint32_t lane) { return cat(x, "[", lane, "]"); }
  // D = A * B + C on tensor core arg.i (ABI 1.2): the renderers whose caps list tensor cores override this.
  virtual std::string wmma(uint32_t i, const std::vector<std::string>& /*abc*/) {
    throw Error(TG_ERR_UNSUPPORTED,
                cat("kernel ", kernel_->name, ": inst ", i, ": WMMA on a renderer without tensor cores"));
  }
  // C = or += A . B on the matrix unit (ABI 1.6), a statement: the renderers that claim TILE_MMA override this.
  virtual std::string tile_mma(uint32_t i, const std::vector<std::string>& /*operands*/) {
    throw Error(TG_ERR_UNSUPPORTED,
                cat("kernel ", kernel_->name, ": inst ", i, ": TILE_MMA on a renderer without a matrix unit"));
  }
  virtual std::string zero(uint32_t dtype, uint32_t vcount) {
    const std::string scalar = constant(dtype, tg_kir_arg{.i = 0});
    return vcount == 1 ? scalar : vectorize(dtype, vcount, std::vector<std::string>(vcount, scalar));
  }
  // The lvalue a LOAD reads and a STORE writes.
  virtual std::string lvalue(const Access& a) {
    if (a.vcount == a.ptr_vcount) return cat(a.ptr, "[", a.index, "]");
    return cat("(*((", type(a.dtype, a.vcount), "*)(", a.ptr, "+", a.index, ")))");
  }
  // Whether a memory access whose index adds a part that does not change in the innermost loop its other part
  // changes in may be written (ptr + invariant)[varying]: the compiler then keeps the moved pointer in a register
  // and folds the rest into the addressing mode. Without it clang turns (k + row * 1024) into an OR of disjoint bits
  // and recomputes each row's address per iteration (a matmul tile's 8 A rows: 16 scalar instructions beside 24
  // FMAs a step). Only for backends whose accesses are plain pointer arithmetic (not OpenCL's vloadN(offset, p)).
  virtual bool hoists_invariant_offsets() { return false; }
  // The value a LOAD reads (default: its lvalue). A backend whose vector accesses are calls (OpenCL's vloadN)
  // overrides this and store_statement() instead of lvalue().
  virtual std::string load_expr(const Access& a) { return lvalue(a); }
  // A packed LOAD (ABI 1.3) of `dtype` x a.vcount at byte a.index of the uint8 memory a.ptr, any alignment: the
  // renderers whose caps.packed_loads is set override it.
  virtual std::string packed_load(const Access& a, uint32_t dtype) {
    throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel_->name, ": a packed load of ", dtype_name(dtype), " from ",
                                        a.ptr, "; this renderer takes none (caps.packed_loads is 0)"));
  }
  // A LOAD from a TG_PARAM_IMAGE parameter (ABI 1.2): the renderers whose caps.image_max_width is set override it.
  virtual std::string image_load(const Access& a) {
    throw Error(TG_ERR_UNSUPPORTED,
                cat("kernel ", kernel_->name, ": ", a.ptr, " is an image; this renderer reads none"));
  }
  // The statement a STORE is (without its gate): default `lvalue = value;`.
  virtual std::string store_statement(const Access& a, const std::string& value) {
    return cat(lvalue(a), " = ", value, ";");
  }

  // Constants. Integers wrap to their dtype; floats print exactly (%.9g for float32, %.17g for float64).
  virtual std::string constant(uint32_t dtype, tg_kir_arg arg) {
    if (!is_float(dtype)) return int_literal(dtype, arg.i);
    if (std::isnan(arg.f)) return nan_literal(dtype);
    if (std::isinf(arg.f)) return inf_literal(dtype, arg.f < 0);
    return float_literal(dtype, arg.f);
  }
  virtual std::string inf_literal(uint32_t dtype, bool negative) {
    const std::string inf = negative ? "(-INFINITY)" : "INFINITY";
    return dtype == TG_DTYPE_FLOAT32 ? inf : cast(dtype, 1, TG_DTYPE_FLOAT32, inf);
  }
  virtual std::string nan_literal(uint32_t dtype) {
    return dtype == TG_DTYPE_FLOAT32 ? "NAN" : cast(dtype, 1, TG_DTYPE_FLOAT32, "NAN");
  }
  virtual std::string float_literal(uint32_t dtype, double value) {
    char text[64];
    if (dtype == TG_DTYPE_FLOAT32)
      std::snprintf(text, sizeof text, "%.9g", static_cast<double>(static_cast<float>(value)));
    else
      std::snprintf(text, sizeof text, "%.17g", value);
    std::string out = text;
    if (out.find_first_of(".e") == std::string::npos) out += ".0";
    if (dtype == TG_DTYPE_FLOAT32) out += "f";
    if (out[0] == '-') out = "(" + out + ")";
    return dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64 ? out : cast(dtype, 1, TG_DTYPE_FLOAT64, out);
  }
  virtual std::string int_literal(uint32_t dtype, int64_t value) {
    switch (static_cast<tg_dtype>(dtype)) {
      case TG_DTYPE_BOOL: return value != 0 ? "1" : "0";
      case TG_DTYPE_INT8: return signed_literal(static_cast<int8_t>(value), "");
      case TG_DTYPE_INT16: return signed_literal(static_cast<int16_t>(value), "");
      case TG_DTYPE_INT32: return signed_literal(static_cast<int32_t>(value), "");
      case TG_DTYPE_INT64: return signed_literal(value, "LL");
      case TG_DTYPE_UINT8: return std::to_string(static_cast<uint8_t>(value));
      case TG_DTYPE_UINT16: return std::to_string(static_cast<uint16_t>(value));
      case TG_DTYPE_UINT32: return std::to_string(static_cast<uint32_t>(value)) + "u";
      case TG_DTYPE_UINT64: return std::to_string(static_cast<uint64_t>(value)) + "ULL";
      case TG_DTYPE_FLOAT16:
      case TG_DTYPE_BFLOAT16:
      case TG_DTYPE_FLOAT32:
      case TG_DTYPE_FLOAT64:
      case TG_DTYPE_COUNT: break;
    }
    throw Error(TG_ERR_INTERNAL, cat("int_literal of ", dtype_name(dtype)));
  }
  // The name prefix of each value-producing instruction's local.
  virtual std::string value_prefix(uint32_t op) {
    switch (op) {
      case TG_KIR_LOAD: return "val";
      case TG_KIR_CAST:
      case TG_KIR_BITCAST: return "cast";
      case TG_KIR_VECTORIZE: return "vec";
      case TG_KIR_GEP: return "lane";
      case TG_KIR_DEFINE_REG: return "acc";
      case TG_KIR_DEFINE_LOCAL: return "temp";
      case TG_KIR_RANGE: return "ridx";
      case TG_KIR_CUSTOMI: return "cust";
      default: return "alu";  // a lookup table rather than a switch that must see every op
    }
  }
  // Names a backend's own code uses (helpers, its signature); a parameter with such a name is renamed.
  virtual bool is_reserved_name(const std::string& name) {
    static const char* const keywords[] = {
        "auto",     "break",  "case",     "char",   "const",  "continue", "default", "do",     "double",  "else",
        "enum",     "extern", "float",    "for",    "goto",   "if",       "inline",  "int",    "long",    "register",
        "restrict", "return", "short",    "signed", "sizeof", "static",   "struct",  "switch", "typedef", "union",
        "unsigned", "void",   "volatile", "while",  "bool",   "half",     "true",    "false"};
    for (const char* keyword : keywords)
      if (name == keyword) return true;
    return name.rfind("tg_", 0) == 0 || name.rfind("__", 0) == 0;
  }

  // ---- for subclasses ----------------------------------------------------------------------------------------
  const tg_kir_kernel& kernel() const { return *kernel_; }
  const tg_kir_inst& inst(uint32_t i) const { return kernel_->insts[i]; }
  uint32_t src(uint32_t i, uint32_t j) const { return static_cast<uint32_t>(kernel_->src_pool[inst(i).src_start + j]); }
  const std::string& name(uint32_t i) const { return names_[i]; }
  const std::string& param_name(uint32_t p) const { return param_names_[p]; }
  const tg_kir_inst& operand_inst(uint32_t i, uint32_t j) const { return inst(src(i, j)); }
  // The dtype an ALU op computes in: its operands' (a comparison's result is bool; WHERE's operand 0 is too).
  uint32_t alu_src_dtype(uint32_t i) const { return operand_inst(i, inst(i).op == TG_KIR_WHERE ? 1 : 0).dtype; }
  std::string type(uint32_t dtype, uint32_t vcount) {
    return vcount == 1 ? scalar_type(dtype) : vector_type(dtype, vcount);
  }
  std::string type_of(uint32_t i) { return type(inst(i).dtype, inst(i).vcount); }
  size_t open_blocks() const { return blocks_.size(); }
  void line(const std::string& text) { body_.append(2 * indent_, ' ').append(text).append("\n"); }
  // `header {`; an implicit block is closed at the end of the function instead of by an END instruction.
  void open_block(const std::string& header, uint32_t i, bool implicit) {
    line(header + " {");
    ++indent_;
    blocks_.push_back({i, implicit});
  }
  // The largest power of two (at most 2^16) the value of integer instruction i is known to be a multiple of, from
  // its constants, products, sums, shifts and widening casts (1 when nothing is known): an index that is a
  // multiple of a vector's lanes, into a buffer the allocator aligned, allows an aligned vector access. The
  // property survives integer wrap-around (2^16 divides every integer type's modulus from 32 bits on).
  uint64_t known_multiple(uint32_t i, int depth = 0) {
    constexpr uint64_t kMax = uint64_t{1} << 16;
    if (multiple_[i] != 0) return multiple_[i];
    if (depth > 64) return 1;  // deep chains are not worth the stack: assume nothing
    const tg_kir_inst& in = inst(i);
    const auto low_bit = [&](uint64_t v) { return v == 0 ? kMax : std::min(kMax, v & (~v + 1)); };
    uint64_t m = 1;
    if (is_int(in.dtype) && tg_dtype_size(in.dtype) >= 4) {
      switch (in.op) {
        case TG_KIR_CONST: m = low_bit(static_cast<uint64_t>(in.arg.i)); break;
        case TG_KIR_MUL:
          m = std::min(kMax, known_multiple(src(i, 0), depth + 1) * known_multiple(src(i, 1), depth + 1));
          break;
        case TG_KIR_ADD:
        case TG_KIR_SUB:
          m = std::min(known_multiple(src(i, 0), depth + 1), known_multiple(src(i, 1), depth + 1));
          break;
        case TG_KIR_SHL: {
          const tg_kir_inst& by = operand_inst(i, 1);
          if (by.op == TG_KIR_CONST && by.arg.i >= 0 && by.arg.i <= 16)
            m = std::min(kMax, known_multiple(src(i, 0), depth + 1) << by.arg.i);
          break;
        }
        case TG_KIR_CAST:
          if (is_int(operand_inst(i, 0).dtype) && tg_dtype_size(operand_inst(i, 0).dtype) >= 4)
            m = known_multiple(src(i, 0), depth + 1);
          break;
        default: break;
      }
    }
    return multiple_[i] = m;  // (conservative when a deep operand gave up)
  }

  // The tensor core that WMMA instruction i names (its arg indexes `units`, `count` of them), checked: throws
  // TG_ERR_INVALID_ARGUMENT for an index out of range (`where` says whose units: " on gfx1100", or "").
  const tg_tensor_core& wmma_unit(uint32_t i, const tg_tensor_core* units, size_t count,
                                  const std::string& where) const {
    const int64_t unit = inst(i).arg.i;
    if (unit < 0 || static_cast<uint64_t>(unit) >= count)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", kernel_->name, ": inst ", i, ": no tensor core ", unit, where));
    return units[unit];
  }
  // Checks WMMA instruction i's fragments for `tc`: A and B hold `na` and `nb` lanes of its input dtype, C and the
  // result `nc` float32 lanes; else TG_ERR_INVALID_ARGUMENT naming the unit ("WMMA m16n8k16").
  void check_wmma_fragments(uint32_t i, const tg_tensor_core& tc, uint32_t na, uint32_t nb, uint32_t nc,
                            const std::string& unit) const {
    const tg_kir_inst &in = inst(i), &a = operand_inst(i, 0), &b = operand_inst(i, 1), &c = operand_inst(i, 2);
    if (a.dtype != tc.dtype_in || a.vcount != na || b.dtype != tc.dtype_in || b.vcount != nb ||
        c.dtype != TG_DTYPE_FLOAT32 || c.vcount != nc || in.dtype != TG_DTYPE_FLOAT32 || in.vcount != nc)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", kernel_->name, ": inst ", i, ": ", unit, " takes ", dtype_name(tc.dtype_in), " x ", na,
                      ", x ", nb, " and float32 x ", nc, " fragments"));
  }

  Error invalid(uint32_t i, const std::string& what) const {
    return Error(TG_ERR_INVALID_ARGUMENT,
                 cat("kernel ", kernel_->name, ": inst ", i, " (", op_name(inst(i).op), "): ", what));
  }

 private:
  struct Block {
    uint32_t inst;
    bool implicit;
  };

  static std::string signed_literal(int64_t value, const char* suffix) {
    if (value == INT64_MIN) return "(-9223372036854775807LL-1)";  // -9223372036854775808 is not a literal in C
    if (value == INT32_MIN) return cat("(-2147483647", suffix, "-1)");
    return value < 0 ? cat("(", value, suffix, ")") : cat(value, suffix);
  }
  static bool is_identifier(const char* s) {
    if (s == nullptr || !(std::isalpha(static_cast<unsigned char>(*s)) || *s == '_')) return false;
    for (; *s; ++s)
      if (!(std::isalnum(static_cast<unsigned char>(*s)) || *s == '_')) return false;
    return true;
  }
  // The snippet of a CUSTOM/CUSTOMI instruction with its operands (values or pointers) substituted.
  std::string custom_code(uint32_t i) {
    const tg_kir_inst& in = inst(i);
    std::vector<std::string> srcs;
    for (uint32_t j = 0; j < in.nsrc; ++j) srcs.push_back(operand(i, j, is_pointer(src(i, j))));
    return fill(kernel_->strings[in.arg.i], srcs);
  }
  bool is_pointer(uint32_t i) const {
    const tg_kir_inst& in = inst(i);
    if (in.op == TG_KIR_PARAM) return kernel_->params[in.arg.i].kind != TG_PARAM_VAR;
    return in.op == TG_KIR_DEFINE_REG || in.op == TG_KIR_DEFINE_LOCAL;
  }
  // A parameter's name in the source: its own when that is a safe identifier, else `param<p>`.
  bool is_usable_param_name(const std::string& s, uint32_t p) {
    if (!is_identifier(s.c_str()) || is_reserved_name(s)) return false;
    for (uint32_t q = 0; q < p; ++q)
      if (param_names_[q] == s) return false;
    const size_t digits = s.find_last_not_of("0123456789") + 1;  // generated locals are <prefix><digits>
    static const char* const generated[] = {"alu",  "val",  "cast",  "vec",  "lane", "acc", "cust",
                                            "temp", "ridx", "param", "gidx", "grp",  "lidx"};
    if (digits == s.size()) return true;
    for (const char* prefix : generated)
      if (s.compare(0, digits, prefix) == 0) return false;
    return true;
  }

  void start(const tg_kir_kernel& k) {
    check_kir(k);
    if (!is_identifier(k.name)) throw Error(TG_ERR_INVALID_ARGUMENT, "kernel name is not a C identifier");
    kernel_ = &k;
    names_.assign(k.ninsts, "");
    multiple_.assign(k.ninsts, 0);
    loop_.assign(k.ninsts, 0);  // operands come before their users: one pass
    for (uint32_t i = 0; i < k.ninsts; ++i) {
      if (k.insts[i].op == TG_KIR_RANGE)
        loop_[i] = i + 1;
      else
        for (uint32_t j = 0; j < k.insts[i].nsrc; ++j) loop_[i] = std::max(loop_[i], loop_[src(i, j)]);
    }
    blocks_.clear();
    body_.clear();
    indent_ = 1;
    param_names_.clear();
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      const std::string wanted = param.name ? param.name : "";
      param_names_.push_back(is_usable_param_name(wanted, p) ? wanted : cat("param", p));
    }
  }

  // The rendered operand j of instruction i (check_kir made sure it is a value, or a pointer where one belongs,
  // still in scope).
  const std::string& operand(uint32_t i, uint32_t j, bool /*pointer*/ = false) { return names_[src(i, j)]; }

  // index = x + y where y does not change in x's innermost loop: the access becomes (ptr + y)[x].
  void split_index(uint32_t index, Access& a) {
    const tg_kir_inst& in = inst(index);
    if (in.op != TG_KIR_ADD || in.vcount != 1) return;
    uint32_t x = src(index, 0), y = src(index, 1);
    if (loop_[x] < loop_[y]) std::swap(x, y);
    if (loop_[y] >= loop_[x]) return;
    a.ptr = cat("(", a.ptr, "+", names_[y], ")");
    a.index = names_[x];
  }

  void close_block() {
    blocks_.pop_back();
    --indent_;
    line("}");
  }
  // Closes the innermost block, the one instruction i names (check_kir checked the nesting; a backend opens
  // implicit blocks only outside every explicit one).
  void close_block_of(uint32_t i) {
    if (blocks_.empty() || blocks_.back().implicit || blocks_.back().inst != src(i, 0))
      throw Error(TG_ERR_INTERNAL, cat("kernel ", kernel_->name, ": inst ", i, " (", op_name(inst(i).op),
                                       "): an implicit block of the renderer is in the way"));
    close_block();
  }
  // Declares instruction i's value: `T alu12 = expr;`.
  void define(uint32_t i, const std::string& expr) {
    names_[i] = cat(value_prefix(inst(i).op), i);
    line(cat(type_of(i), " ", names_[i], " = ", expr, ";"));
  }

  void emit(uint32_t i) {
    const tg_kir_inst& in = inst(i);
    switch (static_cast<tg_kir_op>(in.op)) {
      case TG_KIR_PARAM: {
        names_[i] = param_names_[in.arg.i];
        return;
      }
      case TG_KIR_CONST: names_[i] = constant(in.dtype, in.arg); return;
      case TG_KIR_SPECIAL: {
        const uint64_t kind = static_cast<uint64_t>(in.arg.i) / 4, dim = static_cast<uint64_t>(in.arg.i) % 4;
        names_[i] = special_name(static_cast<uint32_t>(kind), static_cast<uint32_t>(dim));
        emit_special(i, static_cast<uint32_t>(kind), static_cast<uint32_t>(dim));
        return;
      }
      case TG_KIR_DEFINE_REG:
      case TG_KIR_DEFINE_LOCAL: {
        names_[i] = cat(value_prefix(in.op), i);
        line(in.op == TG_KIR_DEFINE_REG ? reg_decl(type_of(i), names_[i], in.arg.i)
                                        : local_decl(type_of(i), names_[i], in.arg.i));
        return;
      }
      case TG_KIR_RANGE: {
        const std::string end = operand(i, 0);
        names_[i] = cat(value_prefix(in.op), i);
        open_block(range_header(type_of(i), names_[i], end), i, false);
        return;
      }
      case TG_KIR_ENDRANGE: close_block_of(i); return;
      case TG_KIR_IF: open_block(if_header(operand(i, 0)), i, false); return;
      case TG_KIR_ENDIF: close_block_of(i); return;
      case TG_KIR_BARRIER: line(barrier()); return;
      case TG_KIR_LOAD:
      case TG_KIR_STORE: {
        const bool is_store = in.op == TG_KIR_STORE;
        const tg_kir_inst& ptr = operand_inst(i, 0);
        const tg_kir_inst& elem = is_store ? operand_inst(i, 2) : in;
        const bool image = ptr.op == TG_KIR_PARAM && kernel_->params[ptr.arg.i].kind == TG_PARAM_IMAGE;
        Access a{operand(i, 0, true),
                 operand(i, 1),
                 ptr.dtype,
                 elem.vcount,
                 ptr.vcount,
                 ptr.addrspace,
                 known_multiple(src(i, 1)),
                 image ? kernel_->params[ptr.arg.i].reserved : 0u};
        if (!image && hoists_invariant_offsets()) split_index(src(i, 1), a);
        // a packed load (ABI 1.3): a wider value read at a byte index of uint8 memory
        const bool packed = !is_store && !image && elem.dtype != ptr.dtype;  // check_kir: only from uint8 memory
        const uint32_t gate = is_store ? 3 : 2;
        if (!is_store) {
          const std::string value = image ? image_load(a) : packed ? packed_load(a, in.dtype) : load_expr(a);
          return define(
              i, in.nsrc > gate ? cat("(", operand(i, gate), "?", value, ":", zero(in.dtype, in.vcount), ")") : value);
        }
        const std::string store = store_statement(a, operand(i, 2));
        line(in.nsrc > gate ? cat(if_header(operand(i, gate)), " ", store) : store);
        return;
      }
      case TG_KIR_VECTORIZE: {
        std::vector<std::string> lanes;
        for (uint32_t j = 0; j < in.nsrc; ++j) lanes.push_back(operand(i, j));
        return define(i, vectorize(in.dtype, in.vcount, lanes));
      }
      case TG_KIR_GEP: {
        return define(i, gep(operand(i, 0), static_cast<uint32_t>(in.arg.i)));
      }
      case TG_KIR_CAST: return define(i, cast(in.dtype, in.vcount, operand_inst(i, 0).dtype, operand(i, 0)));
      case TG_KIR_BITCAST: {
        const tg_kir_inst& from = operand_inst(i, 0);
        return define(i, bitcast(in.dtype, in.vcount, from.dtype, operand(i, 0)));
      }
      TG_SDK_KIR_ALU_CASES: {
        // check_kir: operands share the result's dtype and lanes (but a comparison's result and WHERE's condition)
        const uint32_t src_dtype = alu_src_dtype(i);
        std::vector<std::string> srcs;
        for (uint32_t j = 0; j < in.nsrc; ++j) srcs.push_back(operand(i, j));
        if (!((claimed_ops(src_dtype) >> in.op) & 1u))
          throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel_->name, ": the ", renderer_name(), " renderer has no ",
                                              op_name(in.op), " on ", dtype_name(src_dtype), " (inst ", i, ")"));
        return define(i, alu(i, srcs));
      }
      case TG_KIR_CUSTOM: {
        std::string code = custom_code(i);
        const bool terminated = !code.empty() && (code.back() == ';' || code.back() == '}');
        line(terminated ? code : code + ";");
        return;
      }
      case TG_KIR_CUSTOMI: return define(i, "(" + custom_code(i) + ")");
      case TG_KIR_WMMA: return define(i, wmma(i, {operand(i, 0), operand(i, 1), operand(i, 2)}));
      case TG_KIR_TILE_MMA: {
        std::vector<std::string> operands;
        for (uint32_t j = 0; j < in.nsrc; ++j) operands.push_back(operand(i, j, j % 3 == 0 && j < 9));
        line(tile_mma(i, operands));
        return;
      }
      case TG_KIR_OP_COUNT: break;
    }
    throw invalid(i, "unknown op");
  }

  const tg_kir_kernel* kernel_ = nullptr;
  std::vector<std::string> names_, param_names_;
  std::vector<uint64_t> multiple_;  // per instruction: known_multiple(), 0 until computed
  std::vector<uint32_t> loop_;      // per instruction: 1 + the last RANGE it depends on (0: none)
  std::vector<Block> blocks_;       // open blocks, innermost last
  std::string body_;
  int indent_ = 1;
};

}  // namespace tg::sdk
