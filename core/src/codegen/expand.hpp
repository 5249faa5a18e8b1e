// The expander's graph half: the lanes of an upcast axis (one graph per lane, as apply_opts makes them) become one
// graph of vector statements, which is all the linearizer then sees. A store of w lanes becomes one STORE of a
// VECTORIZE; the Emitter (expand_lanes.cpp) takes each VECTORIZE's lanes to vector instructions of the widths the
// renderer has.
#pragma once

#include <vector>

#include "ir/uop.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

// The STOREs of w lanes as statements: one STORE of VECTORIZE(values) at the first lane's index where the indices
// are consecutive, every lane has the same gate and the renderer has vectors of w; else one STORE per lane, whose
// index and value are lane l of the lanes' VECTORIZEs (GEP), so what vectorizes among them still does.
std::vector<ir::UOpPtr> vector_store(const std::vector<ir::UOpPtr>& stores, const tg_renderer_caps& caps);

}  // namespace tg::codegen
