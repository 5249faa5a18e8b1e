// The NV plugin's Renderer: KIR -> CUDA C++ for NVRTC, needing no header (float16 and bfloat16 are unsigned
// short bits with exact conversion helpers), one `extern "C" __global__` function per kernel with global dim 0
// spread over blocks of threads; and the capabilities, which need no GPU.
#include "nv_plugin.hpp"

#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include "tg/sdk/op_sets.hpp"
#include "tg/sdk/tensor_cores.hpp"

namespace tg::nv {
namespace {

using sdk::cat;
using sdk::Error;
using sdk::op_bit;

uint64_t ops_of(uint32_t dtype) { return sdk::standard_ops(dtype); }

// The tensor cores of sm_80 and newer: mma.sync m16n8k16 with float16 or bfloat16 inputs, float32 accumulators.
const tg_tensor_core kTensorCores[] = {sdk::mma_m16n8k16(TG_DTYPE_FLOAT16), sdk::mma_m16n8k16(TG_DTYPE_BFLOAT16)};

// The SM number of an arch like sm_90 or sm_90a (0 when it is not one).
int sm_number(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0; }

// Vectors of 2 and 4 lanes up to 16 bytes (tg_vec, aligned to its size): loads and stores at indices known to be
// multiples of the lanes are single 8- or 16-byte accesses (buffers are 256-byte aligned), the others go lane by
// lane, and so does vector arithmetic (NVRTC has none to offer; the point is the wide memory access).
tg_renderer_caps nv_caps(const std::string& arch) {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.language = "cuda";  // CUSTOM snippets are pasted into the source as written
  caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    caps.ops[d] = ops_of(d);
    const uint32_t size = tg_dtype_size(d);
    caps.vector_widths[d] = (1u << 1) | (d != TG_DTYPE_BOOL && size * 2 <= 16 ? 1u << 2 : 0u) |
                            (d != TG_DTYPE_BOOL && size * 4 <= 16 ? 1u << 4 : 0u);
  }
  // the limits every CUDA device since sm_30 has: grid 2^31-1 x 65535 x 65535 blocks, blocks of 1024 threads
  // (1024 x 1024 x 64), 48 KiB of static shared memory
  caps.has_local = 1;
  caps.has_threads = 0;
  caps.max_global_dims = 3;
  caps.max_global[0] = INT32_MAX;
  caps.max_global[1] = caps.max_global[2] = 65535;
  caps.max_local[0] = caps.max_local[1] = 1024;
  caps.max_local[2] = 64;
  caps.max_local_threads = 1024;
  caps.local_mem_bytes = 48 * 1024;
  caps.max_params = 512;  // 4 KiB of kernel parameters at 8 bytes each
  if (sm_number(arch) >= 80) {
    caps.tensor_cores = kTensorCores;
    caps.ntensor_cores = sizeof kTensorCores / sizeof kTensorCores[0];
  }
  return caps;
}

// Exact float16/bfloat16 conversions with integer ops (round to nearest even once; NaN stays a quiet NaN).
const char* const kSmallFloatHelpers = R"(__device__ static inline unsigned int tg_round_small(double d, int ebits, int mbits) {
  unsigned long long b = (unsigned long long)__double_as_longlong(d), man = b & 0xfffffffffffffULL;
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
__device__ static inline float tg_half_to_float(unsigned short h) {
  unsigned int b = h, sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ((float)man * 5.9604644775390625e-08f);
  return __uint_as_float(sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13));
}
__device__ static inline float tg_bf16_to_float(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }
)";

const char* const kBitcastHelper = R"(template <class T, class F> __device__ static inline T tg_bitcast(F x) {
  union { F f; T t; } u;
  u.f = x;
  return u.t;
}
)";

std::string division_helpers(const std::string& t, const std::string& name, bool is_signed) {
  if (!is_signed)
    return cat("__device__ static inline ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a / b; }\n",
               "__device__ static inline ", t, " tg_mod_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a % b; }\n");
  return cat("__device__ static inline ", t, " tg_idiv_", name, "(", t, " a, ", t,
             " b) { return b == 0 ? 0 : b == -1 ? (", t, ")(0ULL - (unsigned long long)a) : a / b; }\n",
             "__device__ static inline ", t, " tg_mod_", name, "(", t, " a, ", t,
             " b) { return b == 0 || b == -1 ? 0 : a % b; }\n");
}

class CudaRenderer final : public sdk::CRenderer {
 public:
  std::string render_kernel(const tg_kir_kernel& kernel) {
    helpers_.clear();
    helper_names_.clear();
    return render(kernel);
  }

 protected:
  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {
        "bool",         "signed char",        "short",          "int",            "long long", "unsigned char",
        "unsigned short", "unsigned int",     "unsigned long long", "unsigned short", "unsigned short", "float",
        "double"};
    return names[dtype];
  }

  // Vectors (and tensor-core fragments): a plain array in a struct aligned to its size (no header needed).
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    use_helper("vec", "template <class T, int N> struct alignas(sizeof(T) * N) tg_vec { T v[N]; };\n");
    return cat("tg_vec<", scalar_type(dtype), ",", vcount, ">");
  }
  std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) override {
    std::string out = cat(vector_type(dtype, vcount), "{{");
    for (size_t l = 0; l < lanes.size(); ++l) out += (l ? "," : "") + lanes[l];
    return out + "}}";
  }
  std::string gep(const std::string& x, uint32_t lane) override { return cat(x, ".v[", lane, "]"); }

  // A vector access is one wide load or store where its index is a multiple of its lanes, else one per lane.
  // (register arrays of scalars are not declared aligned; an index_multiple of 0 means nobody worked it out)
  static bool aligned(const Access& a) {
    return a.vcount == a.ptr_vcount || (a.addrspace != TG_ADDR_REG && a.index_multiple != 0 && a.index_multiple % a.vcount == 0);
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

  // mma.sync m16n8k16: A's 8 and B's 4 16-bit lanes go in pairs into 32-bit registers (lower lane in the low
  // half), C and D are 4 floats (PTX ISA, "Matrix Fragments for mma.m16n8k16").
  std::string wmma(uint32_t i, const std::vector<std::string>& abc) override {
    const tg_kir_inst& in = inst(i);
    const size_t ntc = sizeof kTensorCores / sizeof kTensorCores[0];
    if (in.arg.i < 0 || static_cast<size_t>(in.arg.i) >= ntc)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel().name, ": inst ", i, ": no tensor core ", in.arg.i));
    const tg_tensor_core& tc = kTensorCores[in.arg.i];
    const tg_kir_inst &a = operand_inst(i, 0), &b = operand_inst(i, 1), &c = operand_inst(i, 2);
    if (a.dtype != tc.dtype_in || a.vcount != 8 || b.dtype != tc.dtype_in || b.vcount != 4 ||
        c.dtype != TG_DTYPE_FLOAT32 || c.vcount != 4 || in.dtype != TG_DTYPE_FLOAT32 || in.vcount != 4)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel().name, ": inst ", i, ": WMMA m16n8k16 takes ",
                                               sdk::dtype_name(tc.dtype_in), " x 8, x 4 and float32 x 4 fragments"));
    const std::string t = tc.dtype_in == TG_DTYPE_FLOAT16 ? "f16" : "bf16";
    vector_type(TG_DTYPE_FLOAT32, 4);
    use_helper("mma_" + t, cat(
        "__device__ static inline tg_vec<float,4> tg_mma_", t, "(tg_vec<unsigned short,8> a, tg_vec<unsigned short,4> b,"
        " tg_vec<float,4> c) {\n"
        "  unsigned int ra[4], rb[2];\n"
        "  for (int i = 0; i < 4; ++i) ra[i] = (unsigned int)a.v[2 * i] | ((unsigned int)a.v[2 * i + 1] << 16);\n"
        "  for (int i = 0; i < 2; ++i) rb[i] = (unsigned int)b.v[2 * i] | ((unsigned int)b.v[2 * i + 1] << 16);\n"
        "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.", t, ".", t, ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\"\n"
        "      : \"+f\"(c.v[0]), \"+f\"(c.v[1]), \"+f\"(c.v[2]), \"+f\"(c.v[3])\n"
        "      : \"r\"(ra[0]), \"r\"(ra[1]), \"r\"(ra[2]), \"r\"(ra[3]), \"r\"(rb[0]), \"r\"(rb[1]));\n"
        "  return c;\n}\n"));
    return cat("tg_mma_", t, "(", abc[0], ",", abc[1], ",", abc[2], ")");
  }

  std::string preamble() override {
    std::string out = cat("/* tg NV kernel ", kernel().name, ": CUDA C++ for NVRTC, no headers */\n");
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    const tg_kir_kernel& k = kernel();
    std::string out = cat("extern \"C\" __global__ void ", k.name, "(");
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
    if (!has_work_items) line("if (blockIdx.x != 0 || threadIdx.x != 0) return; /* no work-item id: runs once */");
  }

  // A global id is block * blockDim + thread. A one-dim grid the plugin blocks itself (the core asked for local 1)
  // is rounded up to whole blocks, so threads past the extent return at once; the id comes before any loop, so
  // this skips the whole body. A kernel with barriers is launched exactly (the core tiles its loops) and never
  // returns early, which would leave its group waiting at the barrier.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    static const char* const axis[3] = {"x", "y", "z"};
    if (kind == TG_SPECIAL_GROUP) return line(cat(type_of(i), " ", name(i), " = (", type_of(i), ")blockIdx.", axis[dim], ";"));
    if (kind == TG_SPECIAL_LOCAL) return line(cat(type_of(i), " ", name(i), " = (", type_of(i), ")threadIdx.", axis[dim], ";"));
    line(cat(type_of(i), " ", name(i), " = (", type_of(i), ")((unsigned long long)blockIdx.", axis[dim], " * blockDim.",
             axis[dim], " + threadIdx.", axis[dim], ");"));
    if (inst(i).nsrc == 1 && !has_barrier()) {
      if (open_blocks() != 0)
        throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
      line(cat("if (", name(i), " >= ", name(src(i, 0)), ") return;"));
    }
  }
  // A barrier or an mma.sync needs every thread of its block (warp): no thread may return early.
  bool has_barrier() const {
    const tg_kir_kernel& k = kernel();
    return std::any_of(k.insts, k.insts + k.ninsts,
                       [](const tg_kir_inst& in) { return in.op == TG_KIR_BARRIER || in.op == TG_KIR_WMMA; });
  }
  std::string barrier() override { return "__syncthreads();"; }
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat("__shared__ alignas(16) ", type, " ", name, "[", count, "];");  // 16: room for aligned vector access
  }

  bool is_reserved_name(const std::string& name) override {
    static const char* const words[] = {
        "new",       "delete",  "class",    "template", "this",      "namespace", "operator",     "private",
        "public",    "protected", "virtual", "friend",  "typename",  "using",     "try",          "catch",
        "throw",     "explicit", "mutable", "export",   "asm",       "and",       "or",           "not",
        "xor",       "bitand",  "bitor",    "compl",    "nullptr",   "constexpr", "decltype",     "alignas",
        "alignof",   "noexcept", "static_assert", "thread_local", "wchar_t", "char16_t", "char32_t", "threadIdx",
        "blockIdx",  "blockDim", "gridDim", "warpSize", "max",       "min",       "sqrt",         "sqrtf",
        "trunc",     "truncf",  "and_eq",   "or_eq",    "xor_eq",    "not_eq",    "concept",      "requires"};
    if (CRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    return false;
  }

  // Signed add/sub/mul/neg wrap in KIR but overflow is undefined in C++: compute them unsigned.
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const std::string type = scalar_type(src_dtype), name = sdk::dtype_name(src_dtype);
    const bool f32 = src_dtype == TG_DTYPE_FLOAT32;
    if (sdk::is_float(src_dtype)) {
      if (op == TG_KIR_SQRT) return f32 ? "sqrtf({0})" : "sqrt({0})";
      if (op == TG_KIR_TRUNC) return f32 ? "truncf({0})" : "trunc({0})";
      if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : "(1.0/{0})";
      if (op == TG_KIR_FMA) return f32 ? "__fmaf_rn({0},{1},{2})" : "__fma_rn({0},{1},{2})";
      if (op == TG_KIR_MAX) {
        use_helper("max_" + name, cat("__device__ static inline ", type, " tg_max_", name, "(", type, " a, ", type,
                                      " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"));
        return cat("tg_max_", name, "({0},{1})");
      }
      return CRenderer::op_template(op, dtype, src_dtype);
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, division_helpers(type, name, sdk::is_signed_int(src_dtype)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    const bool wide = tg_dtype_size(src_dtype) == 8;
    const std::string uw = wide ? "unsigned long long" : "unsigned int";
    if (op == TG_KIR_SHL) return cat("((", type, ")((", uw, "){0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    if (sdk::is_signed_int(src_dtype)) {
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
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": the NV renderer has no ", sdk::op_name(in.op),
                                          " on ", sdk::dtype_name(src_dtype), " (inst ", i, ")"));
    const std::string op = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1) return sdk::fill(op, srcs);
    std::vector<std::string> lanes;  // lane by lane; a scalar operand (WHERE's condition) is shared
    for (uint32_t l = 0; l < in.vcount; ++l) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < srcs.size(); ++j) lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], l));
      lanes.push_back(sdk::fill(op, lane_srcs));
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
    if (is_small(from) || is_small(to)) use_helper("small", kSmallFloatHelpers);
    if (is_small(from)) wide = cat(from == TG_DTYPE_FLOAT16 ? "tg_half_to_float(" : "tg_bf16_to_float(", x, ")");
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_FLOAT16) return cat("((unsigned short)tg_round_small((double)(", wide, "), 5, 10))");
    if (to == TG_DTYPE_BFLOAT16) return cat("((unsigned short)tg_round_small((double)(", wide, "), 8, 7))");
    return cat("((", scalar_type(to), ")(", wide, "))");
  }
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    use_helper("bitcast", kBitcastHelper);
    return cat("tg_bitcast<", type(to, vcount), ", ", type(from, vcount), ">(", x, ")");
  }

  // Constants: float16/bfloat16 as their bits (folded here), inf and NaN as bit patterns (no math.h in NVRTC).
  std::string float_literal(uint32_t dtype, double value) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return small_literal(dtype, value);
    return CRenderer::float_literal(dtype, value);
  }
  std::string inf_literal(uint32_t dtype, bool negative) override {
    if (dtype == TG_DTYPE_FLOAT32) return negative ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
    if (dtype == TG_DTYPE_FLOAT64)
      return negative ? "__longlong_as_double(0xfff0000000000000LL)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return small_literal(dtype, negative ? -INFINITY : INFINITY);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT32) return "__int_as_float(0x7fc00000)";
    if (dtype == TG_DTYPE_FLOAT64) return "__longlong_as_double(0x7ff8000000000000LL)";
    return small_literal(dtype, NAN);
  }

 private:
  std::string small_literal(uint32_t dtype, double value) {
    const uint32_t bits = dtype == TG_DTYPE_FLOAT16 ? round_small_float(value, 5, 10) : round_small_float(value, 8, 7);
    return cat("((unsigned short)", bits, ")");
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
    uint32_t q = e <= 0 ? static_cast<uint32_t>(m >> shift)
                        : (static_cast<uint32_t>(e) << mbits) | static_cast<uint32_t>((m >> shift) & ((1u << mbits) - 1u));
    const uint64_t rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
    if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u;
    return sign | q;
  }
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  std::vector<std::string> helpers_;
  std::set<std::string> helper_names_;
};

}  // namespace
}  // namespace tg::nv

struct tg_renderer_s {
  tg::nv::CudaRenderer renderer;
  std::string source;
  std::string arch;  // the device's, or NV_ARCH's: tensor cores need sm_80
};

namespace tg::nv {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none, or CUDA (optionally CUDA:sm_XX, which the
// compiler's arch decides anyway). The device may be NULL: rendering needs no GPU, and the arch that decides
// whether tensor cores are claimed is then NV_ARCH's.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "nv";
  static constexpr std::string_view device_label = "NV";
  static constexpr std::string_view targets = "CUDA";

  static bool is_target(std::string_view upper) {
    return upper.empty() || upper == "CUDA" || upper.starts_with("CUDA:");
  }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{{}, {}, device ? device_of(device)->arch : default_arch()});
  }
  static tg_renderer_caps caps(const Renderer& renderer) { return nv_caps(renderer.arch); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::nv

template struct tg::sdk::RendererSlots<tg::nv::RendererHooks>;
