// The AMD plugin's Renderer: KIR -> HIP-flavoured C++ for clang's AMDGPU backend, needing no header and no device
// library: one `extern "C"` amdgpu_kernel per kernel (its kernarg segment is the packed argument blob: 8-byte buffer
// addresses, variables at their natural alignment, in signature order), work-item ids from the amdgcn builtins,
// work-group memory in LDS (address space 3), and the CUDA-style rest shared with NV through tg::sdk::GpuCRenderer.
// The capabilities need no GPU: the arch (the device's, or AMD_ARCH's) decides the wave size.
#include "amd_plugin.hpp"

#include <tg/sdk/gpu_c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/tensor_cores.hpp>

#include <tuple>
#include <utility>

namespace tg::amd {
namespace {

using sdk::cat;
using sdk::Error;

// The matrix units, as the ABI's bit maps (tg_tensor_core): coordinate bit i of an element comes from lane bit L(b)
// or fragment-element bit E(b). Layouts from AMD's documentation (GPUOpen "How to accelerate AI applications on
// RDNA 3 using WMMA" and the AMD lab notes on matrix cores, with the CDNA3 ISA guide).
constexpr uint8_t L(int b) { return TG_TC_LANE(b); }
constexpr uint8_t E(int b) { return TG_TC_ELEM(b); }

// RDNA3 v_wmma_f32_16x16x16_{f16,bf16}, wave32: lane l holds row l % 16 of A (all 16 k) and column l % 16 of B (all
// 16 k) -- lanes 16-31 hold the same A and B as lanes 0-15, which lane bit 4 appearing in neither map says -- and
// C/D[2e + l / 16][l % 16] for e = 0..7.
tg_tensor_core rdna3_wmma(uint32_t dtype_in) {
  // clang-format off: the shape, then one bit map a row
  return tg_tensor_core{sizeof(tg_tensor_core), 16, 16, 16, dtype_in, TG_DTYPE_FLOAT32, 32,
                        {L(0), L(1), L(2), L(3), E(0), E(1), E(2), E(3)},
                        {E(0), E(1), E(2), E(3), L(0), L(1), L(2), L(3)},
                        {L(4), E(0), E(1), E(2), L(0), L(1), L(2), L(3)}};
  // clang-format on
}
// CDNA3 v_mfma_f32_16x16x16_f16 / _bf16 (the _1k form), wave64: A[l % 16][4 (l / 16) + e], B[4 (l / 16) + e][l % 16],
// C/D[4 (l / 16) + e][l % 16] for e = 0..3.
tg_tensor_core cdna3_mfma(uint32_t dtype_in) {
  // clang-format off: the shape, then one bit map a row
  return tg_tensor_core{sizeof(tg_tensor_core), 16, 16, 16, dtype_in, TG_DTYPE_FLOAT32, 64,
                        {L(0), L(1), L(2), L(3), E(0), E(1), L(4), L(5)},
                        {E(0), E(1), L(4), L(5), L(0), L(1), L(2), L(3)},
                        {E(0), E(1), L(4), L(5), L(0), L(1), L(2), L(3)}};
  // clang-format on
}
const tg_tensor_core kRdna3[] = {rdna3_wmma(TG_DTYPE_FLOAT16), rdna3_wmma(TG_DTYPE_BFLOAT16)};
const tg_tensor_core kCdna3[] = {cdna3_mfma(TG_DTYPE_FLOAT16), cdna3_mfma(TG_DTYPE_BFLOAT16)};

bool is_rdna3(const std::string& arch) { return arch.rfind("gfx11", 0) == 0 && arch.size() == 7; }
bool is_cdna3(const std::string& arch) { return arch == "gfx940" || arch == "gfx941" || arch == "gfx942"; }

// The tensor cores of an arch (two: float16 and bfloat16 inputs, float32 accumulators), or none.
std::pair<const tg_tensor_core*, uint32_t> tensor_cores_of(const std::string& arch) {
  if (is_rdna3(arch)) return {kRdna3, 2};
  if (is_cdna3(arch)) return {kCdna3, 2};
  return {nullptr, 0};
}

// Vectors of 2 and 4 lanes up to 16 bytes (tg_vec, aligned to its size): loads and stores at indices known to be
// multiples of the lanes are single dwordx2/x4 accesses, the others go lane by lane. The limits every gfx9-gfx12
// part has: work-groups of up to 1024 work-items in each dim, 64 KiB of LDS per work-group, a grid of at most
// 2^32 - 1 work-items per dim (hwqueue_exec checks the product); kernel arguments up to 4 KiB.
tg_renderer_caps amd_caps(const std::string& arch) {
  tg_renderer_caps caps = sdk::GpuCRenderer::preset_caps("hip");
  caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1024;
  caps.local_mem_bytes = 64 * 1024;
  std::tie(caps.tensor_cores, caps.ntensor_cores) = tensor_cores_of(arch);
  return caps;
}

class HipRenderer final : public sdk::GpuCRenderer {
 public:
  explicit HipRenderer(std::string arch) : arch_(std::move(arch)) {}

 protected:
  std::string kernel_qualifier() override {
    return "extern \"C\" __attribute__((amdgpu_kernel, visibility(\"default\")))";
  }
  std::string helper_qualifier() override { return "static inline"; }
  std::string group_id(uint32_t dim) override { return cat("__builtin_amdgcn_workgroup_id_", axis(dim), "()"); }
  std::string local_id(uint32_t dim) override { return cat("__builtin_amdgcn_workitem_id_", axis(dim), "()"); }
  // The work-group size from the dispatch packet (hsa_kernel_dispatch_packet_t: workgroup_size_x is the uint16 at
  // byte 4), not from the implicit kernel arguments, which would append hidden arguments to the kernarg segment.
  std::string group_size(uint32_t dim) override {
    use_helper(
        "group_size",
        "static inline unsigned int tg_group_size(int d) {\n"
        "  return ((const __attribute__((address_space(4))) unsigned short*)__builtin_amdgcn_dispatch_ptr())[2 + d];\n"
        "}\n");
    return cat("tg_group_size(", dim, ")");
  }
  std::string f32_from_bits(const std::string& u32) override {
    return cat("__builtin_bit_cast(float, (unsigned int)(", u32, "))");
  }
  std::string f32_bits(const std::string& f32) override {
    return cat("__builtin_bit_cast(unsigned int, (float)(", f32, "))");
  }
  std::string renderer_name() override { return "AMD"; }
  std::string f64_from_bits(const std::string& u64) override {
    return cat("__builtin_bit_cast(double, (unsigned long long)(", u64, "))");
  }
  std::string f64_bits(const std::string& f64) override {
    return cat("__builtin_bit_cast(unsigned long long, (double)(", f64, "))");
  }
  // Clang's builtins become the LLVM intrinsics the backend expands correctly rounded (no fast-math flags, no
  // !fpmath metadata in plain C++); none of them needs the device libraries.
  const char* float_call(uint32_t op, bool f32) override {
    if (op == TG_KIR_SQRT) return f32 ? "__builtin_sqrtf({0})" : "__builtin_sqrt({0})";
    if (op == TG_KIR_TRUNC) return f32 ? "__builtin_truncf({0})" : "__builtin_trunc({0})";
    if (op == TG_KIR_FMA) return f32 ? "__builtin_fmaf({0},{1},{2})" : "__builtin_fma({0},{1},{2})";
    return nullptr;
  }
  std::string source_header() override {
    return cat("/* tg AMD kernel ", kernel().name, ": HIP-flavoured C++ for clang's AMDGPU backend (", arch_,
               "), no headers */\n");
  }

  // A work-group barrier that also orders LDS: release the stores before it, acquire the others' after it.
  std::string barrier() override {
    return "__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"workgroup\"); __builtin_amdgcn_s_barrier(); "
           "__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"workgroup\");";
  }
  // LDS is a static array in address space 3 (uninitialized: LDS has no initializer); the kernel reaches it through a
  // generic pointer, which LLVM's address-space inference turns back into ds_ instructions. 16-byte alignment
  // leaves room for aligned vector access.
  std::string local_decl(const std::string& type, const std::string& name, int64_t count) override {
    return cat("__attribute__((loader_uninitialized, aligned(16))) static __attribute__((address_space(3))) ", type,
               " ", name, "_lds[", count, "]; ", type, "* ", name, " = (", type, "*)", name, "_lds;");
  }

  // One WMMA (RDNA3) or MFMA (CDNA3) instruction: the fragments (tg_vec of 16-bit bits, tg_vec of floats) are
  // bit-cast to the clang vector types the builtins take.
  std::string wmma(uint32_t i, const std::vector<std::string>& abc) override {
    const auto [units, count] = tensor_cores_of(arch_);
    const tg_tensor_core& tc = wmma_unit(i, units, count, cat(" on ", arch_));
    const uint32_t na = sdk::tc_lanes(tc.a_map, 8), nc = sdk::tc_lanes(tc.c_map, 8);
    check_wmma_fragments(i, tc, na, na, nc, cat("the 16x16x16 unit on ", arch_));
    const bool half = tc.dtype_in == TG_DTYPE_FLOAT16;
    const std::string in_vec = cat(half ? "_Float16" : "short", " __attribute__((ext_vector_type(", na, ")))");
    const std::string acc_vec = cat("float __attribute__((ext_vector_type(", nc, ")))");
    const std::string name = cat("tg_mma_", half ? "f16" : "bf16");
    const std::string call =
        is_rdna3(arch_) ? cat("__builtin_amdgcn_wmma_f32_16x16x16_", half ? "f16" : "bf16", "_w32(ta, tb, tc)")
                        : cat("__builtin_amdgcn_mfma_f32_16x16x16", half ? "f16" : "bf16_1k", "(ta, tb, tc, 0, 0, 0)");
    const std::string frag_in = vector_type(tc.dtype_in, na), frag_acc = vector_type(TG_DTYPE_FLOAT32, nc);
    use_helper(name, cat("static inline ", frag_acc, " ", name, "(", frag_in, " a, ", frag_in, " b, ", frag_acc,
                         " c) {\n", "  typedef ", in_vec, " in_t;\n  typedef ", acc_vec, " acc_t;\n",
                         "  in_t ta = __builtin_bit_cast(in_t, a), tb = __builtin_bit_cast(in_t, b);\n",
                         "  acc_t tc = __builtin_bit_cast(acc_t, c);\n", "  return __builtin_bit_cast(", frag_acc, ", ",
                         call, ");\n}\n"));
    return cat(name, "(", abc[0], ",", abc[1], ",", abc[2], ")");
  }

 private:
  std::string arch_;
};

}  // namespace
}  // namespace tg::amd

struct tg_renderer_s {
  tg::amd::HipRenderer renderer;
  std::string source;
  std::string arch;  // the device's, or AMD_ARCH's
};

namespace tg::amd {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none, HIP or LLVM (optionally with ":<arch>", which
// the compiler's arch decides anyway). LLVM is not a renderer of its own: it names the same HIP C++, which LLVM
// compiles either way. The device may be NULL: rendering needs no GPU.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "amd";
  static constexpr std::string_view device_label = "AMD";
  static constexpr std::string_view targets = "HIP, LLVM";

  static bool is_target(std::string_view upper) {
    return upper.empty() || upper == "HIP" || upper == "LLVM" || upper.starts_with("HIP:") ||
           upper.starts_with("LLVM:");
  }
  static std::unique_ptr<Renderer> create(tg_device device) {
    const std::string arch = device ? device_of(device)->arch : base_arch(default_arch());
    return std::unique_ptr<Renderer>(new Renderer{HipRenderer(arch), {}, arch});
  }
  static tg_renderer_caps caps(const Renderer& renderer) { return amd_caps(renderer.arch); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::amd

template struct tg::sdk::RendererSlots<tg::amd::RendererHooks>;
