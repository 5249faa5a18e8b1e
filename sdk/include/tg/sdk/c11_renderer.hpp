// tg::sdk::C11Renderer: the C preset of the renderer base. It emits portable ISO C11 with no undefined behaviour
// for any KIR its caps admit, so a plugin that runs kernels on a host (compiled by the system's C compiler, a
// cross compiler, or a C interpreter) is a screen of code: derive, name the kernel's export attribute if needed,
// and compile the text with `-std=c11 -O2 -ffp-contract=off` (never -ffast-math; -fwrapv is not needed, nothing
// overflows; -ffp-contract=off because GCC ignores the FP_CONTRACT pragma the preamble has and, in its GNU modes,
// fuses a MUL and a separate ADD into an FMA).
//
// How each KIR rule becomes defined C:
//   integers wrap          ADD SUB MUL NEG MULACC and SHL compute in the unsigned type of at least 32 bits and
//                          convert back (C's signed overflow, and uint16 * uint16 promoted to int, are undefined)
//   IDIV / MOD             x / 0 = x % 0 = 0 and INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0, through helpers
//   shifts                 the count modulo 32 (64 for 64-bit types); SHR of a negative value as ~(~x >> n)
//   float MAX              NaN if either operand is NaN, the second operand on ties
//   float -> int CAST      truncates; an out-of-range value or NaN (undefined in KIR and C) gives 0, not UB
//   float16 / bfloat16     uint16_t storage, converted through float exactly, rounded to nearest even
//   BITCAST                a union compound literal (defined type punning in C11)
//   MUL then ADD           `#pragma STDC FP_CONTRACT OFF` (clang) and -ffp-contract=off (GCC): two roundings
// Work-items: global dim 0 is a loop over [gidx0_start, gidx0_end) inside `void NAME(const unsigned char* args,
// int64_t gidx0_start, int64_t gidx0_end)`; the parameters come from the packed blob (tg_param_layout) with memcpy.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace tg::sdk {

// Float16/bfloat16 <-> float in C11: exact widening, and narrowing from double rounded once to nearest even (NaN
// stays a quiet NaN, overflow is inf, subnormals are kept). Shared by every renderer that stores 16-bit floats
// as integers.
inline constexpr const char* kSmallFloatHelpersC =
    R"(/* d rounded to nearest even in a binary float with ebits exponent and mbits mantissa bits: its bits */
static inline unsigned int tg_round_small_float(double d, int ebits, int mbits) {
  union { double d; unsigned long long b; } pun = {d};
  unsigned long long b = pun.b, man = b & 0xfffffffffffffULL;
  unsigned int sign = (unsigned int)(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
  int exp = (int)((b >> 52) & 0x7ff), e = exp - 1023 + (1 << (ebits - 1)) - 1;
  if (exp == 0x7ff) /* inf, or a quiet NaN keeping the top of the payload */
    return sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | (unsigned int)(man >> (52 - mbits)) : 0u);
  if (e >= (int)emax) return sign | (emax << mbits); /* overflow: inf */
  unsigned long long m = man | (1ULL << 52);
  int shift = 52 - mbits + (e <= 0 ? 1 - e : 0); /* bits to drop; subnormal results drop more */
  if (shift > 54) return sign; /* below half the smallest subnormal */
  unsigned int q = e <= 0 ? (unsigned int)(m >> shift)
                          : ((unsigned int)e << mbits) | (unsigned int)((m >> shift) & ((1u << mbits) - 1u));
  unsigned long long rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u; /* a carry into the exponent is right */
  return sign | q;
}
static inline float tg_bits_to_float(unsigned int bits) {
  union { unsigned int b; float f; } pun = {bits};
  return pun.f;
}
static inline float tg_f16_bits_to_float(unsigned int h) {
  unsigned int sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ((float)man * 0x1p-24f); /* zero or subnormal: exact */
  return tg_bits_to_float(sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13));
}
static inline float tg_bf16_bits_to_float(unsigned int h) { return tg_bits_to_float(h << 16); }
)";

class C11Renderer : public CRenderer {
 public:
  // The capabilities the preset renders completely: all 13 dtypes as scalars, the standard op sets
  // (tg/sdk/op_sets.hpp), packed loads, global dim 0 only, no local memory, CUSTOM snippets in C. A subclass
  // starts from these and changes what its target does differently.
  static tg_renderer_caps preset_caps() {
    tg_renderer_caps caps{};
    caps.struct_size = sizeof(caps);
    caps.language = "c";
    caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) caps.ops[d] = standard_ops(d), caps.vector_widths[d] = 1u << 1;
    caps.max_global_dims = 1;
    caps.max_global[0] = UINT32_MAX;
    caps.max_global[1] = caps.max_global[2] = 1;
    caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1;
    caps.max_local_threads = 1;
    caps.max_params = 256;
    caps.packed_loads = kPackableDtypes;
    return caps;
  }

  // Renders one kernel (the base's render() with this preset's per-kernel state reset).
  std::string render_kernel(const tg_kir_kernel& kernel) {
    helpers_.clear();
    helper_names_.clear();
    gidx_loop_open_ = false;
    return render(kernel);
  }

 protected:
  // ---- hooks for a subclass ------------------------------------------------------------------------------------
  // Written before `void NAME(...)`: an export attribute, `static`, a calling convention. Default: nothing.
  virtual std::string kernel_prefix() { return ""; }
  // The C function a float op calls (`sqrtf`): a freestanding target without <math.h> returns its builtins.
  virtual std::string math_function(uint32_t op, uint32_t dtype) {
    const bool f32 = dtype == TG_DTYPE_FLOAT32;
    switch (op) {
      case TG_KIR_SQRT: return f32 ? "sqrtf" : "sqrt";
      case TG_KIR_TRUNC: return f32 ? "truncf" : "trunc";
      case TG_KIR_FMA: return f32 ? "fmaf" : "fma";
      case TG_KIR_EXP2: return f32 ? "exp2f" : "exp2";
      case TG_KIR_LOG2: return f32 ? "log2f" : "log2";
      case TG_KIR_SIN: return f32 ? "sinf" : "sin";
      default: break;  // only the math ops above reach here
    }
    throw Error(TG_ERR_INTERNAL, cat(op_name(op), " is not a math function"));
  }
  // The headers the preamble includes (a freestanding target may drop <math.h> and define its own).
  virtual std::string includes() {
    return "#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <string.h>\n";
  }

  // ---- the preset --------------------------------------------------------------------------------------------
  uint64_t claimed_ops(uint32_t dtype) override { return standard_ops(dtype); }
  std::string renderer_name() override { return "C11 preset"; }

  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool",    "int8_t",   "int16_t",  "int32_t",  "int64_t",
                                                      "uint8_t", "uint16_t", "uint32_t", "uint64_t", "tg_half",
                                                      "tg_bf16", "float",    "double"};
    return names[dtype];
  }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": the C preset renders scalars only (",
                                        dtype_name(dtype), " x ", vcount, ")"));
  }

  std::string preamble() override {
    std::string out =
        cat("/* tg kernel ", kernel().name,
            ": ISO C11 from tg::sdk::C11Renderer, free of undefined "
            "behaviour; compile with -std=c11 -ffp-contract=off, never -ffast-math */\n",
            includes(), "#pragma STDC FP_CONTRACT OFF\n",
            "typedef uint16_t tg_half; /* float16 bits */\ntypedef uint16_t tg_bf16; /* bfloat16 bits */\n");
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    return cat(kernel_prefix(), "void ", kernel().name,
               "(const unsigned char* args, int64_t gidx0_start, int64_t gidx0_end)");
  }

  // Parameters from the packed blob at their tg_param_layout offsets, copied out (no aliasing assumptions).
  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    std::vector<size_t> offsets(k.nparams);
    tg_param_layout(k.params, k.nparams, offsets.data());
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      const std::string t = scalar_type(param.dtype), name = param_name(p);
      if (param.kind == TG_PARAM_VAR) {
        line(cat(t, " ", name, "; memcpy(&", name, ", args + ", offsets[p], ", sizeof ", name, ");"));
        continue;
      }
      use_helper("arg_pointer",
                 "static inline void* tg_arg_pointer(const unsigned char* args, size_t offset) {\n"
                 "  uint64_t address; memcpy(&address, args + offset, sizeof address);\n"
                 "  return (void*)(uintptr_t)address;\n}\n");
      line(cat(param.writable ? "" : "const ", t, "* ", name, " = tg_arg_pointer(args, ", offsets[p], ");"));
    }
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items) line("if (gidx0_start != 0) return; /* no work-item id: the body runs once per launch */");
    line("(void)gidx0_end;");
  }

  // Global dim 0 is a loop over this call's range that encloses the rest of the body.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    if (kind != TG_SPECIAL_GLOBAL || dim != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": the C preset has only global dim 0 (inst ", i, ")"));
    if (gidx_loop_open_) return;  // a repeated SPECIAL names the same loop variable
    if (open_blocks() != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
    open_block("for (int64_t gidx0 = gidx0_start; gidx0 < gidx0_end; ++gidx0)", i, true);
    gidx_loop_open_ = true;
  }

  bool is_reserved_name(const std::string& name) override {
    if (CRenderer::is_reserved_name(name) || name == "args" || name == "gidx0_start" || name == "gidx0_end")
      return true;
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d)
      if (name == scalar_type(d)) return true;
    static const char* const libc[] = {"memcpy", "sqrtf", "sqrt", "truncf", "trunc", "fmaf",     "fma", "exp2f",
                                       "exp2",   "log2f", "log2", "sinf",   "sin",   "INFINITY", "NAN", "NULL"};
    return std::find(std::begin(libc), std::end(libc), name) != std::end(libc);
  }

  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    if (is_float(src_dtype) && (src_dtype == TG_DTYPE_FLOAT16 || src_dtype == TG_DTYPE_BFLOAT16))
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": ", op_name(op), " on ", dtype_name(src_dtype),
                                          ", a storage type in the C preset (the core computes in float32)"));
    return is_float(src_dtype) ? float_template(op, src_dtype) : int_template(op, dtype, src_dtype);
  }

  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    if (to == from) return x;
    if (is_small_float(from)) return cast(to, vcount, TG_DTYPE_FLOAT32, widen_small_float(from, x));
    if (to == TG_DTYPE_BOOL) return cat("((", x, ") != 0)");
    if (is_small_float(to)) {
      use_small_float_helpers();
      return cat("((", scalar_type(to), ")tg_round_small_float((double)(", x, "), ",
                 to == TG_DTYPE_FLOAT16 ? "5, 10" : "8, 7", "))");
    }
    if (is_float(from) && !is_float(to)) {  // truncation, in range; KIR leaves the rest undefined, C must not
      const std::string name = dtype_name(to);
      const uint32_t bits = 8 * tg_dtype_size(to);
      // the doubles that truncate into range: above -2^(n-1) - 1 (exact up to 32 bits; from -2^63 on for 64)
      const std::string above = !is_signed_int(to) ? "x > -1.0"
                                : bits == 64       ? "x >= -0x1p63"
                                                   : cat("x > -0x1p", bits - 1, " - 1.0");
      const std::string below = cat("x < 0x1p", is_signed_int(to) ? bits - 1 : bits);
      use_helper("f2i_" + name, cat("static inline ", scalar_type(to), " tg_f2i_", name, "(double x) { return ", above,
                                    " && ", below, " ? (", scalar_type(to), ")x : 0; }\n"));
      return cat("tg_f2i_", name, "(", x, ")");
    }
    return cat("((", scalar_type(to), ")(", x, "))");
  }

  std::string bitcast(uint32_t to, uint32_t /*vcount*/, uint32_t from, const std::string& x) override {
    return cat("(((union { ", scalar_type(from), " from; ", scalar_type(to), " to; }){ .from = (", x, ") }).to)");
  }

  std::string packed_load(const Access& a, uint32_t dtype) override {
    const std::string t = scalar_type(dtype), name = dtype_name(dtype);
    use_helper("packed_" + name, cat("static inline ", t, " tg_load_", name, "(const uint8_t* p, int64_t i) { ", t,
                                     " v; memcpy(&v, p + i, sizeof v); return v; }\n"));
    return cat("tg_load_", name, "(", a.ptr, ", ", a.index, ")");
  }

  std::string inf_literal(uint32_t dtype, bool negative) override {
    const std::string inf = negative ? "(-INFINITY)" : "INFINITY";
    return dtype == TG_DTYPE_FLOAT32 ? inf : cast(dtype, 1, TG_DTYPE_FLOAT32, inf);
  }

  // Emits `text` into the preamble once, under `key`.
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

 private:
  static bool is_small_float(uint32_t dtype) { return dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16; }
  // The unsigned type integer arithmetic on `dtype` wraps in: at least 32 bits, so no promotion to int happens.
  static std::string wrap_type(uint32_t dtype) { return tg_dtype_size(dtype) == 8 ? "uint64_t" : "uint32_t"; }

  void use_small_float_helpers() { use_helper("small_float", kSmallFloatHelpersC); }
  std::string widen_small_float(uint32_t from, const std::string& x) {
    use_small_float_helpers();
    return cat(from == TG_DTYPE_FLOAT16 ? "tg_f16_bits_to_float(" : "tg_bf16_bits_to_float(", x, ")");
  }

  std::string float_template(uint32_t op, uint32_t dtype) {
    const std::string t = scalar_type(dtype), name = dtype_name(dtype);
    switch (op) {
      case TG_KIR_SQRT:
      case TG_KIR_TRUNC:
      case TG_KIR_EXP2:
      case TG_KIR_LOG2:
      case TG_KIR_SIN: return math_function(op, dtype) + "({0})";
      case TG_KIR_FMA: return math_function(op, dtype) + "({0},{1},{2})";
      case TG_KIR_RECIP: return dtype == TG_DTYPE_FLOAT32 ? "(1.0f/{0})" : "(1.0/{0})";
      case TG_KIR_MAX:  // a + b is NaN when either is
        use_helper("max_" + name, cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t,
                                      " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"));
        return cat("tg_max_", name, "({0},{1})");
      default: return CRenderer::op_template(op, dtype, dtype);
    }
  }

  std::string int_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) {
    if (src_dtype == TG_DTYPE_BOOL) return CRenderer::op_template(op, dtype, src_dtype);
    const std::string t = scalar_type(src_dtype), u = wrap_type(src_dtype), name = dtype_name(src_dtype);
    const bool is_signed = is_signed_int(src_dtype);
    const uint32_t mask = tg_dtype_size(src_dtype) == 8 ? 63 : 31;
    const auto wrapped = [&](const std::string& expr) { return cat("((", t, ")(", expr, "))"); };
    switch (op) {
      case TG_KIR_NEG: return wrapped(cat("0u - (", u, "){0}"));
      case TG_KIR_ADD: return wrapped(cat("(", u, "){0} + (", u, "){1}"));
      case TG_KIR_SUB: return wrapped(cat("(", u, "){0} - (", u, "){1}"));
      case TG_KIR_MUL: return wrapped(cat("(", u, "){0} * (", u, "){1}"));
      case TG_KIR_MULACC: return wrapped(cat("(", u, "){0} * (", u, "){1} + (", u, "){2}"));
      case TG_KIR_SHL: return wrapped(cat("(", u, "){0} << ((", u, "){1} & ", mask, "u)"));
      case TG_KIR_SHR: {
        if (!is_signed) return wrapped(cat("(", u, "){0} >> ((", u, "){1} & ", mask, "u)"));
        const std::string s = mask == 63 ? "int64_t" : "int32_t";  // the signed value, widened exactly
        return wrapped(cat("(", s, "){0} < 0 ? ~(~(", s, "){0} >> ((", u, "){1} & ", mask, "u)) : (", s, "){0} >> ((",
                           u, "){1} & ", mask, "u)"));
      }
      case TG_KIR_IDIV:
      case TG_KIR_MOD: {
        const std::string neg = cat("(", t, ")(0u - (", u, ")a)");
        use_helper("div_" + name,
                   is_signed ? cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t,
                                   " b) { return b == 0 ? 0 : b == -1 ? ", neg, " : (", t,
                                   ")(a / b); }\nstatic inline ", t, " tg_mod_", name, "(", t, " a, ", t,
                                   " b) { return b == 0 || b == -1 ? 0 : (", t, ")(a % b); }\n")
                             : cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t,
                                   " b) { return b == 0 ? 0 : (", t, ")(a / b); }\nstatic inline ", t, " tg_mod_", name,
                                   "(", t, " a, ", t, " b) { return b == 0 ? 0 : (", t, ")(a % b); }\n"));
        return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
      }
      case TG_KIR_MAX: return "({0}>{1}?{0}:{1})";
      case TG_KIR_AND:
      case TG_KIR_OR:
      case TG_KIR_XOR: return wrapped(CRenderer::op_template(op, dtype, src_dtype));
      default: return CRenderer::op_template(op, dtype, src_dtype);
    }
  }

  std::vector<std::string> helpers_;
  std::set<std::string> helper_names_;
  bool gidx_loop_open_ = false;
};

}  // namespace tg::sdk
