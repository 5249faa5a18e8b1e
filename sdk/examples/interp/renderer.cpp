// The INTERP plugin's Renderer: checks a KIR kernel (the same checks program_create makes, so errors surface at
// render time with the instruction named) and returns its text dump as the "source"; and the capabilities that
// tell the core what INTERP takes.
#include "interp_plugin.hpp"

#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cctype>

namespace tg::interp {
namespace {

using sdk::cat;
using sdk::Error;

constexpr uint64_t bit(uint32_t op) { return uint64_t{1} << op; }

// The ALU ops taken whole, per kind of dtype: exactly the CPU plugin's table, so the core decomposes every kernel
// the same way for both devices and their results can be compared value for value. float16/bfloat16 are storage
// types (the core computes on them in float32), so they only need casts.
constexpr uint64_t kIntOps = bit(TG_KIR_NEG) | bit(TG_KIR_ADD) | bit(TG_KIR_SUB) | bit(TG_KIR_MUL) | bit(TG_KIR_IDIV) |
                             bit(TG_KIR_MOD) | bit(TG_KIR_MAX) | bit(TG_KIR_CMPLT) | bit(TG_KIR_CMPNE) |
                             bit(TG_KIR_CMPEQ) | bit(TG_KIR_AND) | bit(TG_KIR_OR) | bit(TG_KIR_XOR) | bit(TG_KIR_SHL) |
                             bit(TG_KIR_SHR) | bit(TG_KIR_WHERE) | bit(TG_KIR_MULACC) | bit(TG_KIR_CAST) |
                             bit(TG_KIR_BITCAST);
constexpr uint64_t kBoolOps = bit(TG_KIR_AND) | bit(TG_KIR_OR) | bit(TG_KIR_XOR) | bit(TG_KIR_CMPNE) |
                              bit(TG_KIR_CMPEQ) | bit(TG_KIR_CMPLT) | bit(TG_KIR_WHERE) | bit(TG_KIR_CAST);
constexpr uint64_t kFloatOps = bit(TG_KIR_NEG) | bit(TG_KIR_ADD) | bit(TG_KIR_SUB) | bit(TG_KIR_MUL) |
                               bit(TG_KIR_FDIV) | bit(TG_KIR_MAX) | bit(TG_KIR_CMPLT) | bit(TG_KIR_CMPNE) |
                               bit(TG_KIR_CMPEQ) | bit(TG_KIR_SQRT) | bit(TG_KIR_RECIP) | bit(TG_KIR_TRUNC) |
                               bit(TG_KIR_WHERE) | bit(TG_KIR_MULACC) | bit(TG_KIR_CAST) | bit(TG_KIR_BITCAST) |
                               bit(TG_KIR_EXP2) | bit(TG_KIR_LOG2) | bit(TG_KIR_SIN);
constexpr uint64_t kStorageOps = bit(TG_KIR_CAST) | bit(TG_KIR_BITCAST);

uint64_t ops_of(uint32_t dtype) {
  if (dtype == TG_DTYPE_BOOL) return kBoolOps;
  if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return kStorageOps;
  return dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64 ? kFloatOps : kIntOps;
}

// Targets this renderer answers to: none given, or KIR by name.
bool is_known_target(const char* target) {
  std::string t = target ? target : "";
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return t.empty() || t == "KIR";
}

}  // namespace

tg_renderer_caps interp_caps() {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    caps.ops[d] = ops_of(d);
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
  return caps;
}

}  // namespace tg::interp

struct tg_renderer_s {
  std::shared_ptr<tg::interp::Device> device;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::interp {

tg_status_t renderer_create(tg_device device, const char* target, tg_renderer* out_renderer) {
  return sdk::guard("interp renderer_create", [&] {
    sdk::require(out_renderer, "out_renderer");
    auto dev = device_of(device);
    if (!is_known_target(target))
      throw sdk::Error(TG_ERR_UNSUPPORTED, sdk::cat("no renderer '", target, "' on INTERP; it has KIR"));
    *out_renderer = new tg_renderer_s{std::move(dev), {}};
  });
}

void renderer_destroy(tg_renderer renderer) {
  sdk::guard_void("interp renderer_destroy", [&] { delete renderer; });
}

tg_status_t renderer_get_caps(tg_renderer renderer, tg_renderer_caps* out_caps) {
  return sdk::guard("interp renderer_get_caps", [&] {
    sdk::require(renderer, "renderer");
    sdk::write_versioned(out_caps, interp_caps(), "out_caps");
  });
}

tg_status_t renderer_render(tg_renderer renderer, const tg_kir_kernel* kernel, const char** out_source) {
  return sdk::guard("interp renderer_render", [&] {
    sdk::require(renderer, "renderer");
    sdk::require(kernel, "kernel");
    sdk::require(out_source, "out_source");
    decode(*kernel);  // refuse here what program_create would refuse, while the core still knows the kernel
    renderer->source = kir_to_text(*kernel);
    *out_source = renderer->source.c_str();
  });
}

}  // namespace tg::interp
