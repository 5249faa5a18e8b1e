// The NV plugin's Renderer: KIR -> CUDA C++ for NVRTC, needing no header: one `extern "C" __global__` function per
// kernel with global dim 0 spread over blocks of threads, shared memory, __syncthreads and mma.sync tensor cores; the
// CUDA-style rest (tg_vec vectors, float16/bfloat16 as unsigned short bits with exact conversion helpers, wrapping
// signed arithmetic, division helpers) is shared with AMD through tg::sdk::GpuCRenderer. The capabilities need no GPU.
#include "nv_plugin.hpp"

#include <tg/sdk/gpu_c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/tensor_cores.hpp>

#include <cstdlib>

namespace tg::nv {
namespace {

using sdk::cat;
using sdk::Error;

// The tensor cores of sm_80 and newer: mma.sync m16n8k16 with float16 or bfloat16 inputs, float32 accumulators.
const tg_tensor_core kTensorCores[] = {sdk::mma_m16n8k16(TG_DTYPE_FLOAT16), sdk::mma_m16n8k16(TG_DTYPE_BFLOAT16)};

// The SM number of an arch like sm_90 or sm_90a (0 when it is not one).
int sm_number(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0; }

// Vectors of 2 and 4 lanes up to 16 bytes (tg_vec, aligned to its size): loads and stores at indices known to be
// multiples of the lanes are single 8- or 16-byte accesses (buffers are 256-byte aligned), the others go lane by
// lane, and so does vector arithmetic (NVRTC has none to offer; the point is the wide memory access).
tg_renderer_caps nv_caps(const std::string& arch) {
  tg_renderer_caps caps = sdk::GpuCRenderer::preset_caps("cuda");
  // the limits every CUDA device since sm_30 has: blocks of 1024 x 1024 x 64 threads, 48 KiB of static shared memory
  caps.max_local[0] = caps.max_local[1] = 1024;
  caps.max_local[2] = 64;
  caps.local_mem_bytes = 48 * 1024;
  if (sm_number(arch) >= 80) {
    caps.tensor_cores = kTensorCores;
    caps.ntensor_cores = sizeof kTensorCores / sizeof kTensorCores[0];
  }
  return caps;
}

class CudaRenderer final : public sdk::GpuCRenderer {
 protected:
  std::string kernel_qualifier() override { return "extern \"C\" __global__"; }
  std::string helper_qualifier() override { return "__device__ static inline"; }
  std::string group_id(uint32_t dim) override { return cat("blockIdx.", axis(dim)); }
  std::string local_id(uint32_t dim) override { return cat("threadIdx.", axis(dim)); }
  std::string group_size(uint32_t dim) override { return cat("blockDim.", axis(dim)); }
  std::string f32_from_bits(const std::string& u32) override { return cat("__uint_as_float(", u32, ")"); }
  std::string f32_bits(const std::string& f32) override { return cat("__float_as_uint(", f32, ")"); }
  std::string f64_from_bits(const std::string& u64) override { return cat("__longlong_as_double(", u64, ")"); }
  std::string f64_bits(const std::string& f64) override { return cat("__double_as_longlong(", f64, ")"); }
  // CUDA's math functions are correctly rounded here (NVRTC's defaults: -prec-sqrt=true, no -use_fast_math).
  const char* float_call(uint32_t op, bool f32) override {
    if (op == TG_KIR_SQRT) return f32 ? "sqrtf({0})" : "sqrt({0})";
    if (op == TG_KIR_TRUNC) return f32 ? "truncf({0})" : "trunc({0})";
    if (op == TG_KIR_FMA) return f32 ? "__fmaf_rn({0},{1},{2})" : "__fma_rn({0},{1},{2})";
    return nullptr;
  }
  std::string source_header() override {
    return cat("/* tg NV kernel ", kernel().name, ": CUDA C++ for NVRTC, no headers */\n");
  }
  std::string renderer_name() override { return "NV"; }
  bool casts_lanes(uint32_t dtype) override { return tg_dtype_size(dtype) < 4; }

  std::string barrier() override { return "__syncthreads();"; }
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat("__shared__ alignas(16) ", type, " ", name, "[", count, "];");  // 16: room for aligned vector access
  }

  // mma.sync m16n8k16: A's 8 and B's 4 16-bit lanes go in pairs into 32-bit registers (lower lane in the low
  // half), C and D are 4 floats (PTX ISA, "Matrix Fragments for mma.m16n8k16").
  std::string wmma(uint32_t i, const std::vector<std::string>& abc) override {
    const tg_tensor_core& tc = wmma_unit(i, kTensorCores, sizeof kTensorCores / sizeof kTensorCores[0], "");
    check_wmma_fragments(i, tc, 8, 4, 4, "WMMA m16n8k16");
    const std::string t = tc.dtype_in == TG_DTYPE_FLOAT16 ? "f16" : "bf16";
    vector_type(TG_DTYPE_FLOAT32, 4);
    use_helper(
        "mma_" + t,
        cat("__device__ static inline tg_vec<float,4> tg_mma_", t,
            "(tg_vec<unsigned short,8> a, tg_vec<unsigned short,4> b,"
            " tg_vec<float,4> c) {\n"
            "  unsigned int ra[4], rb[2];\n"
            "  for (int i = 0; i < 4; ++i) ra[i] = (unsigned int)a.v[2 * i] | ((unsigned int)a.v[2 * i + 1] << 16);\n"
            "  for (int i = 0; i < 2; ++i) rb[i] = (unsigned int)b.v[2 * i] | ((unsigned int)b.v[2 * i + 1] << 16);\n"
            "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.",
            t, ".", t,
            ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\"\n"
            "      : \"+f\"(c.v[0]), \"+f\"(c.v[1]), \"+f\"(c.v[2]), \"+f\"(c.v[3])\n"
            "      : \"r\"(ra[0]), \"r\"(ra[1]), \"r\"(ra[2]), \"r\"(ra[3]), \"r\"(rb[0]), \"r\"(rb[1]));\n"
            "  return c;\n}\n"));
    return cat("tg_mma_", t, "(", abc[0], ",", abc[1], ",", abc[2], ")");
  }
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
