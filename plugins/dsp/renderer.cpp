// The DSP plugin's Renderer: KIR -> freestanding C for clang's hexagon target (hexagonv67, 128-byte HVX), one function
// per kernel that runs a range of work-items, plus the entry the mock runtime calls; and the capabilities.
//
// What Hexagon changes against a host C renderer: pointers are 32 bits (a buffer's 8-byte address is truncated on
// unpacking); clang has no _Float16 or __bf16 for hexagonv67, so both 16-bit floats are bit patterns (unsigned
// short) converted by the runtime's helpers; float64 FMA is not claimed (it would need a soft fma); and scalar
// loads must be aligned, so any access that may not be goes through a type aligned like its element (or bytes).
#include "dsp_plugin.hpp"

#include <tg/sdk/clang_vector_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>

#include <string_view>

namespace tg::dsp {
namespace {

using sdk::cat;
using sdk::op_bit;

// The standard op sets, except float64 FMA: Hexagon has a fused float32 multiply-add (sffma) but float64's would
// be a libcall (fma) the freestanding runtime does not have; the core uses MULACC there instead.
uint64_t ops_of(uint32_t dtype) {
  const uint64_t ops = sdk::standard_ops(dtype);
  return dtype == TG_DTYPE_FLOAT64 ? ops & ~op_bit(TG_KIR_FMA) : ops;
}

// Lanes per dtype: 2..16 (the caps' mask stops at 31 lanes, so a whole 128-byte HVX register of 32 floats cannot be
// claimed; 16 x float32 is half of one). bool stays scalar: clang's hexagon backend cannot pass bool vectors.
constexpr uint32_t kLanes = (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16);

tg_renderer_caps dsp_caps() {
  tg_renderer_caps caps = sdk::ClangVectorRenderer::preset_caps(kLanes);
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) caps.ops[d] = ops_of(d);
  // packed loads read through byte-aligned types: clang splits what Hexagon cannot load
  return caps;
}

// The runtime's conversions (runtime/dsp_libcalls.c), declared for the kernels that use 16-bit floats.
const char* const kHalfDecls =
    "float tg_dsp_f16_to_f32(unsigned short);\nfloat tg_dsp_bf16_to_f32(unsigned short);\n"
    "unsigned short tg_dsp_f64_to_f16(double);\nunsigned short tg_dsp_f64_to_bf16(double);\n";

class DspRenderer final : public sdk::ClangVectorRenderer {
 public:
  std::string render_kernel(const tg_kir_kernel& kernel) {
    std::string source = ClangVectorRenderer::render_kernel(kernel);
    // the mock runtime calls tg_dsp_kernel (a kernel of that very name is the entry itself)
    if (std::string_view(kernel.name) != "tg_dsp_kernel")
      source += cat("void tg_dsp_kernel(const unsigned char* args, long long gidx0_start, long long gidx0_end) { ",
                    kernel.name, "(args, gidx0_start, gidx0_end); }\n");
    return source;
  }

 protected:
  // The base refuses an ALU op the caps do not claim, naming this renderer.
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "DSP"; }

  std::string preamble_comment() override {
    return cat("/* tg DSP kernel ", kernel().name, ": freestanding C for clang --target=hexagon -mcpu=", kArch,
               " -mhvx -mhvx-length=128b -O1 */\n");
  }
  std::string small_float_typedefs() override {
    return "typedef unsigned short half;     /* float16 bits: no _Float16 on hexagonv67 */\n"
           "typedef unsigned short bfloat16; /* bfloat16 bits */\n";
  }
  const SmallFloatCalls& small_float_calls() override {
    static const SmallFloatCalls calls{"tg_dsp_f16_to_f32", "tg_dsp_bf16_to_f32", "tg_dsp_f64_to_f16",
                                       "tg_dsp_f64_to_bf16", kHalfDecls};
    return calls;
  }
  // a buffer's 64-bit address holds a 32-bit Hexagon pointer
  unsigned pointer_bits() override { return 32; }

  // float MAX propagates NaN (a + b is NaN when either is), which `a > b ? a : b` does not. The comparison is on
  // integer keys (the bits, negative values' magnitudes flipped, so -0 < +0): written as float selects, clang's
  // hexagon backend turns the whole helper into one sfmax, which returns the number, not the NaN (LLVM 19).
  std::string float_max_helper(uint32_t dtype, const std::string& t, const std::string& name) override {
    const bool wide = dtype == TG_DTYPE_FLOAT64;
    const std::string it = wide ? "long long" : "int", flip = wide ? "0x7fffffffffffffffLL" : "0x7fffffff";
    return cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t, " b) {\n", "  const ", it,
               " ia = __builtin_bit_cast(", it, ", a), ib = __builtin_bit_cast(", it, ", b);\n", "  const ", it,
               " ka = ia < 0 ? ia ^ ", flip, " : ia, kb = ib < 0 ? ib ^ ", flip, " : ib;\n",
               "  return (a != a || b != b) ? a + b : (ka > kb ? a : b);\n}\n");
  }
};

}  // namespace
}  // namespace tg::dsp

struct tg_renderer_s {
  std::shared_ptr<tg::dsp::Device> device;
  tg::dsp::DspRenderer renderer;
  std::string source;
};

namespace tg::dsp {

struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "dsp";
  static constexpr std::string_view device_label = "DSP";
  static constexpr std::string_view targets = "C (Hexagon C with HVX)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C" || upper == "HEXAGON"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{device_of(device), {}, {}});
  }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return dsp_caps(); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::dsp

template struct tg::sdk::RendererSlots<tg::dsp::RendererHooks>;
