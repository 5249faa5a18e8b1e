// The METAL plugin's Renderer: KIR -> Metal Shading Language 3.1, one `kernel void` per KIR kernel with buffers
// and variables in [[buffer(n)]] slots, work-item ids from [[thread_position_in_grid]] and its kin, threadgroup
// memory, threadgroup_barrier, float4-style vectors and simdgroup_multiply_accumulate as tensor cores; and the
// capabilities. Neither needs a device. Metal has no double, so float64 is not claimed; bfloat16 is MSL 3.1's
// bfloat, as storage (the core computes on it in float32), and is converted through float.
#include "metal_plugin.hpp"

#include <tg/sdk/gpu_c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/tensor_cores.hpp>

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

class MslRenderer final : public sdk::GpuCRenderer {
 protected:
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "METAL"; }
  void begin_kernel(const tg_kir_kernel& kernel) override {
    hoisted_.clear();
    reject_float64(kernel);
  }

  // ---- MSL's spellings of GpuCRenderer's hooks ---------------------------------------------------------------
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
  std::string bitcast(uint32_t to, uint32_t vcount, uint32_t /*from*/, const std::string& x) override {
    return cat("as_type<", type(to, vcount), ">(", x, ")");
  }
  // Conversions of vectors are MSL's constructors (float4(int4) converts each lane); bfloat converts through float.
  std::string vector_convert(uint32_t to, uint32_t vcount, const std::string& x) override {
    return cat(vector_type(to, vcount), "(", x, ")");
  }
  bool converts_through_float(uint32_t dtype) override { return dtype == TG_DTYPE_BFLOAT16; }
  bool is_bits_storage(uint32_t /*dtype*/) override { return false; }  // half and bfloat are MSL types
  bool has_float64() override { return false; }
  bool has_vector_arithmetic() override { return true; }
  bool long_is_64_bits() override { return true; }
  const char* float_call(uint32_t op, bool /*f32*/) override {
    return op == TG_KIR_SQRT ? "precise::sqrt({0})" : nullptr;
  }

  std::string source_header() override {
    return cat("// tg METAL kernel ", kernel().name, ": Metal Shading Language 3.1\n",
               "#include <metal_stdlib>\nusing namespace metal;\n");
  }
  std::string kernel_qualifier() override { return "kernel"; }
  std::string helper_qualifier() override { return "static inline"; }
  // Buffers and variables take [[buffer(n)]] slots in signature order (variables as `constant T&`, which the host
  // sets with setBytes); the work-item ids are Metal's attributes, named so no parameter can take their names.
  std::string param_decl(uint32_t p) override {
    const tg_kir_param& param = kernel().params[p];
    if (param.kind == TG_PARAM_IMAGE)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": parameter ", p, " is an image; METAL reads none"));
    const std::string decl = param.kind == TG_PARAM_BUFFER
                                 ? cat("device ", param.writable ? "" : "const ", scalar_type(param.dtype), "* ")
                                 : cat("constant ", scalar_type(param.dtype), "& ");
    return cat(decl, param_name(p), " [[buffer(", p, ")]]");
  }
  std::vector<std::string> implicit_params() override {
    std::vector<std::string> ids = {"uint3 gid [[threadgroup_position_in_grid]]",
                                    "uint3 lid [[thread_position_in_threadgroup]]"};
    if (uses_special(TG_SPECIAL_GLOBAL)) ids.push_back("uint3 tid [[thread_position_in_grid]]");
    return ids;
  }
  std::string group_id(uint32_t dim) override { return cat("gid.", axis(dim)); }
  std::string local_id(uint32_t dim) override { return cat("lid.", axis(dim)); }
  std::string group_size(uint32_t dim) override {
    throw Error(TG_ERR_INTERNAL, cat("kernel ", kernel().name, ": MSL's global ids are tid.", axis(dim)));
  }
  std::string global_id(uint32_t dim) override { return cat("tid.", axis(dim)); }
  std::string barrier() override { return "threadgroup_barrier(mem_flags::mem_threadgroup);"; }

  // Threadgroup arrays are declared first: Metal allocates them per threadgroup for the whole kernel, so they
  // belong at its outermost scope.
  void emit_prologue() override {
    GpuCRenderer::emit_prologue();
    const tg_kir_kernel& k = kernel();
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
  // A wide vector access names its address space: device memory or a threadgroup array.
  std::string lvalue(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    const char* space = a.addrspace == TG_ADDR_LOCAL ? "threadgroup" : "device";
    return cat("(*((", space, " ", type(a.dtype, a.vcount), "*)(", a.ptr, "+", a.index, ")))");
  }

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
    static const char* const words[] = {"kernel",   "vertex",      "fragment", "device",
                                        "constant", "threadgroup", "thread",   "threadgroup_imageblock",
                                        "ray_data", "object_data", "metal",    "precise",
                                        "fast",     "gid",         "lid",      "tid",
                                        "uchar",    "ushort",      "uint",     "ulong",
                                        "bfloat",   "as_type",     "mem_flags"};
    if (GpuCRenderer::is_reserved_name(name)) return true;
    for (const char* word : words)
      if (name == word) return true;
    static const char* const prefixes[] = {"simdgroup", "threadgroup_", "char",  "short", "int",    "long",  "uchar",
                                           "ushort",    "uint",         "ulong", "half",  "bfloat", "float", "bool"};
    for (const char* prefix : prefixes)
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
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
