// The kernel the GPU runtime mock tests (NV, AMD, METAL) launch to check how a plugin packs and binds arguments:
// data0[0] = (float)(a + b + c + d) with scalars a int8, b int64, c int16, d int32 (a 32-byte blob: offsets 0, 8,
// 16, 24, 28), and, where asked, an unread float buffer between b and c (parameters 0..5; a 40-byte blob: 0, 8,
// 16, 24, 32, 36).
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/kir_builder.hpp>

#include <vector>

struct MixedKernel {
  tg::sdk::Kir k;
  tg_kir_kernel kernel{};
  explicit MixedKernel(bool buffer_among_scalars = false) {
    const int out = k.buffer(TG_DTYPE_FLOAT32, /*writable=*/true);
    std::vector<int> scalars{k.var(TG_DTYPE_INT8, "a"), k.var(TG_DTYPE_INT64, "b")};
    if (buffer_among_scalars) k.buffer(TG_DTYPE_FLOAT32);
    scalars.push_back(k.var(TG_DTYPE_INT16, "c"));
    scalars.push_back(k.var(TG_DTYPE_INT32, "d"));
    int sum = -1;
    for (int s : scalars) {
      const int wide = k.alu(TG_KIR_CAST, TG_DTYPE_INT64, {s});
      sum = sum < 0 ? wide : k.alu(TG_KIR_ADD, TG_DTYPE_INT64, {sum, wide});
    }
    k.store(out, k.i32(0), k.alu(TG_KIR_CAST, TG_DTYPE_FLOAT32, {sum}));
    kernel = k.kernel("mixed_args");
  }
};
