// tg::sdk::ClangVectorRenderer: the "clang vector C" preset of the renderer base, for plugins that compile the
// kernels with clang for a CPU-like target (the CPU plugin for the host, the DSP plugin for Hexagon). It emits
// freestanding C with no headers: its own <stdint.h> typedefs, clang's ext_vector_type vectors (each with an
// element-aligned `_u` twin for a vector at any element index, and a byte-aligned `_p` twin for packed loads),
//   void NAME(const unsigned char* restrict args, long long gidx0_start, long long gidx0_end)
// with the parameters read from the packed blob at their tg_param_layout offsets, and global dim 0 as a loop over
// [gidx0_start, gidx0_end) around the body. IDIV/MOD by 0 give 0 and INT_MIN / -1 wraps; shift counts are taken
// modulo the width; float MAX propagates NaN. Compile the text with -fwrapv -ffp-contract=off (no fast-math).
//
// A subclass says what its target does differently: the first preamble line, how half and bfloat16 are typed and
// converted, the width of a pointer in a buffer's 64-bit argument slot (32 on Hexagon), and the float MAX helper;
// it may override any CRenderer hook besides (calling this class's version for what it does not handle).
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/c11_renderer.hpp>
#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tg::sdk {

class ClangVectorRenderer : public CRenderer {
 public:
  // The preset's capabilities: every dtype, the standard op sets, `lanes` (a mask of vector widths, bit n = n
  // lanes) for every dtype but bool (scalar), global dim 0 only, packed loads. A subclass adjusts ops and threads.
  static tg_renderer_caps preset_caps(uint32_t lanes) {
    tg_renderer_caps caps = C11Renderer::preset_caps();
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d)
      caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | lanes;
    return caps;
  }

  // Renders one kernel (the base's render() with this preset's per-kernel state reset).
  std::string render_kernel(const tg_kir_kernel& kernel) {
    vector_types_.clear();
    packed_types_.clear();
    helpers_.clear();
    helper_names_.clear();
    gidx_loop_open_ = false;
    return render(kernel);
  }

 protected:
  // ---- hooks for a subclass ------------------------------------------------------------------------------------
  // The preamble's first line, a comment naming the kernel and how to compile it.
  virtual std::string preamble_comment() = 0;
  // The typedefs of `half` and `bfloat16` (native types, or unsigned short bit patterns).
  virtual std::string small_float_typedefs() = 0;
  // How 16-bit floats convert: the functions (to float, from double) and the text that defines or declares them,
  // added to the preamble once a kernel converts one.
  struct SmallFloatCalls {
    std::string f16_to_float, bf16_to_float, double_to_f16, double_to_bf16, helpers;
  };
  virtual const SmallFloatCalls& small_float_calls() = 0;
  // The bits of a pointer: a buffer's 64-bit argument slot holds an address this wide (Hexagon: 32).
  virtual unsigned pointer_bits() { return 64; }
  // `static inline T tg_max_NAME(T a, T b)` for a float dtype: NaN if either operand is (a + b is), else the
  // larger. A target whose compiler folds the selects into a max instruction that drops NaN overrides it.
  virtual std::string float_max_helper(uint32_t /*dtype*/, const std::string& t, const std::string& name) {
    return cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t,
               " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n");
  }

  // Adds `text` to the preamble the first time `key` is used by this kernel (first-use order: same kernel, same text).
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  // ---- the CRenderer hooks this preset fills ---------------------------------------------------------------------
  // Register arrays on a cache line: the vector loads of a staged panel then never straddle two lines.
  std::string reg_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat(type, " ", name, "[", count, "] __attribute__((aligned(64)));");
  }
  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool",     "int8_t",   "int16_t",  "int32_t",  "int64_t",
                                                      "uint8_t",  "uint16_t", "uint32_t", "uint64_t", "half",
                                                      "bfloat16", "float",    "double"};
    return names[dtype];
  }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    vector_types_.insert({dtype, vcount});
    return CRenderer::vector_type(dtype, vcount);
  }

  std::string preamble() override {
    std::string out = preamble_comment() +
                      "typedef _Bool bool;\n"
                      "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long long "
                      "int64_t;\n"
                      "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\ntypedef unsigned int "
                      "uint32_t;\n"
                      "typedef unsigned long long uint64_t;\n" +
                      small_float_typedefs();
    // Each vector type also gets an `_u` twin aligned like its element, for loads/stores at any element index.
    for (const auto& [dtype, vcount] : vector_types_) {
      const std::string scalar = scalar_type(dtype), vec = CRenderer::vector_type(dtype, vcount);
      out += cat("typedef ", scalar, " ", vec, " __attribute__((ext_vector_type(", vcount, ")));\n", "typedef ", scalar,
                 " ", vec, "_u __attribute__((ext_vector_type(", vcount, "), aligned(", tg_dtype_size(dtype), ")));\n");
    }
    // and packed loads read through a byte-aligned `_p` twin of their scalar or vector type
    for (const auto& [dtype, vcount] : packed_types_)
      out += cat("typedef ", scalar_type(dtype), " ", type(dtype, vcount), "_p __attribute__((",
                 vcount > 1 ? cat("ext_vector_type(", vcount, "), ") : std::string(), "aligned(1)));\n");
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    return cat("void ", kernel().name,
               "(const unsigned char* restrict args, long long gidx0_start, long long gidx0_end)");
  }

  // Parameters come from the packed blob at their tg_param_layout offsets; the blob is 8-byte aligned and each
  // offset is naturally aligned, so a typed read is safe.
  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    std::vector<size_t> offsets(k.nparams);
    tg_param_layout(k.params, k.nparams, offsets.data());
    const std::string narrow = pointer_bits() == 64 ? "" : cat("(uint", pointer_bits(), "_t)");
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      const std::string t = scalar_type(param.dtype), at = cat("(args + ", offsets[p], ")");
      if (param.kind == TG_PARAM_BUFFER) {
        const std::string ptr = cat(param.writable ? "" : "const ", t, "*");
        line(cat(ptr, " ", param_name(p), " = (", ptr, ")", narrow, "*(const uint64_t*)", at, ";"));
      } else {
        line(cat("const ", t, " ", param_name(p), " = *(const ", t, "*)", at, ";"));
      }
    }
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items) line("if (gidx0_start != 0) return; /* no work-item id: the body runs once per launch */");
  }

  // The one work-item id, global dim 0, is a loop over this call's range that encloses the rest of the body.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    if (kind != TG_SPECIAL_GLOBAL || dim != 0)
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": the ", renderer_name(),
                                          " renderer has only global dim 0 (inst ", i, ")"));
    if (gidx_loop_open_) return;  // a repeated SPECIAL names the same loop variable
    if (open_blocks() != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
    open_block("for (long long gidx0 = gidx0_start; gidx0 < gidx0_end; ++gidx0)", i, true);
    gidx_loop_open_ = true;
  }

  // Besides C's: the signature's names and every type the preamble may declare (`int32_t`, `float4`, `float4_u`).
  bool is_reserved_name(const std::string& name) override {
    if (CRenderer::is_reserved_name(name) || name == "args" || name == "gidx0_start" || name == "gidx0_end")
      return true;
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
      const std::string base = CRenderer::vector_type(d, 1);  // "float1": strip the count to get the base name
      const std::string stem = base.substr(0, base.size() - 1);
      if (name == scalar_type(d) || (name.rfind(stem, 0) == 0 && name.size() > stem.size() &&
                                     std::isdigit(static_cast<unsigned char>(name[stem.size()]))))
        return true;
    }
    return false;
  }

  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const bool f32 = src_dtype == TG_DTYPE_FLOAT32;
    const std::string type = scalar_type(src_dtype), name = dtype_name(src_dtype);
    if (op == TG_KIR_SQRT) return f32 ? "__builtin_sqrtf({0})" : "__builtin_sqrt({0})";
    if (op == TG_KIR_TRUNC) return f32 ? "__builtin_truncf({0})" : "__builtin_trunc({0})";
    if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : "(1.0/{0})";
    if (op == TG_KIR_FMA) return "__builtin_elementwise_fma({0},{1},{2})";  // scalars and vectors alike
    if (op == TG_KIR_MAX && is_float(src_dtype)) {
      use_helper("max_" + name, float_max_helper(src_dtype, type, name));
      return cat("tg_max_", name, "({0},{1})");
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, guarded_division_helpers(type, name, is_signed_int(src_dtype)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    // Shifts: the count is taken modulo the promoted width (C leaves larger counts undefined), and a left
    // shift goes through unsigned so that shifting into or out of the sign bit wraps instead of being UB.
    const bool wide = tg_dtype_size(src_dtype) == 8;
    if (op == TG_KIR_SHL)
      return cat("((", type, ")((", wide ? "uint64_t" : "uint32_t", "){0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  // Vectors: ops whose C vector form means the same as per lane stay whole; the rest render lane by lane. A right
  // shift of 32- and 64-bit lanes is whole too (`v >> (s & 31)` or `& 63` shifts each lane by its own masked count:
  // one vpsrlvd/vpsravd where lane by lane it was 16 extracts, shifts and inserts: the K-quants' nibble words). Narrow
  // lanes stay per lane: C promotes a scalar to int before shifting, a vector lane is not promoted.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint64_t whole = op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) |
                           op_bit(TG_KIR_FDIV) | op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) |
                           op_bit(TG_KIR_MULACC) | op_bit(TG_KIR_FMA);
    const std::string tmpl = op_template(in.op, in.dtype, alu_src_dtype(i));
    const bool whole_shift = in.op == TG_KIR_SHR && tg_dtype_size(alu_src_dtype(i)) >= 4;
    if (in.vcount == 1 || (whole & op_bit(in.op)) || whole_shift) return fill(tmpl, srcs);
    std::vector<std::string> lanes;
    for (uint32_t lane = 0; lane < in.vcount; ++lane) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < in.nsrc; ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], lane));
      lanes.push_back(fill(tmpl, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }

  // Vectors convert whole unless bool or a 16-bit float is involved (lane by lane); 16-bit floats convert through
  // the subclass's calls (exact widening, one rounding from double); to bool is `!= 0`.
  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    const bool special = to == TG_DTYPE_BOOL || from == TG_DTYPE_BOOL || is_small_float(to) || is_small_float(from);
    if (vcount > 1 && !special) return cat("__builtin_convertvector(", x, ", ", type(to, vcount), ")");
    if (vcount > 1) {
      std::vector<std::string> lanes;
      for (uint32_t lane = 0; lane < vcount; ++lane) lanes.push_back(cast(to, 1, from, gep(x, lane)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    const SmallFloatCalls& calls = small_float_calls();
    if (is_small_float(from) || is_small_float(to)) use_helper("half", calls.helpers);
    const std::string wide = from == TG_DTYPE_FLOAT16    ? cat(calls.f16_to_float, "(", x, ")")
                             : from == TG_DTYPE_BFLOAT16 ? cat(calls.bf16_to_float, "(", x, ")")
                                                         : x;
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_FLOAT16) return cat(calls.double_to_f16, "((double)(", wide, "))");
    if (to == TG_DTYPE_BFLOAT16) return cat(calls.double_to_bf16, "((double)(", wide, "))");
    return cat("((", scalar_type(to), ")(", wide, "))");
  }

  std::string inf_literal(uint32_t dtype, bool negative) override {
    const std::string inf =
        cat(negative ? "(-" : "(", dtype == TG_DTYPE_FLOAT32 ? "__builtin_inff()" : "__builtin_inf()", ")");
    return dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64 ? inf : cast(dtype, 1, TG_DTYPE_FLOAT64, inf);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT32) return "__builtin_nanf(\"\")";
    return dtype == TG_DTYPE_FLOAT64 ? "__builtin_nan(\"\")" : cast(dtype, 1, TG_DTYPE_FLOAT64, "__builtin_nan(\"\")");
  }

  bool hoists_invariant_offsets() override { return true; }
  // A vector access into scalar memory goes through the element-aligned `_u` type: any element index is fine.
  std::string lvalue(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    return cat("(*(", type(a.dtype, a.vcount), "_u*)(", a.ptr, "+", a.index, "))");
  }
  std::string packed_load(const Access& a, uint32_t dtype) override {
    packed_types_.insert({dtype, a.vcount});
    return cat("(*(const ", type(dtype, a.vcount), "_p*)(", a.ptr, "+", a.index, "))");
  }

  static bool is_small_float(uint32_t d) { return d == TG_DTYPE_FLOAT16 || d == TG_DTYPE_BFLOAT16; }

 private:
  std::set<std::pair<uint32_t, uint32_t>> vector_types_;  // (dtype, vcount) pairs the body used, sorted
  std::set<std::pair<uint32_t, uint32_t>> packed_types_;  // ... and read by packed loads
  std::vector<std::string> helpers_;                      // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
  bool gidx_loop_open_ = false;
};

}  // namespace tg::sdk
