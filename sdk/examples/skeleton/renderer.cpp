// The SKELETON plugin's Renderer. Fill in: the capabilities (which dtypes, ops per dtype, vector widths, work-group
// limits: the core sends only what they admit and lowers the rest) and KIR -> your source language. A C-like
// language derives from sdk::CRenderer (tg/sdk/c_renderer.hpp); host C can use the C preset as it is
// (tg/sdk/c11_renderer.hpp). tg/sdk/plugin_slots.hpp's RendererSlots writes these four slots from a hooks struct.
#include "skeleton.hpp"

namespace tg::skeleton {

tg_status_t RendererSlots::create(tg_device, const char*, tg_renderer*) noexcept {
  return sdk::guard("skeleton renderer_create", [] { not_implemented("renderer_create (a renderer for <target>)"); });
}
void RendererSlots::destroy(tg_renderer) noexcept {}  // nothing was created
tg_status_t RendererSlots::get_caps(tg_renderer, tg_renderer_caps*) noexcept {
  return sdk::guard("skeleton renderer_get_caps",
                    [] { not_implemented("renderer_get_caps (what the renderer takes)"); });
}
tg_status_t RendererSlots::render(tg_renderer, const tg_kir_kernel*, const char**) noexcept {
  return sdk::guard("skeleton renderer_render", [] { not_implemented("renderer_render (KIR -> source text)"); });
}

}  // namespace tg::skeleton
