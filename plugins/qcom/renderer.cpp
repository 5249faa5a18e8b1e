// The QCOM plugin's Renderer: KIR -> OpenCL C 1.2, one __kernel per KIR kernel with global dim 0 as the work-item
// id; and the capabilities, which follow what the opened device reports (fp16, fp64, 64-bit integers).
#include "qcom_plugin.hpp"

#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include "tg/sdk/op_sets.hpp"
#include "tg/sdk/tensor_cores.hpp"

namespace tg::qcom {
namespace {

using sdk::cat;
using sdk::Error;
using sdk::kBoolOps;
using sdk::kFloatOps;
using sdk::kIntegerOps;
using sdk::kStorageOps;
using sdk::op_bit;

// What a renderer needs to know about its device: the extensions that change types and caps.
struct Features {
  bool fp16 = false, fp64 = false, int64 = true;
  uint32_t max_params = 128;
  uint32_t max_local[3] = {1, 1, 1}, max_local_threads = 1;
  uint64_t local_mem_bytes = 0;
  // QCOM_EMULATE_TENSOR_CORES=1: claim an m16n8k16 tensor core (float32 inputs) computed through local memory,
  // so the core's tensor-core lowering runs, and is checked, on any OpenCL device. A test aid: it is slow.
  bool emulate_tensor_cores = false;
  uint32_t image_max_width = 0, image_max_height = 0;  // image2d reads (TG_PARAM_IMAGE); 0: none
};

// The emulated unit: NVIDIA's m16n8k16 fragment layout over float32 inputs, with a 16x16 + 16x8 float scratch per
// warp in local memory, for up to kScratchWarps warps per work-group.
const tg_tensor_core kEmulatedTensorCore = sdk::mma_m16n8k16(TG_DTYPE_FLOAT32);
constexpr uint32_t kScratchFloats = 16 * 16 + 16 * 8, kScratchWarps = 8;
constexpr uint64_t kScratchBytes = uint64_t{kScratchFloats} * 4 * kScratchWarps;

uint64_t ops_of(const Features& f, uint32_t dtype) {
  if (dtype == TG_DTYPE_BOOL) return kBoolOps;
  if (dtype == TG_DTYPE_BFLOAT16 || (dtype == TG_DTYPE_FLOAT16 && !f.fp16)) return kStorageOps;
  if (dtype == TG_DTYPE_FLOAT16)
    return kFloatOps & ~op_bit(TG_KIR_SQRT) & ~op_bit(TG_KIR_FMA);  // the core uses float32
  return sdk::is_float(dtype) ? kFloatOps : kIntegerOps;
}

tg_renderer_caps caps_of(const Features& f) {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.language = "opencl-c";  // CUSTOM snippets are pasted into the source as written
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    if (d == TG_DTYPE_FLOAT64 && !f.fp64) continue;
    if ((d == TG_DTYPE_INT64 || d == TG_DTYPE_UINT64) && !f.int64) continue;
    caps.dtypes |= 1u << d;
    caps.ops[d] = ops_of(f, d);
    // OpenCL vectors have 2, 4, 8 or 16 lanes; bool has none (comparisons of vectors give int vectors).
    caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16);
  }
  caps.has_local = f.local_mem_bytes > 0 && f.max_local_threads > 1 ? 1 : 0;
  caps.has_threads = 0;
  caps.max_global_dims = 3;
  for (int d = 0; d < 3; ++d) caps.max_global[d] = UINT32_MAX, caps.max_local[d] = f.max_local[d];
  caps.max_local_threads = f.max_local_threads;
  caps.local_mem_bytes = f.local_mem_bytes;
  caps.max_params = f.max_params;
  if (f.int64)
    caps.image_max_width = f.image_max_width, caps.image_max_height = f.image_max_height;  // helpers use long
  if (f.emulate_tensor_cores && caps.has_local && caps.local_mem_bytes > kScratchBytes) {
    caps.tensor_cores = &kEmulatedTensorCore, caps.ntensor_cores = 1;
    caps.local_mem_bytes -= kScratchBytes;  // the emulation's scratch is not the kernel's to plan with
  }
  return caps;
}

// The nearest (ties to even) float16 (ebits 5, mbits 10) or bfloat16 (8, 7) to d, as bits: constants are folded
// on the host, so a kernel needs no conversion code for them.
uint16_t round_small_float(double d, int ebits, int mbits) {
  uint64_t b = 0;
  std::memcpy(&b, &d, sizeof b);
  const uint64_t man = b & 0xfffffffffffffULL;
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
  const int exp = static_cast<int>((b >> 52) & 0x7ff), e = exp - 1023 + (1 << (ebits - 1)) - 1;
  if (exp == 0x7ff)
    return static_cast<uint16_t>(sign | (emax << mbits) |
                                 (man ? (1u << (mbits - 1)) | static_cast<uint32_t>(man >> (52 - mbits)) : 0u));
  if (e >= static_cast<int>(emax)) return static_cast<uint16_t>(sign | (emax << mbits));
  const uint64_t m = exp ? man | (1ULL << 52) : man;
  const int shift = 52 - mbits + (e <= 0 ? 1 - e : 0);
  if (shift > 54) return static_cast<uint16_t>(sign);
  uint32_t q = e <= 0
                   ? static_cast<uint32_t>(m >> shift)
                   : (static_cast<uint32_t>(e) << mbits) | static_cast<uint32_t>((m >> shift) & ((1u << mbits) - 1u));
  const uint64_t rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u;
  return static_cast<uint16_t>(sign | q);
}

// float16 (without cl_khr_fp16) and bfloat16 are ushort bits; these convert them with integer ops, rounding to
// nearest even exactly once. A source of `smbits` mantissa bits and exponent bias `sbias` (exponent all ones:
// inf/NaN) becomes a float with ebits/mbits; NaN stays a quiet NaN.
const char* const kSmallFloatHelpers = R"(static inline uint tg_round_small(uint neg, int exp, int sexpmax, ulong man,
                                   int smbits, int sbias, int ebits, int mbits) {
  uint sign = neg << (ebits + mbits), emax = (1u << ebits) - 1u;
  if (exp == sexpmax) /* inf, or a quiet NaN keeping the top of the payload */
    return sign | (emax << mbits) | (man ? (1u << (mbits - 1)) | (uint)(man >> (smbits - mbits)) : 0u);
  int e = (exp ? exp : 1) - sbias + (1 << (ebits - 1)) - 1;
  if (e >= (int)emax) return sign | (emax << mbits); /* overflow: inf */
  ulong m = exp ? man | (1UL << smbits) : man;
  int shift = smbits - mbits + (e <= 0 ? 1 - e : 0); /* bits to drop; subnormal results drop more */
  if (shift > smbits + 2) return sign; /* below half the smallest subnormal */
  uint q = e <= 0 ? (uint)(m >> shift) : ((uint)e << mbits) | (uint)((m >> shift) & ((1UL << mbits) - 1UL));
  ulong rem = m & ((1UL << shift) - 1UL), half_ulp = 1UL << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u; /* a carry into the exponent is right */
  return sign | q;
}
static inline uint tg_round_from_float(float f, int ebits, int mbits) {
  uint b = as_uint(f);
  return tg_round_small(b >> 31, (int)((b >> 23) & 0xffu), 0xff, b & 0x7fffffu, 23, 127, ebits, mbits);
}
static inline float tg_half_to_float(ushort h) {
  uint b = h, sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ((float)man * 0x1p-24f); /* zero or subnormal: exact */
  return as_float(sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13));
}
static inline float tg_bf16_to_float(ushort h) { return as_float((uint)h << 16); }
)";
// From double when the device has it, so that every source type (int64 included) rounds once.
const char* const kSmallFloatFromDouble = R"(static inline uint tg_round_from_double(double d, int ebits, int mbits) {
  ulong b = as_ulong(d);
  return tg_round_small((uint)(b >> 63), (int)((b >> 52) & 0x7ffUL), 0x7ff, b & 0xfffffffffffffUL, 52, 1023,
                        ebits, mbits);
}
)";

// Reading a float32 buffer through its image2d view (TG_PARAM_IMAGE): element e is lane e % 4 of texel e / 4, at
// (texel % width, texel / width). Unnormalized coordinates, no filtering: the exact stored value.
const char* const kImageHelpers =
    R"(__constant sampler_t tg_sampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;
static inline float4 tg_texel(read_only image2d_t img, long e, int width) {
  const long t = e >> 2;
  return read_imagef(img, tg_sampler, (int2)((int)(t % width), (int)(t / width)));
}
static inline float tg_image_elem(read_only image2d_t img, long e, int width) {
  const float4 v = tg_texel(img, e, width);
  const int lane = (int)(e & 3);
  return lane == 0 ? v.x : lane == 1 ? v.y : lane == 2 ? v.z : v.w;
}
)";

std::string max_helper(const std::string& t, const std::string& name) {
  // OpenCL's fmax returns the other operand for a NaN; KIR's MAX propagates NaN (a + b is NaN when either is).
  return cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t,
             " b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n");
}

class OpenClRenderer final : public sdk::CRenderer {
 public:
  explicit OpenClRenderer(const Features& features) : f_(features) {}

  std::string render_kernel(const tg_kir_kernel& kernel) {
    helpers_.clear();
    helper_names_.clear();
    return render(kernel);
  }

 protected:
  // float16 is `half` with cl_khr_fp16, else ushort bits like bfloat16. bool in memory is uchar (OpenCL allows no
  // bool pointers or arguments in a kernel's signature).
  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool", "char",  "short", "int",    "long",  "uchar", "ushort",
                                                      "uint", "ulong", "half",  "ushort", "float", "double"};
    return dtype == TG_DTYPE_FLOAT16 && !f_.fp16 ? "ushort" : names[dtype];
  }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override { return cat(scalar_type(dtype), vcount); }
  std::string memory_type(uint32_t dtype) { return dtype == TG_DTYPE_BOOL ? "uchar" : scalar_type(dtype); }

  std::string preamble() override {
    std::string out = cat("/* tg QCOM kernel ", kernel().name, ": OpenCL C 1.2 */\n",
                          // a*b+c stays two roundings: results must not depend on whether the core sent MULACC
                          "#pragma OPENCL FP_CONTRACT OFF\n");
    // preamble() comes before signature(): enable what the device has rather than what the body used
    if (f_.fp64) out += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    if (f_.fp16) out += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
    const tg_kir_kernel& k = kernel();
    if (std::any_of(k.params, k.params + k.nparams, [](const tg_kir_param& p) { return p.kind == TG_PARAM_IMAGE; }))
      out += kImageHelpers;
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    const tg_kir_kernel& k = kernel();
    std::string out = cat("__kernel void ", k.name, "(");
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      out += p ? ", " : "";
      if (param.kind == TG_PARAM_IMAGE)
        out += cat("read_only image2d_t ", param_name(p));
      else if (param.kind == TG_PARAM_BUFFER)
        out += cat("__global ", param.writable ? "" : "const ", memory_type(param.dtype), "* ", param_name(p));
      else
        out += cat(memory_type(param.dtype), " ", param_name(p));
    }
    return out + ")";
  }

  // A kernel without a work-item id runs its body once, however wide the launch.
  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items) line("if (get_global_id(0) != 0) return; /* no work-item id: the body runs once */");
    if (std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_WMMA; }))
      declare_tensor_core_scratch();
  }

  // Emulated tensor cores: each warp of 32 work-items (consecutive local ids along dim 0) owns 16x16 + 16x8
  // floats of local memory where its fragments meet. The group's size is the product of its LOCAL ids' extents.
  void declare_tensor_core_scratch() {
    const tg_kir_kernel& k = kernel();
    uint64_t extent[3] = {1, 1, 1};
    for (uint32_t i = 0; i < k.ninsts; ++i) {
      const tg_kir_inst& in = k.insts[i];
      if (in.op != TG_KIR_SPECIAL || in.arg.i / 4 != TG_SPECIAL_LOCAL || in.arg.i % 4 > 2) continue;
      const tg_kir_inst& end = operand_inst(i, 0);
      if (end.op != TG_KIR_CONST)
        throw Error(TG_ERR_UNSUPPORTED, "emulated tensor cores need constant work-group sizes");
      extent[in.arg.i % 4] = static_cast<uint64_t>(end.arg.i);
    }
    const uint64_t threads = extent[0] * extent[1] * extent[2], tc = kEmulatedTensorCore.threads;
    if (extent[0] % tc)
      throw Error(TG_ERR_UNSUPPORTED, cat("emulated tensor cores need work-groups of whole warps along dim 0"));
    if (threads / tc > kScratchWarps)
      throw Error(TG_ERR_UNSUPPORTED, cat("emulated tensor cores serve at most ", kScratchWarps,
                                          " warps per work-group; this kernel has ", threads / tc));
    line(cat("__local float tg_tc_scratch[", threads / tc * kScratchFloats, "];"));
    line(cat("const int tg_tc_lane = (int)(get_local_id(0) % ", tc, ");"));
    line(
        cat("__local float* tg_tc_warp = tg_tc_scratch + (get_local_id(0) + get_local_size(0) * (get_local_id(1) + "
            "get_local_size(1) * get_local_id(2))) / ",
            tc, " * ", kScratchFloats, ";"));
  }

  // One coordinate (row, or col) of a fragment lane as an expression of tg_tc_lane.
  static std::string tc_index(const uint8_t* map, int first, int bits, uint32_t elem) {
    uint32_t fixed = 0;
    std::string out;
    for (int i = 0; i < bits; ++i) {
      const uint8_t src = map[first + i];
      if (src >= 32)
        fixed |= ((elem >> (src - 32)) & 1u) << i;
      else
        out += cat("(((tg_tc_lane >> ", +src, ") & 1) << ", i, ") + ");
    }
    return cat("(", out, fixed, ")");
  }

  // D = A * B + C for the warp: every work-item scatters its A and B lanes into the warp's scratch, then computes
  // its own D lanes from the whole matrices. Two barriers: the group reaches every WMMA together (KIR's rule).
  std::string wmma(uint32_t i, const std::vector<std::string>& abc) override {
    const tg_kir_inst& in = inst(i);
    const tg_tensor_core& tc = kEmulatedTensorCore;
    const tg_kir_inst &a = operand_inst(i, 0), &b = operand_inst(i, 1), &c = operand_inst(i, 2);
    if (!f_.emulate_tensor_cores || in.arg.i != 0)
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": inst ", i, ": no tensor core ", in.arg.i,
                                          " (QCOM_EMULATE_TENSOR_CORES=1 emulates one)"));
    if (a.dtype != TG_DTYPE_FLOAT32 || a.vcount != 8 || b.dtype != TG_DTYPE_FLOAT32 || b.vcount != 4 ||
        c.dtype != TG_DTYPE_FLOAT32 || c.vcount != 4 || in.dtype != TG_DTYPE_FLOAT32 || in.vcount != 4)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel().name, ": inst ", i,
                                               ": WMMA m16n8k16 takes float32 x 8, x 4 and x 4 fragments"));
    line("barrier(CLK_LOCAL_MEM_FENCE);");
    for (uint32_t e = 0; e < 8; ++e)
      line(cat("tg_tc_warp[", tc_index(tc.a_map, 0, 4, e), " * 16 + ", tc_index(tc.a_map, 4, 4, e),
               "] = ", gep(abc[0], e), ";"));
    for (uint32_t e = 0; e < 4; ++e)
      line(cat("tg_tc_warp[256 + ", tc_index(tc.b_map, 0, 4, e), " * 8 + ", tc_index(tc.b_map, 4, 3, e),
               "] = ", gep(abc[1], e), ";"));
    line("barrier(CLK_LOCAL_MEM_FENCE);");
    const std::string d = cat("tc", i);
    line(cat("float4 ", d, " = ", abc[2], ";"));
    for (uint32_t e = 0; e < 4; ++e)
      line(cat("for (int q = 0; q < 16; ++q) ", d, ".s", e, " += tg_tc_warp[", tc_index(tc.c_map, 0, 4, e),
               " * 16 + q] * tg_tc_warp[256 + q * 8 + ", tc_index(tc.c_map, 4, 3, e), "];"));
    return d;
  }

  std::string special_expr(uint32_t kind, uint32_t dim) override {
    static const char* const fns[3] = {"get_global_id", "get_group_id", "get_local_id"};
    return cat(fns[kind], "(", dim, ")");
  }
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    line(cat(type_of(i), " ", name(i), " = (", type_of(i), ")", special_expr(kind, dim), ";"));
  }
  std::string barrier() override { return "barrier(CLK_LOCAL_MEM_FENCE);"; }
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat("__local ", type, " ", name, "[", count, "];");
  }

  bool is_reserved_name(const std::string& name) override {
    static const char* const words[] = {
        "kernel", "global",    "local",     "constant", "private", "read_only", "write_only", "read_write", "uniform",
        "pipe",   "image2d_t", "sampler_t", "event_t",  "size_t",  "ptrdiff_t", "intptr_t",   "uintptr_t",  "uchar",
        "ushort", "uint",      "ulong",     "max",      "min",     "barrier",   "exp2",       "log2",       "sin",
        "sqrt",   "trunc",     "select",    "isnan",    "fmax",    "fmin",      "NAN",        "INFINITY"};
    if (CRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    static const char* const prefixes[] = {"get_", "vload", "vstore", "as_",  "convert_", "char",  "short",  "int",
                                           "long", "uchar", "ushort", "uint", "ulong",    "float", "double", "half"};
    for (const char* prefix : prefixes)
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  }

  // Signed add/sub/mul/neg/shl wrap in KIR but overflow is undefined in OpenCL C: compute them unsigned.
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const std::string type = scalar_type(src_dtype), name = sdk::dtype_name(src_dtype);
    const bool is_f32 = src_dtype == TG_DTYPE_FLOAT32;
    if (sdk::is_float(src_dtype)) {
      if (op == TG_KIR_MAX) {
        use_helper("max_" + name, max_helper(type, name));
        return cat("tg_max_", name, "({0},{1})");
      }
      if (op == TG_KIR_RECIP) return is_f32 ? "(1.0f/{0})" : cat("((", type, ")1/{0})");
      return CRenderer::op_template(op, dtype, src_dtype);
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, sdk::guarded_division_helpers(type, name, sdk::is_signed_int(src_dtype)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    const bool wide = tg_dtype_size(src_dtype) == 8;
    // Shift counts are taken modulo the promoted width, like the CPU plugin (OpenCL masks by the operand's own).
    if (op == TG_KIR_SHL) return cat("((", type, ")((", wide ? "ulong" : "uint", "){0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    if (sdk::is_signed_int(src_dtype)) {
      const std::string u = cat("(", scalar_type(src_dtype + 4), ")");  // INT8..INT64 + 4 = UINT8..UINT64
      if (op == TG_KIR_NEG) return cat("((", type, ")(0u-", u, "{0}))");
      if (op == TG_KIR_ADD) return cat("((", type, ")(", u, "{0}+", u, "{1}))");
      if (op == TG_KIR_SUB) return cat("((", type, ")(", u, "{0}-", u, "{1}))");
      if (op == TG_KIR_MUL) return cat("((", type, ")(", u, "{0}*", u, "{1}))");
      if (op == TG_KIR_MULACC) return cat("((", type, ")(", u, "{0}*", u, "{1}+", u, "{2}))");
    }
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  // Vectors: ops whose OpenCL vector form means the same as per lane stay whole; the rest go lane by lane.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    if (!(ops_of(f_, src_dtype) & op_bit(in.op)))
      throw Error(TG_ERR_UNSUPPORTED, cat("kernel ", kernel().name, ": the QCOM renderer has no ", sdk::op_name(in.op),
                                          " on ", sdk::dtype_name(src_dtype), " (inst ", i, ")"));
    if (in.vcount > 1 && sdk::is_signed_int(src_dtype) &&
        (in.op == TG_KIR_ADD || in.op == TG_KIR_SUB || in.op == TG_KIR_MUL || in.op == TG_KIR_NEG)) {
      // vector wrap-around: reinterpret as unsigned lanes (no promotion for vectors), then back
      const std::string t = type_of(i), u = vector_type(src_dtype + 4, in.vcount);
      const auto as_u = [&](const std::string& x) { return cat("as_", u, "(", x, ")"); };
      if (in.op == TG_KIR_NEG) return cat("as_", t, "((", u, ")(0)-", as_u(srcs[0]), ")");
      const char* sym = in.op == TG_KIR_ADD ? "+" : in.op == TG_KIR_SUB ? "-" : "*";
      return cat("as_", t, "(", as_u(srcs[0]), sym, as_u(srcs[1]), ")");
    }
    const uint64_t whole = op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) |
                           op_bit(TG_KIR_FDIV) | op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) |
                           op_bit(TG_KIR_MULACC) | op_bit(TG_KIR_FMA);
    const bool vector_whole = (whole & op_bit(in.op)) && !sdk::is_signed_int(src_dtype) &&
                              !(in.op == TG_KIR_MULACC && sdk::is_int(src_dtype));
    const std::string tmpl = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1 || vector_whole) return sdk::fill(tmpl, srcs);
    std::vector<std::string> lanes;
    for (uint32_t lane = 0; lane < in.vcount; ++lane) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < in.nsrc; ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], lane));
      lanes.push_back(sdk::fill(tmpl, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }

  bool is_small_storage(uint32_t dtype) const {
    return dtype == TG_DTYPE_BFLOAT16 || (dtype == TG_DTYPE_FLOAT16 && !f_.fp16);
  }

  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    const bool special = to == TG_DTYPE_BOOL || from == TG_DTYPE_BOOL || is_small_storage(to) || is_small_storage(from);
    if (vcount > 1 && !special) return cat("convert_", type(to, vcount), "(", x, ")");
    if (vcount > 1) {
      std::vector<std::string> lanes;
      for (uint32_t lane = 0; lane < vcount; ++lane) lanes.push_back(cast(to, 1, from, gep(x, lane)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    std::string wide = x;
    if (is_small_storage(from)) {
      use_helper("small", kSmallFloatHelpers);
      wide = cat(from == TG_DTYPE_FLOAT16 ? "tg_half_to_float(" : "tg_bf16_to_float(", x, ")");
    }
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (is_small_storage(to)) {
      use_helper("small", kSmallFloatHelpers);
      const int ebits = to == TG_DTYPE_FLOAT16 ? 5 : 8, mbits = to == TG_DTYPE_FLOAT16 ? 10 : 7;
      if (f_.fp64) {
        use_helper("double", kSmallFloatFromDouble);
        return cat("((ushort)tg_round_from_double((double)(", wide, "), ", ebits, ", ", mbits, "))");
      }
      return cat("((ushort)tg_round_from_float((float)(", wide, "), ", ebits, ", ", mbits, "))");
    }
    return cat("((", scalar_type(to), ")(", wide, "))");
  }

  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    return cat("as_", type(to, vcount), "(", x, ")");
  }
  std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) override {
    std::string out = cat("((", type(dtype, vcount), ")(");
    for (size_t k = 0; k < lanes.size(); ++k) out += (k ? "," : "") + lanes[k];
    return out + "))";
  }
  std::string gep(const std::string& x, uint32_t lane) override {
    return cat(x, ".s", static_cast<char>(lane < 10 ? '0' + lane : 'a' + lane - 10));
  }

  // Image parameters: a 4-lane load at an index known to be a multiple of 4 is one texel; anything else reads each
  // element's texel and picks its lane (still through the texture cache).
  std::string image_load(const Access& a) override {
    if (a.dtype != TG_DTYPE_FLOAT32) throw Error(TG_ERR_INVALID_ARGUMENT, cat(a.ptr, ": images hold float32"));
    if (a.vcount == 4 && a.index_multiple != 0 && a.index_multiple % 4 == 0)
      return cat("tg_texel(", a.ptr, ", (long)(", a.index, "), ", a.image_width, ")");
    if (a.vcount == 1) return cat("tg_image_elem(", a.ptr, ", (long)(", a.index, "), ", a.image_width, ")");
    std::vector<std::string> lanes;
    for (uint32_t l = 0; l < a.vcount; ++l)
      lanes.push_back(cat("tg_image_elem(", a.ptr, ", (long)(", a.index, ")+", l, ", ", a.image_width, ")"));
    return vectorize(a.dtype, a.vcount, lanes);
  }

  // Vector accesses into scalar memory use vloadN/vstoreN, which need only element alignment.
  std::string load_expr(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    return cat("vload", a.vcount, "(0, ", a.ptr, "+", a.index, ")");
  }
  std::string store_statement(const Access& a, const std::string& value) override {
    if (a.vcount == a.ptr_vcount) return cat(CRenderer::lvalue(a), " = ", value, ";");
    return cat("vstore", a.vcount, "(", value, ", 0, ", a.ptr, "+", a.index, ");");
  }

  // 64-bit literals take L (OpenCL's long is 64 bits; it has no long long).
  std::string int_literal(uint32_t dtype, int64_t value) override {
    if (dtype == TG_DTYPE_UINT64) return cat(static_cast<uint64_t>(value), "UL");
    if (dtype != TG_DTYPE_INT64) return CRenderer::int_literal(dtype, value);
    if (value == INT64_MIN) return "(-9223372036854775807L-1)";
    return value < 0 ? cat("(", value, "L)") : cat(value, "L");
  }
  std::string small_float_literal(uint32_t dtype, double value) {
    const uint16_t bits = dtype == TG_DTYPE_FLOAT16 ? round_small_float(value, 5, 10) : round_small_float(value, 8, 7);
    return is_small_storage(dtype) ? cat("((ushort)", bits, ")") : cat("as_half((ushort)", bits, ")");
  }
  std::string float_literal(uint32_t dtype, double value) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return small_float_literal(dtype, value);
    return CRenderer::float_literal(dtype, value);
  }
  std::string inf_literal(uint32_t dtype, bool negative) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16)
      return small_float_literal(dtype, negative ? -INFINITY : INFINITY);
    return CRenderer::inf_literal(dtype, negative);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return small_float_literal(dtype, NAN);
    return CRenderer::nan_literal(dtype);
  }

 private:
  void use_helper(const std::string& key, const char* text) { use_helper(key, std::string(text)); }
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  Features f_;
  std::vector<std::string> helpers_;  // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
};

Features features_of(const Device& device) {
  Features f;
  f.fp16 = device.has_fp16;
  f.fp64 = device.has_fp64;
  f.int64 = device.has_int64;
  f.max_params = static_cast<uint32_t>(std::min<size_t>(device.max_param_bytes / 8, 4096));
  for (int d = 0; d < 3; ++d)
    f.max_local[d] = static_cast<uint32_t>(std::min<size_t>(device.max_work_item_sizes[d], UINT32_MAX));
  f.max_local_threads = static_cast<uint32_t>(std::min<size_t>(device.max_work_group_size, UINT32_MAX));
  f.local_mem_bytes = device.local_mem_bytes;
  f.image_max_width = device.image_max_width;
  f.image_max_height = device.image_max_height;
  const char* emulate = std::getenv("QCOM_EMULATE_TENSOR_CORES");
  f.emulate_tensor_cores = emulate != nullptr && std::string(emulate) == "1";
  return f;
}

}  // namespace
}  // namespace tg::qcom

struct tg_renderer_s {
  std::shared_ptr<tg::qcom::Device> device;
  tg::qcom::Features features;
  tg::qcom::OpenClRenderer renderer;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::qcom {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none, or CL (alias OPENCL).
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "qcom";
  static constexpr std::string_view device_label = "QCOM";
  static constexpr std::string_view targets = "CL (alias OPENCL)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "CL" || upper == "OPENCL"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    auto dev = device_of(device);
    const Features f = features_of(*dev);
    return std::unique_ptr<Renderer>(new Renderer{std::move(dev), f, OpenClRenderer(f), {}});
  }
  static tg_renderer_caps caps(const Renderer& renderer) { return caps_of(renderer.features); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::qcom

template struct tg::sdk::RendererSlots<tg::qcom::RendererHooks>;
