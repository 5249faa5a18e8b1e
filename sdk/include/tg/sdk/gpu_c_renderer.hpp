// tg::sdk::GpuCRenderer: what every C-family GPU language shares on top of CRenderer -- CUDA for NVRTC, HIP C++ for
// clang's AMDGPU backend, OpenCL C and the Metal Shading Language all derive from it and differ only in spellings.
// The shared meaning: signed add/sub/mul/neg are computed unsigned (KIR wraps, C overflow is undefined), shifts
// take their count modulo the width, integer division by zero is 0 and MIN / -1 wraps, float max propagates NaN,
// float16/bfloat16 that a language keeps as unsigned short bits convert exactly (round to nearest even once),
// constants are folded to bits on the host, and a kernel without a work-item id runs its body once. Vectors go lane
// by lane unless the language has vector arithmetic, where the ops that mean the same whole stay whole (signed ones
// on the unsigned twin). A global id is the language's own, or group id * group size + local id with an early
// return past the extent (launches rounded up to whole groups).
//
// A language supplies its spellings: source_header, kernel_qualifier, helper_qualifier, the work-item ids,
// barrier(), local_decl(), scalar and vector types (CUDA-style tg_vec structs by default), bit casts, and the
// switches below (has_vector_arithmetic, is_bits_storage, has_float64, ...); wmma() when its caps list tensor cores.
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
    begin_kernel(kernel);
    return render(kernel);
  }

  // The nearest float with ebits/mbits to d (ties to even), from double so that it rounds once: the host twin of
  // the kernels' tg_round_small, which folds float16/bfloat16 constants to bits.
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

  // ---- hooks: the language's spellings -----------------------------------------------------------------------
  virtual std::string source_header() = 0;           // the source's first lines: a comment, pragmas, includes
  virtual std::string kernel_qualifier() = 0;        // before `void name(...)`: `extern "C" __global__`
  virtual std::string helper_qualifier() = 0;        // before a helper function: `__device__ static inline`
  virtual std::string group_id(uint32_t dim) = 0;    // an unsigned expression: blockIdx.x
  virtual std::string local_id(uint32_t dim) = 0;    // threadIdx.x
  virtual std::string group_size(uint32_t dim) = 0;  // blockDim.x
  // The language's own global id (get_global_id(0)), whose launches are exact; empty: group * size + local.
  virtual std::string global_id(uint32_t /*dim*/) { return {}; }
  // Parameter p's declaration (default: `const T* name` or `T name`), and the implicit parameters after them.
  virtual std::string param_decl(uint32_t p) {
    const tg_kir_param& param = kernel().params[p];
    if (param.kind == TG_PARAM_IMAGE)
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": parameter ", p, " is an image; the ",
                                          renderer_name(), " renderer reads none"));
    if (param.kind == TG_PARAM_BUFFER)
      return cat(param.writable ? "" : "const ", scalar_type(param.dtype), "* ", param_name(p));
    return cat(scalar_type(param.dtype), " ", param_name(p));
  }
  virtual std::vector<std::string> implicit_params() { return {}; }
  virtual void begin_kernel(const tg_kir_kernel& /*kernel*/) {}  // before a kernel is rendered
  // Bit casts between floats and unsigned integers of their size (default: the language's bitcast()).
  virtual std::string f32_from_bits(const std::string& u32) {
    return bitcast(TG_DTYPE_FLOAT32, 1, TG_DTYPE_UINT32, u32);
  }
  virtual std::string f32_bits(const std::string& f32) { return bitcast(TG_DTYPE_UINT32, 1, TG_DTYPE_FLOAT32, f32); }
  virtual std::string f64_from_bits(const std::string& u64) {
    return bitcast(TG_DTYPE_FLOAT64, 1, TG_DTYPE_UINT64, u64);
  }
  virtual std::string f64_bits(const std::string& f64) { return bitcast(TG_DTYPE_UINT64, 1, TG_DTYPE_FLOAT64, f64); }
  // Correctly rounded float ops where the language has a spelling of its own (nullptr: the base's C expression).
  virtual const char* float_call(uint32_t /*op*/, bool /*f32*/) { return nullptr; }
  // Whether `dtype` (float16, bfloat16) is kept as unsigned short bits, converted by the exact helpers.
  virtual bool is_bits_storage(uint32_t dtype) { return dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16; }
  // Whether `dtype` converts only to and from float32 (MSL's bfloat): other conversions go through float.
  virtual bool converts_through_float(uint32_t /*dtype*/) { return false; }
  virtual bool has_float64() { return true; }             // the bits helpers round from double when there is one
  virtual bool has_vector_arithmetic() { return false; }  // OpenCL and MSL vectors: see whole_vector_op()
  // A whole-vector conversion (convert_float4(x), float4(x)); empty: lane by lane.
  virtual std::string vector_convert(uint32_t /*to*/, uint32_t /*vcount*/, const std::string& /*x*/) { return {}; }
  virtual bool long_is_64_bits() { return false; }  // OpenCL and MSL: 64-bit literals take L, not LL
  // Whether vectorize() casts each lane of a `dtype` vector to the element type. Only lanes narrower than int can
  // be promoted past it (C++'s integer promotion); a backend may leave the wider ones as they are.
  virtual bool casts_lanes(uint32_t /*dtype*/) { return true; }

  uint64_t claimed_ops(uint32_t dtype) override { return standard_ops(dtype); }

  std::string scalar_type(uint32_t dtype) override {
    // clang-format off
    static const char* const names[TG_DTYPE_COUNT] = {
        "bool", "signed char", "short", "int", "long long", "unsigned char", "unsigned short", "unsigned int",
        "unsigned long long", "unsigned short", "unsigned short", "float", "double"};
    // clang-format on
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
  std::string gep(const std::string& x, uint32_t lane) override { return cat(x, ".v[", lane, "]"); }
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    use_helper("bitcast", cat("template <class T, class F> ", helper_qualifier(),
                              " T tg_bitcast(F x) {\n"
                              "  union { F f; T t; } u;\n  u.f = x;\n  return u.t;\n}\n"));
    return cat("tg_bitcast<", type(to, vcount), ", ", type(from, vcount), ">(", x, ")");
  }

  // A vector access is one wide access where its index is a multiple of its lanes, into global memory or into local
  // arrays (declared 16-byte aligned) for vectors of up to 16 bytes; else one per lane. (Register arrays of scalars
  // are not declared aligned; an index_multiple of 0 means nobody worked it out.)
  static bool aligned(const Access& a) {
    if (a.vcount == a.ptr_vcount) return true;
    if (a.ptr_vcount != 1 || a.index_multiple == 0 || a.index_multiple % a.vcount != 0) return false;
    return a.addrspace == TG_ADDR_GLOBAL || (a.addrspace == TG_ADDR_LOCAL && tg_dtype_size(a.dtype) * a.vcount <= 16);
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

  // ---- the kernel frame --------------------------------------------------------------------------------------
  std::string preamble() override {
    std::string out = source_header();
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    std::vector<std::string> params;
    for (uint32_t p = 0; p < kernel().nparams; ++p) params.push_back(param_decl(p));
    for (std::string& implicit : implicit_params()) params.push_back(std::move(implicit));
    std::string out = cat(kernel_qualifier(), " void ", kernel().name, "(");
    for (size_t p = 0; p < params.size(); ++p) out += cat(p ? ", " : "", params[p]);
    return out + ")";
  }

  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items)
      line(cat("if (", group_id(0), " != 0 || ", local_id(0), " != 0) return; /* no work-item id: runs once */"));
  }

  // A global id is the language's own, or group * group size + local id. A one-dim grid the plugin blocks itself
  // (the core asked for local 1) is rounded up to whole groups, so work-items past the extent return at once; the id
  // comes before any loop, so this skips the whole body. A kernel with barriers is launched exactly (the core tiles
  // its loops) and never returns early, which would leave its group waiting at the barrier.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    const std::string t = type_of(i);
    if (kind == TG_SPECIAL_GROUP) return line(cat(t, " ", name(i), " = (", t, ")", group_id(dim), ";"));
    if (kind == TG_SPECIAL_LOCAL) return line(cat(t, " ", name(i), " = (", t, ")", local_id(dim), ";"));
    if (const std::string own = global_id(dim); !own.empty())
      return line(cat(t, " ", name(i), " = (", t, ")", own, ";"));
    line(cat(t, " ", name(i), " = (", t, ")((", scalar_type(TG_DTYPE_UINT64), ")", group_id(dim), " * ",
             group_size(dim), " + ", local_id(dim), ");"));
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

  // C++ keywords, the CUDA built-ins and the math names the templates call (each language adds its own).
  bool is_reserved_name(const std::string& name) override {
    // clang-format off
    static const char* const words[] = {
        "new", "delete", "class", "template", "this", "namespace", "operator", "private", "public", "protected",
        "virtual", "friend", "typename", "using", "try", "catch", "throw", "explicit", "mutable", "export", "asm",
        "and", "or", "not", "xor", "bitand", "bitor", "compl", "nullptr", "constexpr", "decltype", "alignas",
        "alignof", "noexcept", "static_assert", "thread_local", "wchar_t", "char16_t", "char32_t", "and_eq", "or_eq",
        "xor_eq", "not_eq", "concept", "requires", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "max",
        "min", "sqrt", "sqrtf", "trunc", "truncf", "fma", "select", "isnan", "NAN", "INFINITY"};
    // clang-format on
    if (CRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    return false;
  }

  // ---- values ------------------------------------------------------------------------------------------------
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const std::string type = scalar_type(src_dtype), name = dtype_name(src_dtype);
    const bool f32 = src_dtype == TG_DTYPE_FLOAT32;
    if (is_float(src_dtype)) {
      if (const char* call = float_call(op, f32); call != nullptr) return call;
      if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : cat("((", type, ")1/{0})");
      if (op == TG_KIR_MAX) {  // the language's max returns the other operand for a NaN
        use_helper("max_" + name, cat(helper_qualifier(), " ", type, " tg_max_", name, "(", type, " a, ", type,
                                      " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"));
        return cat("tg_max_", name, "({0},{1})");
      }
      return CRenderer::op_template(op, dtype, src_dtype);
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, guarded_division_helpers(type, name, is_signed_int(src_dtype), helper_qualifier(),
                                                         scalar_type(TG_DTYPE_UINT64)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    // Shift counts are taken modulo the promoted width; a left shift goes through unsigned.
    const bool wide = tg_dtype_size(src_dtype) == 8;
    const std::string u = cat("(", scalar_type(wide ? TG_DTYPE_UINT64 : TG_DTYPE_UINT32), ")");
    if (op == TG_KIR_SHL) return cat("((", type, ")(", u, "{0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    if (is_signed_int(src_dtype)) {
      if (op == TG_KIR_NEG) return cat("((", type, ")(0u-", u, "{0}))");
      if (op == TG_KIR_ADD) return cat("((", type, ")(", u, "{0}+", u, "{1}))");
      if (op == TG_KIR_SUB) return cat("((", type, ")(", u, "{0}-", u, "{1}))");
      if (op == TG_KIR_MUL) return cat("((", type, ")(", u, "{0}*", u, "{1}))");
      if (op == TG_KIR_MULACC) return cat("((", type, ")(", u, "{0}*", u, "{1}+", u, "{2}))");
    }
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  // The ops whose vector form means the same as per lane in a language with vector arithmetic (vectors do not
  // promote, so unsigned lanes wrap at their width; signed ones run on the unsigned twin).
  static bool whole_vector_op(uint32_t op, uint32_t dtype) {
    if (op == TG_KIR_AND || op == TG_KIR_OR || op == TG_KIR_XOR) return is_int(dtype);
    const bool arithmetic = op == TG_KIR_NEG || op == TG_KIR_ADD || op == TG_KIR_SUB || op == TG_KIR_MUL;
    if (is_float(dtype))
      return arithmetic || op == TG_KIR_FDIV || op == TG_KIR_MULACC || op == TG_KIR_FMA || op == TG_KIR_TRUNC;
    return arithmetic && is_int(dtype);
  }

  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    const std::string op = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1) return fill(op, srcs);
    if (has_vector_arithmetic() && whole_vector_op(in.op, src_dtype)) {
      const bool wraps = in.op != TG_KIR_AND && in.op != TG_KIR_OR && in.op != TG_KIR_XOR;
      if (!is_signed_int(src_dtype) || !wraps) return fill(op, srcs);
      const uint32_t u = src_dtype + 4;  // INT8..INT64 + 4 = UINT8..UINT64
      const auto as_u = [&](const std::string& x) { return bitcast(u, in.vcount, src_dtype, x); };
      const std::string sym = in.op == TG_KIR_NEG ? "-" : in.op == TG_KIR_ADD ? "+" : in.op == TG_KIR_SUB ? "-" : "*";
      const std::string lhs = in.op == TG_KIR_NEG ? zero(u, in.vcount) : as_u(srcs[0]);
      return bitcast(in.dtype, in.vcount, u, cat(lhs, sym, as_u(srcs.back())));
    }
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
    const auto special = [&](uint32_t d) {
      return d == TG_DTYPE_BOOL || is_bits_storage(d) || converts_through_float(d);
    };
    if (vcount != 1) {
      if (from == to) return x;
      if (!special(to) && !special(from))
        if (std::string whole = vector_convert(to, vcount, x); !whole.empty()) return whole;
      std::vector<std::string> lanes;
      for (uint32_t l = 0; l < vcount; ++l) lanes.push_back(cast(to, 1, from, gep(x, l)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    std::string wide = x;
    if (is_bits_storage(from)) {
      use_small_float_helpers();
      wide = cat(from == TG_DTYPE_FLOAT16 ? "tg_half_to_float(" : "tg_bf16_to_float(", x, ")");
    } else if (converts_through_float(from) && to != TG_DTYPE_FLOAT32) {
      wide = cat("((float)(", x, "))");
    }
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (is_bits_storage(to)) {
      use_small_float_helpers();
      const int ebits = to == TG_DTYPE_FLOAT16 ? 5 : 8, mbits = to == TG_DTYPE_FLOAT16 ? 10 : 7;
      const char* from_wide = has_float64() ? "tg_round_from_double((double)(" : "tg_round_from_float((float)(";
      return cat("((", scalar_type(to), ")", from_wide, wide, "), ", ebits, ", ", mbits, "))");
    }
    if (converts_through_float(to) && from != TG_DTYPE_FLOAT32 && !is_bits_storage(from))
      wide = cat("((float)(", wide, "))");
    return cat("((", scalar_type(to), ")(", wide, "))");
  }

  // Constants: float16/bfloat16 folded to their bits here, inf and NaN as bit patterns (no math.h needed).
  std::string float_literal(uint32_t dtype, double value) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return small_literal(dtype, value);
    return CRenderer::float_literal(dtype, value);
  }
  std::string inf_literal(uint32_t dtype, bool negative) override {
    if (dtype == TG_DTYPE_FLOAT32) return f32_from_bits(negative ? "0xff800000u" : "0x7f800000u");
    if (dtype == TG_DTYPE_FLOAT64)
      return f64_from_bits(long_literal(negative ? "0xfff0000000000000" : "0x7ff0000000000000"));
    return small_literal(dtype, negative ? -INFINITY : INFINITY);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT32) return f32_from_bits("0x7fc00000u");
    if (dtype == TG_DTYPE_FLOAT64) return f64_from_bits(long_literal("0x7ff8000000000000"));
    return small_literal(dtype, NAN);
  }
  std::string int_literal(uint32_t dtype, int64_t value) override {
    if (!long_is_64_bits() || (dtype != TG_DTYPE_INT64 && dtype != TG_DTYPE_UINT64))
      return CRenderer::int_literal(dtype, value);
    if (dtype == TG_DTYPE_UINT64) return long_literal(std::to_string(static_cast<uint64_t>(value)));
    if (value == INT64_MIN) return "(-9223372036854775807L-1)";
    return value < 0 ? cat("(", value, "L)") : cat(value, "L");
  }

  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

 private:
  std::string long_literal(const std::string& digits) { return digits + (long_is_64_bits() ? "UL" : "ULL"); }

  std::string small_literal(uint32_t dtype, double value) {
    const uint32_t bits = dtype == TG_DTYPE_FLOAT16 ? round_small_float(value, 5, 10) : round_small_float(value, 8, 7);
    const std::string stored = cat("((", scalar_type(TG_DTYPE_UINT16), ")", bits, ")");
    return is_bits_storage(dtype) ? stored : bitcast(dtype, 1, TG_DTYPE_UINT16, stored);
  }

  // Exact float16/bfloat16 conversions with integer ops. tg_round_small rounds a float of `smbits` mantissa bits and
  // exponent bias `sbias` (exponent all ones: inf/NaN) to one of ebits/mbits, to nearest even once; NaN stays a
  // quiet NaN. Where the language has double every source rounds from it (int64 included), else from float.
  void use_small_float_helpers() {
    const std::string q = helper_qualifier(), u16 = scalar_type(TG_DTYPE_UINT16), u32 = scalar_type(TG_DTYPE_UINT32),
                      u64 = scalar_type(TG_DTYPE_UINT64);
    const std::string one = cat("((", u64, ")1)");
    use_helper(
        "small",
        cat(q, " ", u32, " tg_round_small(", u32, " neg, int exp, int sexpmax, ", u64, R"( man,
    int smbits, int sbias, int ebits, int mbits) {
  )",
            u32, R"( sign = neg << (ebits + mbits), emax = (1u << ebits) - 1u;
  if (exp == sexpmax) /* inf, or a quiet NaN keeping the top of the payload */
    return sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | ()",
            u32, R"()(man >> (smbits - mbits)) : 0u);
  int e = (exp ? exp : 1) - sbias + (1 << (ebits - 1)) - 1;
  if (e >= (int)emax) return sign | (emax << mbits); /* overflow: inf */
  )",
            u64, " m = exp ? man | (", one, R"( << smbits) : man;
  int shift = smbits - mbits + (e <= 0 ? 1 - e : 0); /* bits to drop; subnormal results drop more */
  if (shift > smbits + 2) return sign; /* below half the smallest subnormal */
  )",
            u32, " q = e <= 0 ? (", u32, ")(m >> shift) : ((", u32, ")e << mbits) | (", u32, ")((m >> shift) & ((", one,
            R"( << mbits) - 1));
  )",
            u64, " rem = m & ((", one, " << shift) - 1), half_ulp = ", one, R"( << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u; /* a carry into the exponent is right */
  return sign | q;
}
)",
            q, " ", u32, " tg_round_from_float(float f, int ebits, int mbits) {\n  ", u32, " b = ", f32_bits("f"), R"(;
  return tg_round_small(b >> 31, (int)((b >> 23) & 0xffu), 0xff, b & 0x7fffffu, 23, 127, ebits, mbits);
}
)",
            q, " float tg_half_to_float(", u16, " h) {\n  ", u32,
            R"( b = h, sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ((float)man * 5.9604644775390625e-08f); /* zero or subnormal */
  return )",
            f32_from_bits("sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13)"), ";\n}\n", q,
            " float tg_bf16_to_float(", u16, " h) { return ", f32_from_bits(cat("(", u32, ")h << 16")), "; }\n"));
    if (!has_float64()) return;
    use_helper("small_from_double", cat(q, " ", u32, " tg_round_from_double(double d, int ebits, int mbits) {\n  ", u64,
                                        " b = ", f64_bits("d"), ";\n  return tg_round_small((", u32,
                                        ")(b >> 63), (int)((b >> 52) & 0x7ff), 0x7ff, b & ((", one,
                                        " << 52) - 1), 52, 1023, ebits, mbits);\n}\n"));
  }

  std::vector<std::string> helpers_;  // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
};

}  // namespace tg::sdk
