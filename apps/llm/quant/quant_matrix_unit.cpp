// Products on the matrix unit: three kernels (the weights' and the activation's bfloat16 tiles, the tiled
// product). The layouts are TILE_MMA's (plugin_abi.h): a step is 32 values of k, a slab's step 1 KiB. The weights
// are A (slabs of 16 rows, row r's 32 values of a step at r * 32: each row decodes straight into place) and the
// activation is B (slabs of 16 tokens, values k and k + 1 of token n side by side at (k / 2) * 32 + n * 2: the
// transpose is paid on the activation, T x cols values shared by every product of it, not on rows x cols weights
// per product). C is then rows by tokens, transposed into y as each 32 x 32 block is stored.
#include "quant/quant_matrix_unit.hpp"

#include <memory>
#include <string>
#include <vector>

#include "quant/quant_formats.hpp"
#include "quant/quant_kernels.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

using namespace detail;

namespace {

constexpr int64_t kStep = 32, kSlabStep = 512;  // values of k a step; bfloat16 values of a slab a step

KExpr i64(CustomKernel& k, int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); }

// float32 -> bfloat16 rounded to nearest even in integer arithmetic, which vectorizes (the general conversion is
// a helper call per value). A NaN stays a NaN (quieted): the rounding's carry would turn it into an infinity or -0.
KExpr to_bf16(CustomKernel& k, const KExpr& x) {
  const DType u32 = dtypes::uint32;
  KExpr b = x.bitcast(u32);
  KExpr nan = k.constant(0x7F800000, u32) < (b & 0x7FFFFFFF);
  KExpr rounded = (b + ((b >> 16) & 1) + 0x7FFF) >> 16;
  return KExpr::where(nan, (b >> 16) | k.constant(0x40, u32), rounded).cast(dtypes::uint16).bitcast(dtypes::bfloat16);
}

// W's A slabs: (rows / 16, cols / 32, 512) bfloat16, each run of 32 values of a row decoded as 32 lanes.
Tensor weight_tiles(const QuantMatrix& w, const Format& f) {
  const int64_t rows = w.rows, cols = w.cols, steps = cols / kStep, runs = f.group_elems / kStep, rw = w.row_words();
  const CustomKernel& k = cached({KernelKind::tile_weights, w.type, rows, cols, 0}, [&] {
    CustomKernel k(std::string("tiles_") + type_traits(w.type).name);
    KExpr r = k.range(rows, Axis::GLOBAL), blk = k.range(cols / f.group_elems, Axis::GLOBAL),
          lane = k.range(kStep, Axis::UPCAST);
    KExpr run = runs > 1 ? k.range(runs, Axis::LOOP) : i64(k, 0);
    GroupReader rd{k, k.buffer(1, dtypes::uint8), r * rw + blk * f.group_bytes, i64(k, rows * rw)};
    KExpr at = ((r / i64(k, 16)) * steps + blk * runs + run) * kSlabStep + (r % i64(k, 16)) * kStep + lane;
    KExpr st = k.store(k.buffer(0, dtypes::bfloat16), at, to_bf16(k, f.decode(rd, run * kStep + lane)));
    k.run(runs > 1 ? k.loop({st}, {run, lane}) : k.loop({st}, {lane}));
    k.parallel();
    return k;
  });
  return k({{{rows / 16 * steps * kSlabStep}, dtypes::bfloat16}}, {w.words})[0];
}

// x's B slabs: (Tp / 16, cols / 32, 512) bfloat16, the tokens past T zero. Per 16 tokens and one step, each
// token's 32 values are loaded as 32 lanes into a register array, then written out in the slab's order (16 tokens
// x 2 values a store of 32): the transpose happens in registers, both memory sides stay contiguous.
Tensor activation_tiles(const Tensor& x, int64_t Tp) {
  const int64_t T = x.shape()[0], cols = x.shape()[1], steps = cols / kStep;
  const CustomKernel& k = cached({KernelKind::tile_activation, GGMLType::F32, T, cols, Tp}, [&] {
    CustomKernel k("tiles_activation");
    KExpr v = k.range(Tp / 16, Axis::GLOBAL), s = k.range(steps, Axis::GLOBAL);
    KExpr vals = k.reg(dtypes::float32, 16 * kStep);
    KExpr n = k.range(16, Axis::LOOP), lane = k.range(kStep, Axis::UPCAST), t = v * 16 + n;
    KExpr in = k.load(k.buffer(1, dtypes::float32), t * cols + s * kStep + lane, t < T);
    KExpr fill = k.loop({k.store(vals, n * kStep + lane, in)}, {n, lane});
    KExpr j = k.range(16, Axis::LOOP), o = k.range(32, Axis::UPCAST);  // o = 2 * token + (k % 2)
    KExpr val = k.load(k.after(vals, {fill}), (o / i64(k, 2)) * kStep + j * 2 + o % i64(k, 2));
    k.run(fill);
    k.run(k.loop({k.store(k.buffer(0, dtypes::bfloat16), (v * steps + s) * kSlabStep + j * 32 + o, to_bf16(k, val))},
                 {j, o}));
    k.parallel();
    return k;
  });
  return k({{{Tp / 16 * steps * kSlabStep}, dtypes::bfloat16}}, {x})[0];
}

}  // namespace

bool takes_matrix_unit(const QuantMatrix& w, int64_t T) {
  const Format* f = find_format(w.type);
  return T >= kMatrixUnitTokens && w.rows % 32 == 0 && w.cols % 32 == 0 && f && f->bytes &&
         CustomKernel::has_matrix_unit(w.words.device(), dtypes::float32);
}

// The product: per block of RB x 32 rows (the threads split the blocks), every 32 tokens, then every 32 rows of
// the block, one TILE_MMA over the whole row into a 32 x 32 register array, stored transposed into y (32 rows of
// one token a store). The block's A slabs (RB x 32 rows) stay in L2 while the tokens pass (RB = 8: 256 rows of
// 2048 bfloat16 values, 1 MiB); each statement streams its A and B slabs a step at a time. Measured in a C model
// of this loop (2048 x 2048 x 512 tokens, one core of an AMX Xeon): 850 GFLOP/s with blocks of 256 rows, 750
// without (every token pair re-reads the whole matrix from L3).
Tensor tile_matmul(const QuantMatrix& w, ProductInput& in) {
  const Format& f = format_of(w);
  const int64_t T = in.x.shape()[0], rows = w.rows, cols = w.cols, steps = cols / kStep, Tp = (T + 31) / 32 * 32;
  if (!in.tiles || in.tiles->shape()[0] != Tp / 16 * steps * kSlabStep)
    in.tiles = std::make_shared<Tensor>(activation_tiles(in.x, Tp));
  const int64_t pairs = rows / 32;
  int64_t RB = 8;
  while (RB > 1 && (pairs % RB || pairs / RB < 4)) RB /= 2;
  const CustomKernel& k = cached({KernelKind::tile_product, GGMLType::BF16, rows, cols, Tp}, [&] {
    CustomKernel k("tile_matmul");
    const int64_t slab = steps * kSlabStep;
    KExpr rb = k.range(pairs / RB, Axis::GLOBAL), tp = k.range(Tp / 32, Axis::LOOP), rp = k.range(RB, Axis::LOOP);
    KExpr r = rb * RB + rp, c = k.reg(dtypes::float32, 32 * 32);
    KExpr mma = k.tile_mma({c, i64(k, 0), i64(k, 32)}, {k.buffer(2, dtypes::bfloat16), r * (2 * slab), i64(k, slab)},
                           {k.buffer(1, dtypes::bfloat16), tp * (2 * slab), i64(k, slab)}, i64(k, steps), 2, 2);
    KExpr n = k.range(32, Axis::LOOP), m = k.range(32, Axis::UPCAST);
    KExpr store =
        k.store(k.buffer(0, dtypes::float32), (tp * 32 + n) * rows + r * 32 + m, k.load(k.after(c, {mma}), m * 32 + n));
    k.run(k.loop({mma, k.loop({store}, {n, m})}, {tp, rp}));
    k.parallel();
    return k;
  });
  Tensor y = k({{{Tp, rows}, dtypes::float32}}, {*in.tiles, weight_tiles(w, f)})[0];
  return Tp == T ? y : y.shrink({{0, T}, {0, rows}});
}

}  // namespace tg::llm
