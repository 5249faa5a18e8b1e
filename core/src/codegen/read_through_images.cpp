// Images (IMAGE=1): a finishing step on the KIR, for renderers with image2d reads.
#include "codegen/plan.hpp"

namespace tg::codegen {

namespace {

// The widest image2d view of `texels` RGBA texels within the renderer's limits: a power-of-two width that divides
// them, with at most image_max_height rows. 0 when there is none.
uint32_t image_width(int64_t texels, const tg_renderer_caps& caps) {
  for (uint64_t w = uint64_t{1} << 30; w >= 1; w /= 2)
    if (w <= caps.image_max_width && texels % static_cast<int64_t>(w) == 0 &&
        static_cast<uint64_t>(texels) / w <= caps.image_max_height)
      return static_cast<uint32_t>(w);
  return 0;
}

}  // namespace

// Images (IMAGE=1) on a renderer with image2d reads (caps.image_max_width): every float32 buffer a kernel only
// reads goes through an image view (the texture path, which Adreno's caches serve better than plain loads). The
// lowering does not change: only the parameters' kind and their PARAM instructions' address space.
void read_through_images(Plan& p) {
  KirProgram& k = p.kir;
  const auto& bufs = p.kernel.params;
  const tg_renderer_caps& caps = p.caps;
  if (p.kernel.custom || !p.opts.switches.images || !TG_ABI_HAS(&caps, tg_renderer_caps, image_max_height) ||
      caps.image_max_width == 0)
    return;
  std::vector<bool> image(k.params.size(), false);
  for (size_t i = 0; i < bufs.size() && i < k.params.size(); ++i) {
    tg_kir_param& param = k.params[i];
    if (param.kind != TG_PARAM_BUFFER || param.writable || param.dtype != TG_DTYPE_FLOAT32 || bufs[i].numel % 4 ||
        bufs[i].numel == 0)
      continue;
    if (const uint32_t w = image_width(bufs[i].numel / 4, caps))
      param.kind = TG_PARAM_IMAGE, param.reserved = w, image[i] = true;
  }
  for (tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_PARAM && in.arg.i >= 0 && static_cast<size_t>(in.arg.i) < image.size() && image[in.arg.i])
      in.addrspace = TG_ADDR_IMAGE;
}

}  // namespace tg::codegen
