// The CPU plugin's Renderer: KIR -> freestanding C for clang (ext_vector_type vectors, no headers), one function
// per kernel that runs a contiguous range of work-items; and the capabilities that tell the core what it takes.
#include "cpu_plugin.hpp"

#include <tg/sdk/c11_renderer.hpp>
#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <unistd.h>
#include "tg/sdk/op_sets.hpp"

namespace tg::cpu {
namespace {

using sdk::cat;
using sdk::Error;
using sdk::op_bit;

// The standard op sets (tg/sdk/op_sets.hpp): EXP2/LOG2/SIN go to the core's polynomials, which vectorize where
// libm calls run one lane at a time (softmax 4096x4096: 28 ms against 92 ms); 16-bit floats are storage types.
// DOT4 on int32 where the host has a byte dot product (AVX512-VNNI's or AVX-VNNI's vpdpbusd): the quantized
// LLM kernels' inner product, one instruction per 4 bytes x lanes.
bool host_has_vnni() {
  static const bool has = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
  return has;
}
// LUT16 wherever there is pshufb (SSSE3: every x86-64 this runs on): the IQ4 codebooks' bytes, 16 or 64 at once.
bool host_has_ssse3() {
  static const bool has = __builtin_cpu_supports("ssse3");
  return has;
}
uint64_t ops_of(uint32_t dtype) {
  if (dtype != TG_DTYPE_INT32) return sdk::standard_ops(dtype);
  return sdk::standard_ops(dtype) | (host_has_vnni() ? op_bit(TG_KIR_DOT4) : 0) | (host_has_ssse3() ? op_bit(TG_KIR_LUT16) : 0);
}
// pshufb of 128, 256 or 512 bits for a LUT16 of 1, 4, 8 or 16 lanes (0 where the host has none): the table is
// repeated in every 128-bit lane, as the instruction looks up within its lane; one lane uses lane 0 of 128 bits
int pshufb_bits(uint32_t lanes) {
  static const bool avx2 = __builtin_cpu_supports("avx2"), avx512bw = __builtin_cpu_supports("avx512bw");
  return lanes == 1 || lanes == 4 ? 128 : lanes == 8 && avx2 ? 256 : lanes == 16 && avx512bw ? 512 : 0;
}

// DOT4 for lane counts the host's vpdpbusd does not cover: the definition, byte by byte.
const char* const kDot4Helper =
    "static inline int32_t tg_dot4(int32_t acc, int32_t a, int32_t b) {\n"
    "  unsigned int ua = (unsigned int)a, ub = (unsigned int)b, sum = (unsigned int)acc;\n"
    "  for (int i = 0; i < 32; i += 8) sum += (unsigned int)((int)((ua >> i) & 255u) * (int)(signed char)(ub >> i));\n"
    "  return (int32_t)sum;\n"
    "}\n";
// LUT16 for scalars and the lane counts pshufb does not cover: the definition, byte by byte.
const char* const kLut16Helper =
    "static inline int32_t tg_lut16(int32_t idx, int32_t t0, int32_t t1, int32_t t2, int32_t t3) {\n"
    "  const unsigned int t[4] = {(unsigned int)t0, (unsigned int)t1, (unsigned int)t2, (unsigned int)t3};\n"
    "  unsigned int out = 0;\n"
    "  for (int i = 0; i < 32; i += 8) {\n"
    "    unsigned int n = ((unsigned int)idx >> i) & 15u;\n"
    "    out |= ((t[n >> 2] >> ((n & 3u) * 8u)) & 255u) << i;\n"
    "  }\n"
    "  return (int32_t)out;\n"
    "}\n";

// The register file the compiler allocates vectors in (AVX-512: 32 of 64 bytes; AVX: 16 of 32; SSE: 16 of 16) and
// one core's L2 (glibc reads it from CPUID): the core sizes register tiles and packed panels by them.
void describe_machine(tg_renderer_caps& caps) {
  static const bool avx512 = __builtin_cpu_supports("avx512f"), avx = __builtin_cpu_supports("avx");
  caps.simd_bytes = avx512 ? 64 : avx ? 32 : 16;
  caps.simd_registers = avx512 ? 32 : 16;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  caps.l2_bytes = l2 > 0 ? static_cast<uint64_t>(l2) : 0;
}

tg_renderer_caps cpu_caps() {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.language = "c";  // CUSTOM snippets are pasted into the source as written
  caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    caps.ops[d] = ops_of(d);
    caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16);
  }
  caps.has_local = 0;
  caps.has_threads = 1;
  caps.max_global_dims = 1;
  caps.max_global[0] = UINT32_MAX;
  caps.max_global[1] = caps.max_global[2] = 1;
  caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1;
  caps.max_local_threads = 1;
  caps.local_mem_bytes = 0;
  caps.max_params = 256;
  caps.packed_loads = sdk::kPackableDtypes;  // x86 loads at any alignment
  describe_machine(caps);
  return caps;
}

// Helper functions the kernels may call, emitted into the preamble only when used.

// float16/bfloat16 conversions done with integer ops (the SDK's C11 helpers): exact round-to-nearest-even from double
// (so every source type rounds once), NaN stays NaN, and no compiler-rt call is needed (libgcc has no __truncsfbf2 to
// resolve). The CPU's half/bfloat16 are native types (_Float16, __bf16) holding those bits.
const std::string kHalfHelpers = std::string(sdk::kSmallFloatHelpersC) +
    R"(static inline half tg_to_half(double d) {
  return __builtin_bit_cast(half, (unsigned short)tg_round_small_float(d, 5, 10));
}
static inline bfloat16 tg_to_bf16(double d) {
  return __builtin_bit_cast(bfloat16, (unsigned short)tg_round_small_float(d, 8, 7));
}
static inline float tg_half_to_float(half h) { return tg_f16_bits_to_float(__builtin_bit_cast(unsigned short, h)); }
static inline float tg_bf16_to_float(bfloat16 h) { return tg_bf16_bits_to_float(__builtin_bit_cast(unsigned short, h)); }
)";

// IDIV/MOD: dividing by zero gives 0 and INT_MIN / -1 wraps, where C would trap. The core guards zero divisors,
// but a launch must never crash.
std::string division_helpers(const std::string& t, const std::string& name, bool is_signed) {
  if (!is_signed)
    return cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a / b; }\n",
               "static inline ", t, " tg_mod_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a % b; }\n");
  return cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t,
             " b) { return b == 0 ? 0 : b == -1 ? -a : a / b; }\n", "static inline ", t, " tg_mod_", name, "(", t,
             " a, ", t, " b) { return b == 0 || b == -1 ? 0 : a % b; }\n");
}

std::string max_helper(const std::string& t, const std::string& name) {
  // a + b is NaN when either is: float MAX must propagate NaN, which a plain `a > b ? a : b` does not.
  return cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t,
             " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n");
}

class CpuRenderer final : public sdk::CRenderer {
 public:
  std::string render_kernel(const tg_kir_kernel& kernel) {
    vector_types_.clear();
    packed_types_.clear();
    helpers_.clear();
    helper_names_.clear();
    gidx_loop_open_ = false;
    return render(kernel);
  }

 protected:
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "CPU"; }

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
    std::string out = cat(
        "/* tg CPU kernel ", kernel().name, ": freestanding C for clang; every type and helper is defined here */\n",
        "typedef _Bool bool;\n"
        "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long long int64_t;\n"
        "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\ntypedef unsigned int uint32_t;\n"
        "typedef unsigned long long uint64_t;\ntypedef _Float16 half;\ntypedef __bf16 bfloat16;\n");
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
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      const std::string t = scalar_type(param.dtype), at = cat("(args + ", offsets[p], ")");
      if (param.kind == TG_PARAM_BUFFER) {
        const std::string ptr = cat(param.writable ? "" : "const ", t, "*");
        line(cat(ptr, " ", param_name(p), " = (", ptr, ")*(const uint64_t*)", at, ";"));
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
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": the CPU renderer has only global dim 0 (inst ", i, ")"));
    if (gidx_loop_open_) return;  // a repeated SPECIAL names the same loop variable
    if (open_blocks() != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
    open_block("for (long long gidx0 = gidx0_start; gidx0 < gidx0_end; ++gidx0)", i, true);
    gidx_loop_open_ = true;
  }

  // The core already unrolled what pays (output vectors, register tiles); clang's partial unrolling of a long
  // loop around a register tile doubles its live vectors and spills them (a 4x3 AVX2 matmul tile: 35 -> 89
  // GFLOP/s on one core). Short constant loops are still unrolled whole (register arrays become registers).
  std::string range_header(const std::string& type, const std::string& name, const std::string& end) override {
    const bool short_loop = !end.empty() && std::all_of(end.begin(), end.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == 'L';
    }) && std::stoll(end) <= 64;
    return (short_loop ? "" : "_Pragma(\"clang loop unroll(disable)\") ") + CRenderer::range_header(type, name, end);
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
    const std::string type = scalar_type(src_dtype), name = sdk::dtype_name(src_dtype);
    if (op == TG_KIR_SQRT) return f32 ? "__builtin_sqrtf({0})" : "__builtin_sqrt({0})";
    if (op == TG_KIR_TRUNC) return f32 ? "__builtin_truncf({0})" : "__builtin_trunc({0})";
    if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : "(1.0/{0})";
    if (op == TG_KIR_FMA) return "__builtin_elementwise_fma({0},{1},{2})";  // scalars and vectors alike
    if (op == TG_KIR_MAX && sdk::is_float(src_dtype)) {
      use_helper("max_" + name, max_helper(type, name));
      return cat("tg_max_", name, "({0},{1})");
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_DOT4) {
      use_helper("dot4", kDot4Helper);
      return "tg_dot4({0},{1},{2})";
    }
    if (op == TG_KIR_LUT16) {
      use_helper("lut16", kLut16Helper);
      return "tg_lut16({0},{1},{2},{3},{4})";
    }
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, division_helpers(type, name, sdk::is_signed_int(src_dtype)));
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

  // Vectors: ops whose C vector form means the same as per lane stay whole; the rest render lane by lane.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    const uint64_t whole = op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) | op_bit(TG_KIR_FDIV) |
                           op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) | op_bit(TG_KIR_MULACC) |
                           op_bit(TG_KIR_FMA);
    // vpdpbusd on 4, 8 or 16 int32 lanes (4 and 8 need AVX512VL's or AVX-VNNI's forms, which the target has
    // whenever it has VNNI with 128- and 256-bit registers)
    if (in.op == TG_KIR_DOT4 && (in.vcount == 4 || in.vcount == 8 || in.vcount == 16))
      return cat("((", type(in.dtype, in.vcount), ")__builtin_ia32_vpdpbusd", 32 * in.vcount, "(", srcs[0], ",", srcs[1], ",",
                 srcs[2], "))");
    if (in.op == TG_KIR_LUT16 && pshufb_bits(in.vcount) && uniform_operands(i, 1, 5)) {
      // a scalar (the tiled int8 product's weight words, broadcast afterwards) goes through lane 0 of a 4-lane one
      const bool scalar = in.vcount == 1;
      const uint32_t lanes = scalar ? 4 : in.vcount;
      const int bits = pshufb_bits(in.vcount);
      std::string table;  // the table's 4 words (lane 0 of operands 1..4), once per 128 bits
      for (uint32_t lane = 0; lane < lanes; ++lane) table += cat(lane ? "," : "", scalar ? srcs[1 + lane % 4] : cat("(", srcs[1 + lane % 4], ")[0]"));
      const std::string vec = type(in.dtype, lanes), bytes = cat("tg_bytes", bits / 8);
      const std::string idx = scalar ? cat("(", vec, "){", srcs[0], "&0x0F0F0F0F,0,0,0}") : cat("(", srcs[0], "&0x0F0F0F0F)");
      use_helper(bytes, cat("typedef char ", bytes, " __attribute__((ext_vector_type(", bits / 8, ")));\n"));
      return cat("((", vec, ")__builtin_ia32_pshufb", bits, "((", bytes, ")(", vec, "){", table, "},(", bytes, ")", idx, "))",
                 scalar ? "[0]" : "");
    }
    const std::string tmpl = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1 || (whole & op_bit(in.op))) return sdk::fill(tmpl, srcs);
    std::vector<std::string> lanes;
    for (uint32_t lane = 0; lane < in.vcount; ++lane) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < in.nsrc; ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], lane));
      lanes.push_back(sdk::fill(tmpl, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }

  // Whether operands [first, end) of instruction i hold one value in every lane (a scalar broadcast): pshufb
  // looks LUT16's table up in a register shared by the lanes, so a table that differs per lane goes lane by lane.
  bool uniform_operands(uint32_t i, uint32_t first, uint32_t end) const {
    for (uint32_t j = first; j < end; ++j) {
      const uint32_t v = src(i, j);
      const tg_kir_inst& s = inst(v);
      if (s.vcount == 1) continue;
      if (s.op != TG_KIR_VECTORIZE) return false;
      for (uint32_t lane = 1; lane < s.nsrc; ++lane)
        if (src(v, lane) != src(v, 0)) return false;
    }
    return true;
  }

  // The kernels are compiled for this host, so the host's F16C decides whether half conversions are native.
  static bool host_has_f16c() {
    static const bool has = __builtin_cpu_supports("f16c");
    return has;
  }

  // float16/bfloat16 convert through the helpers (exact, no compiler-rt calls); to bool is `!= 0`.
  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    const auto is_special = [](uint32_t d) {
      return d == TG_DTYPE_BOOL || d == TG_DTYPE_FLOAT16 || d == TG_DTYPE_BFLOAT16;
    };
    if (vcount > 1 && !is_special(to) && !is_special(from))
      return cat("__builtin_convertvector(", x, ", ", type(to, vcount), ")");
    // half -> float widening is exact: with F16C it is one vcvtph2ps per vector (the LLM's fp16 weights)
    if (vcount > 1 && from == TG_DTYPE_FLOAT16 && to == TG_DTYPE_FLOAT32 && host_has_f16c())
      return cat("__builtin_convertvector(", x, ", ", type(to, vcount), ")");
    if (vcount > 1) {
      std::vector<std::string> lanes;
      for (uint32_t lane = 0; lane < vcount; ++lane) lanes.push_back(cast(to, 1, from, gep(x, lane)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    // and one vcvtph2ps for a scalar too (a quantized block's scale): the helper's branches cost more than the
    // block's arithmetic
    if (from == TG_DTYPE_FLOAT16 && (to == TG_DTYPE_FLOAT32 || to == TG_DTYPE_FLOAT64) && host_has_f16c())
      return cat("((", scalar_type(to), ")(", x, "))");
    // float32 -> float16 the same way (vcvtps2ph rounds to nearest even once, as the helper does): an f16 KV cache
    // row is written without the helper's branches per value
    if (from == TG_DTYPE_FLOAT32 && to == TG_DTYPE_FLOAT16 && host_has_f16c()) return cat("((half)(", x, "))");
    const std::string wide = from == TG_DTYPE_FLOAT16    ? cat("tg_half_to_float(", x, ")")
                             : from == TG_DTYPE_BFLOAT16 ? cat("tg_bf16_to_float(", x, ")")
                                                         : x;
    if (from == TG_DTYPE_FLOAT16 || from == TG_DTYPE_BFLOAT16 || to == TG_DTYPE_FLOAT16 || to == TG_DTYPE_BFLOAT16)
      use_helper("half", kHalfHelpers);
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_FLOAT16) return cat("tg_to_half((double)(", wide, "))");
    if (to == TG_DTYPE_BFLOAT16) return cat("tg_to_bf16((double)(", wide, "))");
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

  // A vector access into scalar memory goes through the element-aligned `_u` type: any element index is fine.
  std::string lvalue(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    return cat("(*(", type(a.dtype, a.vcount), "_u*)(", a.ptr, "+", a.index, "))");
  }
  std::string packed_load(const Access& a, uint32_t dtype) override {
    packed_types_.insert({dtype, a.vcount});
    return cat("(*(const ", type(dtype, a.vcount), "_p*)(", a.ptr, "+", a.index, "))");
  }

 private:
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  std::set<std::pair<uint32_t, uint32_t>> vector_types_;  // (dtype, vcount) pairs the body used, sorted
  std::set<std::pair<uint32_t, uint32_t>> packed_types_;  // ... and read by packed loads
  std::vector<std::string> helpers_;                      // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
  bool gidx_loop_open_ = false;
};

}  // namespace
}  // namespace tg::cpu

struct tg_renderer_s {
  std::shared_ptr<tg::cpu::Device> device;
  tg::cpu::CpuRenderer renderer;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::cpu {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none given, or the C renderer by name.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "cpu";
  static constexpr std::string_view device_label = "CPU";
  static constexpr std::string_view targets = "C (alias CLANG)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C" || upper == "CLANG"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{device_of(device), {}, {}});
  }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return cpu_caps(); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::cpu

template struct tg::sdk::RendererSlots<tg::cpu::RendererHooks>;
