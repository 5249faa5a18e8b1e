// The HOSTC plugin's Renderer: the SDK's C preset as it is (ISO C11 with no undefined behaviour, scalars, global
// dim 0 as a loop) and its capabilities.
#include "hostc_plugin.hpp"

#include <tg/sdk/c11_renderer.hpp>
#include <tg/sdk/host_machine.hpp>

struct tg_renderer_s {
  tg::sdk::C11Renderer renderer;
  std::string source;  // the last render, returned borrowed
};

namespace tg::hostc {

struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "hostc";
  static constexpr std::string_view device_label = "HOSTC";
  static constexpr std::string_view targets = "C";
  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C"; }
  static std::unique_ptr<Renderer> create(tg_device) { return std::make_unique<Renderer>(); }
  static tg_renderer_caps caps(const Renderer&) {
    tg_renderer_caps caps = sdk::C11Renderer::preset_caps();
    // the machine the compiled code runs on: `cc -O2` targets the baseline ISA (-march=native would be `true`)
    sdk::describe_host_machine(caps, false);
    return caps;
  }
  static std::string render(Renderer& r, const tg_kir_kernel& kernel) { return r.renderer.render_kernel(kernel); }
};

}  // namespace tg::hostc

template struct tg::sdk::RendererSlots<tg::hostc::RendererHooks>;
