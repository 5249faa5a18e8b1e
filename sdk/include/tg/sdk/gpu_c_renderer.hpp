// tg::sdk::GpuCRenderer: the part of a CUDA-style C++ renderer (CUDA for NVRTC, HIP C++ for clang's AMDGPU backend)
// that does not depend on the vendor, on top of CRenderer. It needs no header: vectors are `tg_vec<T,N>` (a plain
// array in a struct aligned to its size), float16 and bfloat16 are `unsigned short` bits with exact conversion
// helpers, signed add/sub/mul/neg are computed unsigned (KIR wraps, C++ overflow is undefined), integer division by
// zero is 0, float max propagates NaN, and vector ALU ops go lane by lane (the point of a vector is the wide memory
// access). A kernel runs global dim 0 (and 1, 2) as group id * group size + local id, returning early past the
// extent when it has no barrier and no tensor-core op.
//
// A backend supplies the spellings (kernel_qualifier, the work-item ids, the bit casts between floats and
// integers, helper_qualifier), barrier(), local_decl(), and wmma() when its caps list tensor cores.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/status.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace tg::sdk {

class GpuCRenderer : public CRenderer {
 public:
  // The capabilities CUDA-style GPUs share: every dtype with the standard op sets, vectors of 2 and 4 lanes up to 16
  // bytes (tg_vec), local memory, three global dims of a 2^31-1 x 65535 x 65535 grid, work-groups of up to 1024
  // work-items, 4 KiB of kernel arguments (512 of 8 bytes). A backend sets its per-dim work-group limits, its local
  // memory size and its tensor cores.
  static tg_renderer_caps preset_caps(const char* language) {
    tg_renderer_caps caps{};
    caps.struct_size = sizeof(caps);
    caps.language = language;  // CUSTOM snippets are pasted into the source as written
    caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
      caps.ops[d] = standard_ops(d);
      const uint32_t size = tg_dtype_size(d);
      caps.vector_widths[d] = (1u << 1) | (d != TG_DTYPE_BOOL && size * 2 <= 16 ? 1u << 2 : 0u) |
                              (d != TG_DTYPE_BOOL && size * 4 <= 16 ? 1u << 4 : 0u);
    }
    caps.has_local = 1;
    caps.has_threads = 0;
    caps.max_global_dims = 3;
    caps.max_global[0] = INT32_MAX;
    caps.max_global[1] = caps.max_global[2] = 65535;
    caps.max_local_threads = 1024;
    caps.max_params = 512;
    return caps;
  }

  std::string render_kernel(const tg_kir_kernel& kernel) {
    helpers_.clear();
    helper_names_.clear();
    return render(kernel);
  }

  // The nearest float with ebits/mbits to d (ties to even), from double so that it rounds once: the host twin of
  // the kernels' tg_round_small.
  static uint32_t round_small_float(double d, int ebits, int mbits) {
    uint64_t b = 0;
    std::memcpy(&b, &d, sizeof b);
    const uint64_t man = b & 0xfffffffffffffULL;
    const uint32_t sign = static_cast<uint32_t>(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
    const int exp = static_cast<int>((b >> 52) & 0x7ff), e = exp - 1023 + (1 << (ebits - 1)) - 1;
    if (exp == 0x7ff)
      return sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | static_cast<uint32_t>(man >> (52 - mbits)) : 0u);
    if (e >= static_cast<int>(emax)) return sign | (emax << mbits);
    const uint64_t m = exp ? man | (1ULL << 52) : man;
    const int shift = 52 - mbits + (e <= 0 ? 1 - e : 0);
    if (shift > 54) return sign;
    uint32_t q = e <= 0
                     ? static_cast<uint32_t>(m >> shift)
                     : (static_cast<uint32_t>(e) << mbits) | static_cast<uint32_t>((m >> shift) & ((1u << mbits) - 1u));
    const uint64_t rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
    if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u;
    return sign | q;
  }

 protected:
  static const char* axis(uint32_t dim) { return dim == 0 ? "x" : dim == 1 ? "y" : "z"; }

  // ---- hooks: the vendor's spellings -------------------------------------------------------------------------
  virtual std::string kernel_qualifier() = 0;        // before `void name(...)`: `extern "C" __global__`
  virtual std::string helper_qualifier() = 0;        // before a helper function: `__device__ static inline`
  virtual std::string group_id(uint32_t dim) = 0;    // an unsigned expression: blockIdx.x
  virtual std::string local_id(uint32_t dim) = 0;    // threadIdx.x
  virtual std::string group_size(uint32_t dim) = 0;  // blockDim.x
  // Bit casts used by the helpers and literals: float <-> unsigned int, double <-> unsigned long long.
  virtual std::string f32_from_bits(const std::string& u32) = 0;
  virtual std::string f64_from_bits(const std::string& u64) = 0;
  virtual std::string f64_bits(const std::string& f64) = 0;
  // Correctly rounded float ops where the vendor has a spelling of its own (nullptr: the base's C expression).
  virtual const char* float_call(uint32_t op, bool f32) = 0;
  virtual std::string vendor_comment() = 0;  // the first line of the source
  // How messages name this renderer: "kernel k: <label> has no MAX on bool (inst 3)".
  virtual std::string renderer_label() { return "this renderer"; }

  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool",
                                                      "signed char",
                                                      "short",
                                                      "int",
                                                      "long long",
                                                      "unsigned char",
                                                      "unsigned short",
                                                      "unsigned int",
                                                      "unsigned long long",
                                                      "unsigned short",
                                                      "unsigned short",
                                                      "float",
                                                      "double"};
    return names[dtype];
  }

  // Vectors (and tensor-core fragments): a plain array in a struct aligned to its size (no header needed).
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    use_helper("vec", "template <class T, int N> struct alignas(sizeof(T) * N) tg_vec { T v[N]; };\n");
    return cat("tg_vec<", scalar_type(dtype), ",", vcount, ">");
  }
  std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) override {
    // each lane cast to the element type: C++ list-initialization refuses the narrowing of an int-promoted
    // uint8/int16 result back to its type
    const std::string t = scalar_type(dtype);
    const bool cast = casts_lanes(dtype);
    std::string out = cat(vector_type(dtype, vcount), "{{");
    for (size_t l = 0; l < lanes.size(); ++l)
      out += cast ? cat(l ? "," : "", "(", t, ")(", lanes[l], ")") : cat(l ? "," : "", lanes[l]);
    return out + "}}";
  }
  // Whether vectorize() casts each lane of a `dtype` vector to the element type. Only lanes narrower than int can
  // be promoted past it (C++'s integer promotion); a backend may leave the wider ones as they are.
  virtual bool casts_lanes(uint32_t /*dtype*/) { return true; }
  std::string gep(const std::string& x, uint32_t lane) override { return cat(x, ".v[", lane, "]"); }

  // A vector access is one wide load or store where its index is a multiple of its lanes, else one per lane.
  // (register arrays of scalars are not declared aligned; an index_multiple of 0 means nobody worked it out)
  static bool aligned(const Access& a) {
    return a.vcount == a.ptr_vcount ||
           (a.addrspace != TG_ADDR_REG && a.index_multiple != 0 && a.index_multiple % a.vcount == 0);
  }
  std::string load_expr(const Access& a) override {
    if (aligned(a)) return CRenderer::load_expr(a);
    std::vector<std::string> lanes;
    for (uint32_t l = 0; l < a.vcount; ++l) lanes.push_back(cat(a.ptr, "[(", a.index, ")+", l, "]"));
    return vectorize(a.dtype, a.vcount, lanes);
  }
  std::string store_statement(const Access& a, const std::string& value) override {
    if (aligned(a)) return CRenderer::store_statement(a, value);
    std::string out = "{";
    for (uint32_t l = 0; l < a.vcount; ++l) out += cat(" ", a.ptr, "[(", a.index, ")+", l, "] = ", gep(value, l), ";");
    return out + " }";
  }

  std::string preamble() override {
    std::string out = vendor_comment();
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    const tg_kir_kernel& k = kernel();
    std::string out = cat(kernel_qualifier(), " void ", k.name, "(");
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      out += p ? ", " : "";
      if (param.kind == TG_PARAM_BUFFER)
        out += cat(param.writable ? "" : "const ", scalar_type(param.dtype), "* ", param_name(p));
      else
        out += cat(scalar_type(param.dtype), " ", param_name(p));
    }
    return out + ")";
  }

  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items)
      line(cat("if (", group_id(0), " != 0 || ", local_id(0), " != 0) return; /* no work-item id: runs once */"));
  }

  // A global id is group * group size + local id. A one-dim grid the plugin blocks itself (the core asked for local
  // 1) is rounded up to whole groups, so work-items past the extent return at once; the id comes before any loop, so
  // this skips the whole body. A kernel with barriers is launched exactly (the core tiles its loops) and never
  // returns early, which would leave its group waiting at the barrier.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    const std::string t = type_of(i);
    if (kind == TG_SPECIAL_GROUP) return line(cat(t, " ", name(i), " = (", t, ")", group_id(dim), ";"));
    if (kind == TG_SPECIAL_LOCAL) return line(cat(t, " ", name(i), " = (", t, ")", local_id(dim), ";"));
    line(cat(t, " ", name(i), " = (", t, ")((unsigned long long)", group_id(dim), " * ", group_size(dim), " + ",
             local_id(dim), ");"));
    if (inst(i).nsrc == 1 && !has_barrier()) {
      if (open_blocks() != 0)
        throw Error(TG_ERR_UNSUPPORTED,
                    cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
      line(cat("if (", name(i), " >= ", name(src(i, 0)), ") return;"));
    }
  }
  // A barrier or a tensor-core op needs every work-item of its group (wave): none may return early.
  bool has_barrier() const {
    const tg_kir_kernel& k = kernel();
    return std::any_of(k.insts, k.insts + k.ninsts,
                       [](const tg_kir_inst& in) { return in.op == TG_KIR_BARRIER || in.op == TG_KIR_WMMA; });
  }

  bool is_reserved_name(const std::string& name) override {
    static const char* const words[] = {
        "new",      "delete",    "class",         "template",     "this",     "namespace", "operator", "private",
        "public",   "protected", "virtual",       "friend",       "typename", "using",     "try",      "catch",
        "throw",    "explicit",  "mutable",       "export",       "asm",      "and",       "or",       "not",
        "xor",      "bitand",    "bitor",         "compl",        "nullptr",  "constexpr", "decltype", "alignas",
        "alignof",  "noexcept",  "static_assert", "thread_local", "wchar_t",  "char16_t",  "char32_t", "threadIdx",
        "blockIdx", "blockDim",  "gridDim",       "warpSize",     "max",      "min",       "sqrt",     "sqrtf",
        "trunc",    "truncf",    "and_eq",        "or_eq",        "xor_eq",   "not_eq",    "concept",  "requires"};
    if (CRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    return false;
  }

  // The ops a kernel may use per dtype (the caps' ops): standard_ops unless a backend says otherwise.
  virtual uint64_t ops_of(uint32_t dtype) { return standard_ops(dtype); }

  // Signed add/sub/mul/neg wrap in KIR but overflow is undefined in C++: compute them unsigned.
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const std::string type = scalar_type(src_dtype), name = dtype_name(src_dtype);
    const bool f32 = src_dtype == TG_DTYPE_FLOAT32;
    if (is_float(src_dtype)) {
      if (const char* call = float_call(op, f32); call != nullptr) return call;
      if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : "(1.0/{0})";
      if (op == TG_KIR_MAX) {
        use_helper("max_" + name, cat(helper_qualifier(), " ", type, " tg_max_", name, "(", type, " a, ", type,
                                      " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"));
        return cat("tg_max_", name, "({0},{1})");
      }
      return CRenderer::op_template(op, dtype, src_dtype);
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, division_helpers(type, name, is_signed_int(src_dtype)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    const bool wide = tg_dtype_size(src_dtype) == 8;
    const std::string uw = wide ? "unsigned long long" : "unsigned int";
    if (op == TG_KIR_SHL) return cat("((", type, ")((", uw, "){0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    if (is_signed_int(src_dtype)) {
      const std::string u = cat("(", uw, ")");
      if (op == TG_KIR_NEG) return cat("((", type, ")(0u-", u, "{0}))");
      if (op == TG_KIR_ADD) return cat("((", type, ")(", u, "{0}+", u, "{1}))");
      if (op == TG_KIR_SUB) return cat("((", type, ")(", u, "{0}-", u, "{1}))");
      if (op == TG_KIR_MUL) return cat("((", type, ")(", u, "{0}*", u, "{1}))");
      if (op == TG_KIR_MULACC) return cat("((", type, ")(", u, "{0}*", u, "{1}+", u, "{2}))");
    }
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    if (!(ops_of(src_dtype) & op_bit(in.op)))
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": ", renderer_label(), " has no ", op_name(in.op),
                                          " on ", dtype_name(src_dtype), " (inst ", i, ")"));
    const std::string op = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1) return fill(op, srcs);
    std::vector<std::string> lanes;  // lane by lane; a scalar operand (WHERE's condition) is shared
    for (uint32_t l = 0; l < in.vcount; ++l) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < srcs.size(); ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], l));
      lanes.push_back(fill(op, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }

  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    if (vcount != 1) {
      std::vector<std::string> lanes;
      for (uint32_t l = 0; l < vcount; ++l) lanes.push_back(cast(to, 1, from, gep(x, l)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    const auto is_small = [](uint32_t d) { return d == TG_DTYPE_FLOAT16 || d == TG_DTYPE_BFLOAT16; };
    std::string wide = x;
    if (is_small(from) || is_small(to)) use_helper("small", small_float_helpers());
    if (is_small(from)) wide = cat(from == TG_DTYPE_FLOAT16 ? "tg_half_to_float(" : "tg_bf16_to_float(", x, ")");
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_FLOAT16) return cat("((unsigned short)tg_round_small((double)(", wide, "), 5, 10))");
    if (to == TG_DTYPE_BFLOAT16) return cat("((unsigned short)tg_round_small((double)(", wide, "), 8, 7))");
    return cat("((", scalar_type(to), ")(", wide, "))");
  }
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    use_helper("bitcast", cat("template <class T, class F> ", helper_qualifier(),
                              " T tg_bitcast(F x) {\n"
                              "  union { F f; T t; } u;\n  u.f = x;\n  return u.t;\n}\n"));
    return cat("tg_bitcast<", type(to, vcount), ", ", type(from, vcount), ">(", x, ")");
  }

  // Constants: float16/bfloat16 as their bits (folded here), inf and NaN as bit patterns (no math.h).
  std::string float_literal(uint32_t dtype, double value) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return small_literal(dtype, value);
    return CRenderer::float_literal(dtype, value);
  }
  std::string inf_literal(uint32_t dtype, bool negative) override {
    if (dtype == TG_DTYPE_FLOAT32) return f32_from_bits(negative ? "0xff800000u" : "0x7f800000u");
    if (dtype == TG_DTYPE_FLOAT64) return f64_from_bits(negative ? "0xfff0000000000000ULL" : "0x7ff0000000000000ULL");
    return small_literal(dtype, negative ? -INFINITY : INFINITY);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT32) return f32_from_bits("0x7fc00000u");
    if (dtype == TG_DTYPE_FLOAT64) return f64_from_bits("0x7ff8000000000000ULL");
    return small_literal(dtype, NAN);
  }

  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

 private:
  std::string small_literal(uint32_t dtype, double value) {
    const uint32_t bits = dtype == TG_DTYPE_FLOAT16 ? round_small_float(value, 5, 10) : round_small_float(value, 8, 7);
    return cat("((unsigned short)", bits, ")");
  }

  // Exact float16/bfloat16 conversions with integer ops (round to nearest even once; NaN stays a quiet NaN).
  std::string small_float_helpers() {
    const std::string q = helper_qualifier();
    return cat(q, R"( unsigned int tg_round_small(double d, int ebits, int mbits) {
  unsigned long long b = (unsigned long long))",
               f64_bits("d"), R"(, man = b & 0xfffffffffffffULL;
  unsigned int sign = (unsigned int)(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
  int exp = (int)((b >> 52) & 0x7ff), e = exp - 1023 + (1 << (ebits - 1)) - 1;
  if (exp == 0x7ff)
    return sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | (unsigned int)(man >> (52 - mbits)) : 0u);
  if (e >= (int)emax) return sign | (emax << mbits);
  unsigned long long m = exp ? man | (1ULL << 52) : man;
  int shift = 52 - mbits + (e <= 0 ? 1 - e : 0);
  if (shift > 54) return sign;
  unsigned int q = e <= 0 ? (unsigned int)(m >> shift)
                          : ((unsigned int)e << mbits) | (unsigned int)((m >> shift) & ((1u << mbits) - 1u));
  unsigned long long rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u;
  return sign | q;
}
)",
               q, R"( float tg_half_to_float(unsigned short h) {
  unsigned int b = h, sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ((float)man * 5.9604644775390625e-08f);
  return )",
               f32_from_bits("sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13)"), R"(;
}
)",
               q, " float tg_bf16_to_float(unsigned short h) { return ", f32_from_bits("(unsigned int)h << 16"),
               "; }\n");
  }

  std::string division_helpers(const std::string& t, const std::string& name, bool is_signed) {
    const std::string q = helper_qualifier();
    if (!is_signed)
      return cat(q, " ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a / b; }\n", q, " ", t,
                 " tg_mod_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a % b; }\n");
    return cat(q, " ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : b == -1 ? (", t,
               ")(0ULL - (unsigned long long)a) : a / b; }\n", q, " ", t, " tg_mod_", name, "(", t, " a, ", t,
               " b) { return b == 0 || b == -1 ? 0 : a % b; }\n");
  }

  std::vector<std::string> helpers_;
  std::set<std::string> helper_names_;
};

}  // namespace tg::sdk
