// The METAL plugin's Renderer: KIR -> Metal Shading Language 3.1, one `kernel void` per KIR kernel with buffers
// and variables in [[buffer(n)]] slots, work-item ids from [[thread_position_in_grid]] and its kin, threadgroup
// memory, threadgroup_barrier, float4-style vectors and simdgroup_multiply_accumulate as tensor cores; and the
// capabilities. Neither needs a device. Metal has no double, so float64 is not claimed; bfloat16 is MSL 3.1's
// bfloat, as storage (the core computes on it in float32), and is converted through float.
#include "metal_plugin.hpp"

#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/tensor_cores.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace tg::metal {

namespace {

using sdk::cat;
using sdk::Error;
using sdk::op_bit;

tg_tensor_core simdgroup_unit(uint32_t dtype_in) {
  tg_tensor_core tc{sizeof(tg_tensor_core), 8, 8, 8, dtype_in, TG_DTYPE_FLOAT32, 32, {}, {}, {}};
  for (int i = 0; i < 16; ++i) tc.a_map[i] = tc.b_map[i] = tc.c_map[i] = kSimdgroupMap[i];
  return tc;
}

// 16-bit inputs first: the core takes the first unit whose input dtype fits, and a float16 product is also a
// float32 product of widened factors.
const tg_tensor_core kTensorCores[] = {simdgroup_unit(TG_DTYPE_FLOAT16), simdgroup_unit(TG_DTYPE_BFLOAT16),
                                       simdgroup_unit(TG_DTYPE_FLOAT32)};

// Integers and float32 as the SDK's standard sets. MULACC is left to the core (a MUL and an ADD, two statements)
// for floats: within one expression the Metal compiler may contract a*b+c into an fma. Float16 computes natively
// where one rounding in half is what the op means; division and sqrt go through float32 (exact after rounding).
uint64_t ops_of(uint32_t dtype) {
  const uint64_t no_mulacc = ~op_bit(TG_KIR_MULACC);
  if (dtype == TG_DTYPE_FLOAT32) return sdk::kFloatOps & no_mulacc;
  if (dtype == TG_DTYPE_FLOAT16)
    return sdk::kFloatOps & no_mulacc & ~op_bit(TG_KIR_FDIV) & ~op_bit(TG_KIR_RECIP) & ~op_bit(TG_KIR_SQRT);
  if (dtype == TG_DTYPE_FLOAT64) return 0;
  return sdk::standard_ops(dtype);
}

// Apple GPUs: 1024 threads and 32 KiB of threadgroup memory per threadgroup, 31 buffer slots per kernel.
tg_renderer_caps metal_caps() {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.language = "metal";  // CUSTOM snippets are pasted into the source as written
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    if (d == TG_DTYPE_FLOAT64) continue;
    caps.dtypes |= 1u << d;
    caps.ops[d] = ops_of(d);
    // MSL vectors have 2, 3 or 4 lanes; no bool vectors (comparisons and WHERE run lane by lane here anyway)
    caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | (1u << 2) | (1u << 4);
  }
  caps.has_local = 1;
  caps.has_threads = 0;
  caps.max_global_dims = 3;
  caps.max_global[0] = caps.max_global[1] = caps.max_global[2] = INT32_MAX;
  caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1024;
  caps.max_local_threads = 1024;
  caps.local_mem_bytes = 32 * 1024;
  caps.max_params = 31;
  caps.tensor_cores = kTensorCores;
  caps.ntensor_cores = sizeof kTensorCores / sizeof kTensorCores[0];
  return caps;
}

// The float16 (mbits 10, min exponent -14, max 65504) or bfloat16 (7, -126, ~3.39e38) value nearest to v, ties to
// even, as a double (every such value is a float too): constants are rounded here, once.
double round_small_float(double v, uint32_t dtype) {
  const bool is_half = dtype == TG_DTYPE_FLOAT16;
  const int mbits = is_half ? 10 : 7, emin = is_half ? -14 : -126;
  const double max = is_half ? 65504.0 : std::ldexp(255.0, 120);
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| = m * 2^e with m in [0.5, 1)
  const int quantum = std::max(e - 1, emin) - mbits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
  return std::fabs(r) > max ? std::copysign(INFINITY, v) : r;
}

class MslRenderer final : public sdk::CRenderer {
 public:
  std::string render_kernel(const tg_kir_kernel& kernel) {
    helpers_.clear();
    helper_names_.clear();
    hoisted_.clear();
    reject_float64(kernel);
    return render(kernel);
  }

 protected:
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "METAL"; }

  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool", "char",  "short", "int",    "long",  "uchar", "ushort",
                                                      "uint", "ulong", "half",  "bfloat", "float", "double"};
    return names[dtype];
  }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    if (vcount > 4)
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": MSL has no vector of ", vcount, " lanes"));
    return cat(scalar_type(dtype), vcount);
  }
  std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) override {
    std::string out = cat(vector_type(dtype, vcount), "(");
    for (size_t l = 0; l < lanes.size(); ++l) out += (l ? "," : "") + lanes[l];
    return out + ")";
  }
  std::string gep(const std::string& x, uint32_t lane) override { return cat(x, "[", lane, "]"); }

  std::string preamble() override {
    std::string out = cat("// tg METAL kernel ", kernel().name, ": Metal Shading Language 3.1\n",
                          "#include <metal_stdlib>\nusing namespace metal;\n");
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  // Buffers and variables take [[buffer(n)]] slots in signature order (variables as `constant T&`, which the host
  // sets with setBytes); the work-item ids are Metal's attributes, named so no parameter can take their names.
  std::string signature() override {
    const tg_kir_kernel& k = kernel();
    std::string out = cat("kernel void ", k.name, "(");
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      if (param.kind == TG_PARAM_BUFFER)
        out += cat("device ", param.writable ? "" : "const ", scalar_type(param.dtype), "* ", param_name(p));
      else if (param.kind == TG_PARAM_VAR)
        out += cat("constant ", scalar_type(param.dtype), "& ", param_name(p));
      else
        throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", k.name, ": parameter ", p, " is an image; METAL reads none"));
      out += cat(" [[buffer(", p, ")]], ");
    }
    out += "uint3 gid [[threadgroup_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]]";
    if (uses_special(TG_SPECIAL_GLOBAL)) out += ", uint3 tid [[thread_position_in_grid]]";
    return out + ")";
  }

  // A kernel without a work-item id runs its body once, however wide the launch. Threadgroup arrays are declared
  // first: Metal allocates them per threadgroup for the whole kernel, so they belong at its outermost scope.
  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    if (!std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; }))
      line("if ((gid.x | gid.y | gid.z | lid.x | lid.y | lid.z) != 0) return; // no work-item id: the body runs once");
    for (uint32_t i = 0; i < k.ninsts; ++i) {
      const tg_kir_inst& in = k.insts[i];
      if (in.op != TG_KIR_DEFINE_LOCAL || in.dtype >= TG_DTYPE_COUNT || in.vcount == 0 || in.arg.i <= 0)
        continue;  // (malformed ones are reported where CRenderer reaches them)
      const std::string name = cat(value_prefix(in.op), i);
      hoisted_.insert(name);
      line(threadgroup_decl(type(in.dtype, in.vcount), name, in.arg.i));
    }
  }
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return hoisted_.count(name) ? cat("// ", name, ": declared at the top") : threadgroup_decl(type, name, count);
  }
  static std::string threadgroup_decl(const std::string& type, const std::string& name, int64_t count) {
    return cat("threadgroup __attribute__((aligned(16))) ", type, " ", name, "[", count, "];");
  }

  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    static const char* const vars[3] = {"tid", "gid", "lid"};  // TG_SPECIAL_GLOBAL, _GROUP, _LOCAL
    static const char* const axis[3] = {"x", "y", "z"};
    line(cat(type_of(i), " ", name(i), " = ", type_of(i), "(", vars[kind], ".", axis[dim], ");"));
  }
  std::string barrier() override { return "threadgroup_barrier(mem_flags::mem_threadgroup);"; }

  // Vector accesses: one wide access where the index is a multiple of the lanes, to device memory (buffers are
  // aligned to pages, and an MSL vector to its size) and to threadgroup arrays (aligned to 16 bytes) for vectors of
  // up to 16 bytes; lane by lane otherwise, and in thread memory, whose arrays are only element-aligned.
  std::string load_expr(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    if (is_wide(a)) return cat("*((", space(a), " const ", type(a.dtype, a.vcount), "*)(", a.ptr, "+", a.index, "))");
    std::vector<std::string> lanes;
    for (uint32_t l = 0; l < a.vcount; ++l) lanes.push_back(cat(a.ptr, "[(", a.index, ")+", l, "]"));
    return vectorize(a.dtype, a.vcount, lanes);
  }
  std::string store_statement(const Access& a, const std::string& value) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::store_statement(a, value);
    if (is_wide(a))
      return cat("*((", space(a), " ", type(a.dtype, a.vcount), "*)(", a.ptr, "+", a.index, ")) = ", value, ";");
    std::string out = "{";
    for (uint32_t l = 0; l < a.vcount; ++l) out += cat(" ", a.ptr, "[(", a.index, ")+", l, "] = ", gep(value, l), ";");
    return out + " }";
  }
  static bool is_wide(const Access& a) {
    if (a.ptr_vcount != 1 || a.index_multiple == 0 || a.index_multiple % a.vcount != 0) return false;
    return a.addrspace == TG_ADDR_GLOBAL || (a.addrspace == TG_ADDR_LOCAL && tg_dtype_size(a.dtype) * a.vcount <= 16);
  }
  static const char* space(const Access& a) { return a.addrspace == TG_ADDR_LOCAL ? "threadgroup" : "device"; }

  // D = A * B + C on simdgroup matrices: each thread's two elements go in and come out through thread_elements().
  std::string wmma(uint32_t i, const std::vector<std::string>& abc) override {
    const tg_tensor_core& tc = wmma_unit(i, kTensorCores, sizeof kTensorCores / sizeof kTensorCores[0], "");
    check_wmma_fragments(i, tc, 2, 2, 2, "WMMA 8x8x8");
    const std::string t = scalar_type(tc.dtype_in), fn = cat("tg_wmma_", t);
    std::string body = cat("static inline float2 ", fn, "(", t, "2 a, ", t, "2 b, float2 c) {\n  simdgroup_", t,
                           "8x8 mat_a, mat_b;\n  simdgroup_float8x8 mat_c;\n");
    for (const char* m : {"a", "b", "c"})
      body +=
          cat("  mat_", m, ".thread_elements()[0] = ", m, "[0];\n  mat_", m, ".thread_elements()[1] = ", m, "[1];\n");
    body +=
        "  simdgroup_multiply_accumulate(mat_c, mat_a, mat_b, mat_c);\n"
        "  return float2(mat_c.thread_elements()[0], mat_c.thread_elements()[1]);\n}\n";
    use_helper(fn, body);
    return cat(fn, "(", abc[0], ",", abc[1], ",", abc[2], ")");
  }

  bool is_reserved_name(const std::string& name) override {
    static const char* const words[] = {"kernel",       "vertex",
                                        "fragment",     "device",
                                        "constant",     "threadgroup",
                                        "thread",       "threadgroup_imageblock",
                                        "ray_data",     "object_data",
                                        "metal",        "precise",
                                        "fast",         "gid",
                                        "lid",          "tid",
                                        "new",          "delete",
                                        "class",        "template",
                                        "this",         "namespace",
                                        "operator",     "private",
                                        "public",       "protected",
                                        "virtual",      "friend",
                                        "typename",     "using",
                                        "try",          "catch",
                                        "throw",        "explicit",
                                        "mutable",      "asm",
                                        "and",          "or",
                                        "not",          "xor",
                                        "bitand",       "bitor",
                                        "compl",        "nullptr",
                                        "constexpr",    "decltype",
                                        "alignas",      "alignof",
                                        "noexcept",     "static_assert",
                                        "thread_local", "and_eq",
                                        "or_eq",        "xor_eq",
                                        "not_eq",       "uchar",
                                        "ushort",       "uint",
                                        "ulong",        "bfloat",
                                        "max",          "min",
                                        "trunc",        "sqrt",
                                        "fma",          "as_type",
                                        "select",       "isnan",
                                        "INFINITY",     "NAN",
                                        "mem_flags"};
    if (CRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    static const char* const prefixes[] = {"simdgroup", "threadgroup_", "char",  "short", "int",    "long",  "uchar",
                                           "ushort",    "uint",         "ulong", "half",  "bfloat", "float", "bool"};
    for (const char* prefix : prefixes)
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  }

  // Integer add/sub/mul/neg/shl wrap in KIR; in MSL (C++) signed overflow is undefined and 16-bit operands
  // promote to int, so they are computed in the 32- or 64-bit unsigned type and converted back.
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const std::string t = scalar_type(src_dtype), name = sdk::dtype_name(src_dtype);
    if (sdk::is_float(src_dtype)) {
      if (op == TG_KIR_MAX) return cat(use_max_helper(src_dtype), "({0},{1})");
      if (op == TG_KIR_SQRT) return "precise::sqrt({0})";
      if (op == TG_KIR_RECIP) return "(1.0f/{0})";
      return CRenderer::op_template(op, dtype, src_dtype);
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_division_helpers(src_dtype);
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    if (!sdk::is_int(src_dtype)) return CRenderer::op_template(op, dtype, src_dtype);  // bool
    const bool wide = tg_dtype_size(src_dtype) == 8;
    const std::string u = wide ? "ulong" : "uint", mask = wide ? "63" : "31";
    const bool plain = src_dtype == TG_DTYPE_UINT32 || src_dtype == TG_DTYPE_UINT64;  // already wraps
    if (op == TG_KIR_SHL) return plain ? cat("({0}<<({1}&", mask, "))") : cat(t, "(", u, "({0})<<({1}&", mask, "))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", mask, "))");  // arithmetic for signed operands
    if (plain) return CRenderer::op_template(op, dtype, src_dtype);
    if (op == TG_KIR_NEG) return cat(t, "(", u, "(0)-", u, "({0}))");
    if (op == TG_KIR_ADD) return cat(t, "(", u, "({0})+", u, "({1}))");
    if (op == TG_KIR_SUB) return cat(t, "(", u, "({0})-", u, "({1}))");
    if (op == TG_KIR_MUL) return cat(t, "(", u, "({0})*", u, "({1}))");
    if (op == TG_KIR_MULACC) return cat(t, "(", u, "({0})*", u, "({1})+", u, "({2}))");
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  // Vectors: float and unsigned arithmetic (and bitwise ops on any integer) mean the same whole as per lane in
  // MSL, signed arithmetic does on the unsigned twin; everything else goes lane by lane through the scalar templates.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    if (in.vcount > 1 && sdk::is_signed_int(src_dtype) &&
        (in.op == TG_KIR_NEG || in.op == TG_KIR_ADD || in.op == TG_KIR_SUB || in.op == TG_KIR_MUL)) {
      // wrapping vector arithmetic: the same lanes as unsigned (vectors do not promote), then back
      const std::string t = type_of(i), u = vector_type(src_dtype + 4, in.vcount);  // INT8..INT64 + 4 = UINT8..
      const auto as_u = [&](const std::string& x) { return cat("as_type<", u, ">(", x, ")"); };
      if (in.op == TG_KIR_NEG) return cat("as_type<", t, ">(", u, "(0)-", as_u(srcs[0]), ")");
      const char* sym = in.op == TG_KIR_ADD ? "+" : in.op == TG_KIR_SUB ? "-" : "*";
      return cat("as_type<", t, ">(", as_u(srcs[0]), sym, as_u(srcs[1]), ")");
    }
    const std::string tmpl = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1 || is_whole_vector_op(in.op, src_dtype)) return sdk::fill(tmpl, srcs);
    std::vector<std::string> lanes;
    for (uint32_t l = 0; l < in.vcount; ++l) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < srcs.size(); ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], l));
      lanes.push_back(sdk::fill(tmpl, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }
  static bool is_whole_vector_op(uint32_t op, uint32_t dtype) {
    if (op == TG_KIR_AND || op == TG_KIR_OR || op == TG_KIR_XOR) return sdk::is_int(dtype);
    if (sdk::is_float(dtype))
      return op == TG_KIR_NEG || op == TG_KIR_ADD || op == TG_KIR_SUB || op == TG_KIR_MUL || op == TG_KIR_FDIV ||
             op == TG_KIR_FMA || op == TG_KIR_TRUNC;
    return sdk::is_unsigned_int(dtype) && (op == TG_KIR_ADD || op == TG_KIR_SUB || op == TG_KIR_MUL);
  }

  // Conversions are MSL's constructors (float4(int4) converts each lane); bool and bfloat go lane by lane, bfloat
  // through float (MSL 3.1 converts bfloat to and from float).
  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    const auto is_special = [](uint32_t d) { return d == TG_DTYPE_BOOL || d == TG_DTYPE_BFLOAT16; };
    if (vcount > 1 && (is_special(to) || is_special(from))) {
      std::vector<std::string> lanes;
      for (uint32_t l = 0; l < vcount; ++l) lanes.push_back(cast(to, 1, from, gep(x, l)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    if (vcount > 1) return cat(vector_type(to, vcount), "(", x, ")");
    const std::string wide = from == TG_DTYPE_BFLOAT16 ? cat("float(", x, ")") : x;
    if (from == TG_DTYPE_BFLOAT16 && to == TG_DTYPE_FLOAT32) return wide;
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_BFLOAT16 && from != TG_DTYPE_FLOAT32) return cat("bfloat(float(", wide, "))");
    return cat(scalar_type(to), "(", wide, ")");
  }
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t /*from*/, const std::string& x) override {
    return cat("as_type<", type(to, vcount), ">(", x, ")");
  }

  // Constants: 16-bit floats rounded here and written as the float they equal; 64-bit integers with L/UL (MSL's
  // long is 64 bits and it has no long long).
  std::string float_literal(uint32_t dtype, double value) override {
    if (dtype != TG_DTYPE_FLOAT16 && dtype != TG_DTYPE_BFLOAT16) return CRenderer::float_literal(dtype, value);
    const double rounded = round_small_float(value, dtype);
    if (std::isinf(rounded)) return inf_literal(dtype, rounded < 0);
    return cat(scalar_type(dtype), "(", CRenderer::float_literal(TG_DTYPE_FLOAT32, rounded), ")");
  }
  std::string inf_literal(uint32_t dtype, bool negative) override {
    const std::string inf = negative ? "(-INFINITY)" : "INFINITY";
    return dtype == TG_DTYPE_FLOAT32 ? inf : cat(scalar_type(dtype), "(", inf, ")");
  }
  std::string nan_literal(uint32_t dtype) override {
    return dtype == TG_DTYPE_FLOAT32 ? "NAN" : cat(scalar_type(dtype), "(NAN)");
  }
  std::string int_literal(uint32_t dtype, int64_t value) override {
    if (dtype == TG_DTYPE_BOOL) return value != 0 ? "true" : "false";
    if (dtype == TG_DTYPE_UINT64) return cat(static_cast<uint64_t>(value), "UL");
    if (dtype != TG_DTYPE_INT64) return CRenderer::int_literal(dtype, value);
    if (value == INT64_MIN) return "(-9223372036854775807L-1)";
    return value < 0 ? cat("(", value, "L)") : cat(value, "L");
  }

 private:
  // Metal has no double: a kernel that uses one is refused whole rather than rendered into invalid MSL.
  static void reject_float64(const tg_kir_kernel& k) {
    for (uint32_t p = 0; p < k.nparams && k.params; ++p)
      if (k.params[p].dtype == TG_DTYPE_FLOAT64)
        throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", k.name ? k.name : "(unnamed)", ": parameter ", p,
                                            " is float64; Metal has no double"));
    for (uint32_t i = 0; i < k.ninsts && k.insts; ++i)
      if (k.insts[i].dtype == TG_DTYPE_FLOAT64)
        throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", k.name ? k.name : "(unnamed)", ": inst ", i, " (",
                                            sdk::op_name(k.insts[i].op), ") is float64; Metal has no double"));
  }
  bool uses_special(uint32_t kind) const {
    const tg_kir_kernel& k = kernel();
    return std::any_of(k.insts, k.insts + k.ninsts, [&](const tg_kir_inst& in) {
      return in.op == TG_KIR_SPECIAL && in.arg.i >= 0 && static_cast<uint64_t>(in.arg.i) / 4 == kind;
    });
  }

  // KIR's MAX is NaN if either operand is; MSL's max returns the other operand. The NaN test reads the bits, so
  // it holds even where a compiler assumes no NaNs.
  std::string use_max_helper(uint32_t dtype) {
    const std::string t = scalar_type(dtype), fn = cat("tg_max_", t);
    const bool is_half = dtype == TG_DTYPE_FLOAT16;
    const std::string bits = is_half ? "ushort" : "uint", abs_mask = is_half ? "0x7fff" : "0x7fffffffu",
                      inf = is_half ? "0x7c00" : "0x7f800000u";
    use_helper(fn, cat("static inline bool tg_isnan_", t, "(", t, " x) { return (as_type<", bits, ">(x) & ", abs_mask,
                       ") > ", inf, "; }\n", "static inline ", t, " ", fn, "(", t, " a, ", t, " b) { return tg_isnan_",
                       t, "(a) ? a : tg_isnan_", t, "(b) ? b : (a > b ? a : b); }\n"));
    return fn;
  }

  // IDIV truncates and MOD takes the dividend's sign (C's / and %); the core guards division by zero, and these
  // also give 0 there and wrap MIN / -1 instead of leaving them undefined.
  void use_division_helpers(uint32_t dtype) {
    const std::string t = scalar_type(dtype), name = sdk::dtype_name(dtype);
    if (sdk::is_unsigned_int(dtype)) {
      use_helper("div_" + name, cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? ",
                                    t, "(0) : ", t, "(a / b); }\n", "static inline ", t, " tg_mod_", name, "(", t,
                                    " a, ", t, " b) { return b == 0 ? ", t, "(0) : ", t, "(a % b); }\n"));
      return;
    }
    const std::string u = tg_dtype_size(dtype) == 8 ? "ulong" : "uint";
    use_helper("div_" + name, cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? ",
                                  t, "(0) : b == -1 ? ", t, "(", u, "(0) - ", u, "(a)) : ", t, "(a / b); }\n",
                                  "static inline ", t, " tg_mod_", name, "(", t, " a, ", t,
                                  " b) { return b == 0 || b == -1 ? ", t, "(0) : ", t, "(a % b); }\n"));
  }

  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  std::vector<std::string> helpers_;  // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
  std::set<std::string> hoisted_;  // threadgroup arrays declared by the prologue
};

}  // namespace

}  // namespace tg::metal

struct tg_renderer_s {
  tg::metal::MslRenderer renderer;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::metal {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none, or MSL (alias METAL). The device may be
// NULL, and in this build always is: rendering needs no GPU.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "metal";
  static constexpr std::string_view device_label = "METAL";
  static constexpr std::string_view targets = "MSL (alias METAL)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "MSL" || upper == "METAL"; }
  static std::unique_ptr<Renderer> create(tg_device /*device*/) { return std::make_unique<Renderer>(); }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return metal_caps(); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::metal

template struct tg::sdk::RendererSlots<tg::metal::RendererHooks>;
