// The QCOM plugin's Renderer: KIR -> OpenCL C 1.2, one __kernel per KIR kernel: OpenCL's spellings of
// sdk::GpuCRenderer (native vectors with vloadN/vstoreN, as_T and convert_T, half with cl_khr_fp16, image2d reads,
// emulated tensor cores); and the capabilities, which follow what the opened device reports (fp16, fp64, int64).
#include "qcom_plugin.hpp"

#include <tg/sdk/gpu_c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/tensor_cores.hpp>

#include <algorithm>

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

class OpenClRenderer final : public sdk::GpuCRenderer {
 public:
  explicit OpenClRenderer(const Features& features) : f_(features) {}

 protected:
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(f_, dtype); }
  std::string renderer_name() override { return "QCOM"; }

  // ---- OpenCL C's spellings of GpuCRenderer's hooks ----------------------------------------------------------
  // float16 is `half` with cl_khr_fp16, else ushort bits like bfloat16. bool in memory is uchar (OpenCL allows no
  // bool pointers or arguments in a kernel's signature).
  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool", "char",  "short", "int",    "long",  "uchar", "ushort",
                                                      "uint", "ulong", "half",  "ushort", "float", "double"};
    return dtype == TG_DTYPE_FLOAT16 && !f_.fp16 ? "ushort" : names[dtype];
  }
  std::string memory_type(uint32_t dtype) { return dtype == TG_DTYPE_BOOL ? "uchar" : scalar_type(dtype); }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override { return cat(scalar_type(dtype), vcount); }
  std::string vectorize(uint32_t dtype, uint32_t vcount, const std::vector<std::string>& lanes) override {
    std::string out = cat("((", type(dtype, vcount), ")(");
    for (size_t k = 0; k < lanes.size(); ++k) out += (k ? "," : "") + lanes[k];
    return out + "))";
  }
  std::string gep(const std::string& x, uint32_t lane) override {
    return cat(x, ".s", static_cast<char>(lane < 10 ? '0' + lane : 'a' + lane - 10));
  }
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t /*from*/, const std::string& x) override {
    return cat("as_", type(to, vcount), "(", x, ")");
  }
  std::string vector_convert(uint32_t to, uint32_t vcount, const std::string& x) override {
    return cat("convert_", type(to, vcount), "(", x, ")");
  }
  bool has_vector_arithmetic() override { return true; }
  bool is_bits_storage(uint32_t dtype) override {
    return dtype == TG_DTYPE_BFLOAT16 || (dtype == TG_DTYPE_FLOAT16 && !f_.fp16);
  }
  bool has_float64() override { return f_.fp64; }
  bool long_is_64_bits() override { return true; }

  std::string source_header() override {
    std::string out = cat("/* tg QCOM kernel ", kernel().name, ": OpenCL C 1.2 */\n",
                          // a*b+c stays two roundings: results must not depend on whether the core sent MULACC
                          "#pragma OPENCL FP_CONTRACT OFF\n");
    // the header comes before the signature: enable what the device has rather than what the body used
    if (f_.fp64) out += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    if (f_.fp16) out += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
    return out;
  }
  std::string kernel_qualifier() override { return "__kernel"; }
  std::string helper_qualifier() override { return "static inline"; }
  std::string param_decl(uint32_t p) override {
    const tg_kir_param& param = kernel().params[p];
    if (param.kind == TG_PARAM_IMAGE) return cat("read_only image2d_t ", param_name(p));
    if (param.kind == TG_PARAM_BUFFER)
      return cat("__global ", param.writable ? "" : "const ", memory_type(param.dtype), "* ", param_name(p));
    return cat(memory_type(param.dtype), " ", param_name(p));
  }
  std::string group_id(uint32_t dim) override { return cat("get_group_id(", dim, ")"); }
  std::string local_id(uint32_t dim) override { return cat("get_local_id(", dim, ")"); }
  std::string group_size(uint32_t dim) override { return cat("get_local_size(", dim, ")"); }
  std::string global_id(uint32_t dim) override { return cat("get_global_id(", dim, ")"); }
  std::string barrier() override { return "barrier(CLK_LOCAL_MEM_FENCE);"; }
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat("__local ", type, " ", name, "[", count, "];");
  }

  void emit_prologue() override {
    GpuCRenderer::emit_prologue();
    const tg_kir_kernel& k = kernel();
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

  // Image parameters: a 4-lane load at an index known to be a multiple of 4 is one texel; anything else reads each
  // element's texel and picks its lane (still through the texture cache).
  std::string image_load(const Access& a) override {
    if (a.dtype != TG_DTYPE_FLOAT32) throw Error(TG_ERR_INVALID_ARGUMENT, cat(a.ptr, ": images hold float32"));
    use_helper("image", kImageHelpers);
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

  bool is_reserved_name(const std::string& name) override {
    static const char* const words[] = {
        "kernel", "global",    "local",     "constant", "private", "read_only", "write_only", "read_write", "uniform",
        "pipe",   "image2d_t", "sampler_t", "event_t",  "size_t",  "ptrdiff_t", "intptr_t",   "uintptr_t",  "uchar",
        "ushort", "uint",      "ulong",     "max",      "min",     "barrier",   "exp2",       "log2",       "sin",
        "sqrt",   "trunc",     "select",    "isnan",    "fmax",    "fmin",      "NAN",        "INFINITY"};
    if (GpuCRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    static const char* const prefixes[] = {"get_", "vload", "vstore", "as_",  "convert_", "char",  "short",  "int",
                                           "long", "uchar", "ushort", "uint", "ulong",    "float", "double", "half"};
    for (const char* prefix : prefixes)
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  }

 private:
  Features f_;
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
