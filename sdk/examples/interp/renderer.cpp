// The INTERP plugin's Renderer: checks a KIR kernel (the same checks program_create makes, so errors surface at
// render time with the instruction named) and returns its text dump as the "source"; and the capabilities that
// tell the core what INTERP takes.
#include "interp_plugin.hpp"
#include "tg/sdk/op_sets.hpp"

namespace tg::interp {
namespace {

using sdk::op_bit;

// The standard op sets, exactly the CPU's: the core then sends both devices the same kernels (the same
// polynomials for EXP2/LOG2/SIN), so INTERP stays a bit-exact reference for CPU kernels.
uint64_t ops_of(uint32_t dtype) { return sdk::standard_ops(dtype); }

}  // namespace

tg_renderer_caps interp_caps() {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    // the reference for the byte dot product and the byte table lookup
    caps.ops[d] = ops_of(d) | (d == TG_DTYPE_INT32 ? op_bit(TG_KIR_DOT4) | op_bit(TG_KIR_LUT16) : 0);
    // bit n = n lanes. Bools stay scalar, as on the CPU.
    caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16);
  }
  caps.has_local = 0;    // no DEFINE_LOCAL or BARRIER
  caps.has_threads = 0;  // work-items run one after another on the submitting thread
  caps.max_global_dims = 1;
  caps.max_global[0] = UINT32_MAX;
  caps.max_global[1] = caps.max_global[2] = 1;
  caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1;
  caps.max_local_threads = 1;
  caps.local_mem_bytes = 0;
  caps.max_params = 256;
  caps.packed_loads = sdk::kPackableDtypes;  // memcpy reads any alignment
  return caps;
}

}  // namespace tg::interp

struct tg_renderer_s {
  std::shared_ptr<tg::interp::Device> device;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::interp {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none given, or KIR by name.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "interp";
  static constexpr std::string_view device_label = "INTERP";
  static constexpr std::string_view targets = "KIR";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "KIR"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{device_of(device), {}});
  }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return interp_caps(); }
  static std::string render(Renderer& /*renderer*/, const tg_kir_kernel& kernel) {
    decode(kernel);  // refuse here what program_create would refuse, while the core still knows the kernel
    return kir_to_text(kernel);
  }
};

}  // namespace tg::interp

template struct tg::sdk::RendererSlots<tg::interp::RendererHooks>;
