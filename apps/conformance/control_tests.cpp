// The control-flow battery: work-item ids, gated loads and stores, RANGE loops (nested) over DEFINE_REG
// accumulators, IF/ENDIF, local memory with BARRIER where the renderer claims it (caps.has_local), and WMMA on
// every tensor core the caps list (ABI 1.2), TILE_MMA where the ops claim a matrix unit (ABI 1.6).
#include "harness.hpp"

#include <tg/sdk/tensor_cores.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "reference.hpp"

namespace tg::conformance {
namespace {

constexpr tg_kir_op kAdd = TG_KIR_ADD, kMul = TG_KIR_MUL;
constexpr uint32_t kI32 = TG_DTYPE_INT32, kBool = TG_DTYPE_BOOL;

// The ops these kernels use; a renderer without them cannot run the battery's control-flow kernels.
void require_int32_ops(std::initializer_list<uint32_t> ops) {
  const Session& s = session();
  for (uint32_t op : ops)
    if (!s.claims_op(kI32, op)) throw Skip(cat("the renderer does not claim int32 ", sdk::op_name(op)));
}

std::string first_mismatch(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return cat(what, "[", i, "] is ", got[i], ", expected ", want[i]);
  return "";
}

// out[g] = in[g] * 3 + g over 1000 work-items: SPECIAL global ids cover the whole launch, once each.
void work_item_ids() {
  require_int32_ops({kAdd, kMul});
  constexpr uint32_t n = 1000;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  k.store(out, g, k.alu(kAdd, kI32, {k.alu(kMul, kI32, {k.load(kI32, in, g), k.i32(3)}), g}));
  Kernel kernel(k, "conf_work_items");
  std::vector<int32_t> input(n), want(n);
  for (uint32_t i = 0; i < n; ++i)
    input[i] = static_cast<int32_t>(i * 7919 % 1009) - 500, want[i] = input[i] * 3 + static_cast<int32_t>(i);
  Buffer bout(std::vector<int32_t>(n, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail(wrote_nothing(bout.read(), 0xFF) + "out[g] = in[g]*3 + g over global [1000,1,1]: " + diff);
}

// A gated LOAD reads 0 (and must not touch memory: `in` has 5 elements for 8 work-items); a gated STORE writes
// only where its gate is true.
void gated_load_store() {
  require_int32_ops({TG_KIR_CMPLT, TG_KIR_AND, TG_KIR_CMPNE});
  constexpr uint32_t n = 8;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  const int v = k.load_gated(kI32, in, g, k.alu(TG_KIR_CMPLT, kBool, {g, k.i32(5)}));
  const int even = k.alu(TG_KIR_CMPNE, kBool, {k.alu(TG_KIR_AND, kI32, {g, k.i32(1)}), k.i32(1)});
  k.store_gated(out, g, v, even);
  Kernel kernel(k, "conf_gates");
  Buffer bout(std::vector<int32_t>(n, 7)), bin(std::vector<int32_t>{10, 11, 12, 13, 14});
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), {10, 7, 12, 7, 14, 7, 0, 7}, "out");
  if (!diff.empty())
    kernel.fail("LOAD gated by g<5, STORE gated by g even, over 8 work-items (untouched elements stay 7): " + diff);
}

// Per work-item: acc = 0; for i < 4: for j < 25: acc += in[g*100 + i*25 + j]; out[g] = acc. A DEFINE_REG
// accumulator carried through two nested RANGE loops.
void range_loops_with_accumulator() {
  require_int32_ops({kAdd, kMul});
  constexpr uint32_t rows = 6, outer = 4, inner = 25, row = outer * inner;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(rows);
  const int acc = k.op(TG_KIR_DEFINE_REG, kI32, {}, 1, 1), zero = k.i32(0);
  k.store(acc, zero, k.i32(0));
  const int base = k.alu(kMul, kI32, {g, k.i32(row)});
  const int i = k.op(TG_KIR_RANGE, kI32, {k.i32(outer)}, 1, 0);
  const int j = k.op(TG_KIR_RANGE, kI32, {k.i32(inner)}, 1, 1);
  const int idx = k.alu(kAdd, kI32, {base, k.alu(kAdd, kI32, {k.alu(kMul, kI32, {i, k.i32(inner)}), j})});
  k.store(acc, zero, k.alu(kAdd, kI32, {k.load(kI32, acc, zero), k.load(kI32, in, idx)}));
  k.op(TG_KIR_ENDRANGE, kI32, {j});
  k.op(TG_KIR_ENDRANGE, kI32, {i});
  k.store(out, g, k.load(kI32, acc, zero));
  Kernel kernel(k, "conf_nested_ranges");
  std::vector<int32_t> input(rows * row), want(rows, 0);
  for (uint32_t x = 0; x < input.size(); ++x) {
    input[x] = static_cast<int32_t>((x * 2654435761u) % 2001) - 1000;
    want[x / row] += input[x];
  }
  Buffer bout(std::vector<int32_t>(rows, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{rows, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail("sum of 100 elements per work-item through RANGE 4 x RANGE 25 into a register: " + diff);
}

// IF/ENDIF at the top level and inside a RANGE loop: out[g] = (g == 3 ? 42 : 7) + (number of j < 10 with j < g).
void if_endif() {
  require_int32_ops({kAdd, TG_KIR_CMPEQ, TG_KIR_CMPLT});
  constexpr uint32_t n = 8;
  Kir k;
  const int out = k.buffer(kI32, true);
  const int g = k.global_id(n);
  const int acc = k.op(TG_KIR_DEFINE_REG, kI32, {}, 1, 1), zero = k.i32(0);
  k.store(acc, zero, k.i32(7));
  const int branch = k.op(TG_KIR_IF, kBool, {k.alu(TG_KIR_CMPEQ, kBool, {g, k.i32(3)})});
  k.store(acc, zero, k.i32(42));
  k.op(TG_KIR_ENDIF, kBool, {branch});
  const int j = k.op(TG_KIR_RANGE, kI32, {k.i32(10)}, 1, 0);
  const int inner = k.op(TG_KIR_IF, kBool, {k.alu(TG_KIR_CMPLT, kBool, {j, g})});
  k.store(acc, zero, k.alu(kAdd, kI32, {k.load(kI32, acc, zero), k.i32(1)}));
  k.op(TG_KIR_ENDIF, kBool, {inner});
  k.op(TG_KIR_ENDRANGE, kI32, {j});
  k.store(out, g, k.load(kI32, acc, zero));
  Kernel kernel(k, "conf_if_endif");
  std::vector<int32_t> want(n);
  for (uint32_t x = 0; x < n; ++x) want[x] = (x == 3 ? 42 : 7) + static_cast<int32_t>(std::min(x, 10u));
  Buffer bout(std::vector<int32_t>(n, -1));
  kernel.launch({bout.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty()) kernel.fail("IF (g == 3) at the top level and IF (j < g) inside RANGE 10: " + diff);
}

// Each work-group stages its slice in local memory, waits at a BARRIER, and writes it back reversed: every
// work-item reads what another one wrote, so a missing barrier or unshared memory shows.
void local_memory_and_barrier() {
  const Session& s = session();
  if (!s.caps.has_local) throw Skip("the renderer does not claim local memory (caps.has_local is 0)");
  require_int32_ops({kAdd, kMul, TG_KIR_SUB});
  const uint32_t local =
      std::min({64u, s.caps.max_local[0], s.caps.max_local_threads, static_cast<uint32_t>(s.caps.local_mem_bytes / 4)});
  constexpr uint32_t groups = 4;
  if (local < 2) throw Skip(cat("the renderer allows only ", local, " work-item per group"));
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int group = k.special(TG_SPECIAL_GROUP, groups), lid = k.special(TG_SPECIAL_LOCAL, local);
  const int temp = k.op(TG_KIR_DEFINE_LOCAL, kI32, {}, 1, local);
  const int base = k.alu(kMul, kI32, {group, k.i32(local)});
  k.store(temp, lid, k.load(kI32, in, k.alu(kAdd, kI32, {base, lid})));
  k.op(TG_KIR_BARRIER, kI32);
  const int mirror = k.alu(TG_KIR_SUB, kI32, {k.i32(local - 1), lid});
  k.store(out, k.alu(kAdd, kI32, {base, lid}), k.load(kI32, temp, mirror));
  Kernel kernel(k, "conf_local_barrier");
  std::vector<int32_t> input(groups * local), want(groups * local);
  for (uint32_t x = 0; x < input.size(); ++x) input[x] = static_cast<int32_t>(x * 31 + 5);
  for (uint32_t x = 0; x < input.size(); ++x) want[x] = input[x / local * local + (local - 1 - x % local)];
  Buffer bout(std::vector<int32_t>(input.size(), -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{groups, 1, 1}, {local, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail(cat(groups, " groups of ", local, " work-items (launch global [", groups,
                    ",1,1] = work-groups, local [", local,
                    ",1,1]) reversing their slice through local memory and a BARRIER: ", diff));
}

// Every tensor core in the caps: its description is well formed, and two chained WMMAs (D = A * B + C, then
// A * B + D) compute C + 2AB for each warp of 2 groups x 2 warps, every warp on matrices of its own, with the
// fragments laid out as the bit maps say. The host works out which element each work-item's lane holds and passes
// those indices as buffers, so the kernel needs no index arithmetic beyond its flat id. 16-bit inputs are
// multiples of 1/4 (products and sums exact in float32: the result must match bit for bit); float32 inputs carry
// low mantissa bits too, so a unit that rounds them to fewer bits misses the tolerance.
void tensor_cores() {
  const Session& s = session();
  if (!TG_ABI_HAS(&s.caps, tg_renderer_caps, ntensor_cores) || s.caps.ntensor_cores == 0)
    throw Skip("caps.ntensor_cores is 0: the renderer lists no tensor cores");
  expect(s.caps.tensor_cores != nullptr,
         cat("caps.ntensor_cores is ", s.caps.ntensor_cores, " but tensor_cores is NULL"));
  require_int32_ops({kAdd, kMul});
  for (uint32_t t = 0; t < s.caps.ntensor_cores; ++t) {
    const std::optional<tg_tensor_core> unit = sdk::tensor_core_at(s.caps, t);
    expect(unit.has_value(), cat("tensor core ", t, ": struct_size ", s.caps.tensor_cores[0].struct_size,
                                 " is smaller than ABI 1.2's ", sizeof(tg_tensor_core)));
    const tg_tensor_core tc = *unit;
    const std::string problem = sdk::tc_problem(tc),
                      which = cat("tensor core ", t, " (m", tc.m, "n", tc.n, "k", tc.k, " ",
                                  sdk::dtype_name(tc.dtype_in), " -> ", sdk::dtype_name(tc.dtype_acc), ")");
    expect(problem.empty(), which + ": " + problem);
    const uint32_t warps = tc.threads * 2 <= std::min(s.caps.max_local[0], s.caps.max_local_threads) ? 2 : 1,
                   groups = 2;
    expect(tc.threads <= s.caps.max_local[0] && tc.threads <= s.caps.max_local_threads,
           cat(which, ": ", tc.threads, " work-items share it, more than a work-group may have"));
    const uint32_t items = groups * warps * tc.threads, problems = groups * warps;
    const int mb = sdk::tc_log2(tc.m), nb = sdk::tc_log2(tc.n), kb = sdk::tc_log2(tc.k);
    struct Operand {
      const uint8_t* map;
      int row_bits, col_bits;
      uint32_t dtype, cols, size;
    } ops[3] = {{tc.a_map, mb, kb, tc.dtype_in, tc.k, tc.m * tc.k},
                {tc.b_map, kb, nb, tc.dtype_in, tc.n, tc.k * tc.n},
                {tc.c_map, mb, nb, tc.dtype_acc, tc.n, tc.m * tc.n}};
    Kir k;
    const int out = k.buffer(tc.dtype_acc, true);
    int data[3], index[3];
    for (int o = 0; o < 3; ++o) data[o] = k.buffer(ops[o].dtype), index[o] = k.buffer(kI32);
    const int group = k.special(TG_SPECIAL_GROUP, groups), lid = k.special(TG_SPECIAL_LOCAL, warps * tc.threads);
    const int id = k.alu(kAdd, kI32, {k.alu(kMul, kI32, {group, k.i32(warps * tc.threads)}), lid});
    std::vector<std::vector<int32_t>> where(3);  // per operand: work-item id * lanes + e -> the element it holds
    int frag[3];
    uint32_t lanes[3];
    for (int o = 0; o < 3; ++o) {
      lanes[o] = sdk::tc_lanes(ops[o].map, ops[o].row_bits + ops[o].col_bits);
      for (uint32_t item = 0; item < items; ++item)
        for (uint32_t e = 0; e < lanes[o]; ++e) {
          const auto [r, c] = sdk::tc_coord(ops[o].map, ops[o].row_bits, ops[o].col_bits, item % tc.threads, e);
          where[o].push_back(static_cast<int32_t>(item / tc.threads * ops[o].size + r * ops[o].cols + c));
        }
      std::vector<int> elems;
      for (uint32_t e = 0; e < lanes[o]; ++e) {
        const int at = k.alu(kAdd, kI32, {k.alu(kMul, kI32, {id, k.i32(lanes[o])}), k.i32(e)});
        elems.push_back(k.load(ops[o].dtype, data[o], k.load(kI32, index[o], at)));
      }
      frag[o] = k.op(TG_KIR_VECTORIZE, ops[o].dtype, elems, lanes[o]);
    }
    const int d1 = k.op(TG_KIR_WMMA, tc.dtype_acc, {frag[0], frag[1], frag[2]}, lanes[2], t);
    const int d2 = k.op(TG_KIR_WMMA, tc.dtype_acc, {frag[0], frag[1], d1}, lanes[2], t);
    for (uint32_t e = 0; e < lanes[2]; ++e) {
      const int at = k.alu(kAdd, kI32, {k.alu(kMul, kI32, {id, k.i32(lanes[2])}), k.i32(e)});
      k.store(out, k.load(kI32, index[2], at), k.op(TG_KIR_GEP, tc.dtype_acc, {d2}, 1, e));
    }
    Kernel kernel(k, cat("conf_wmma_", t));
    const bool fine = tc.dtype_in == TG_DTYPE_FLOAT32;
    auto values = [&](uint32_t dtype, uint32_t n, uint32_t salt, std::vector<double>& v) {
      std::vector<unsigned char> bytes(n * tg_dtype_size(dtype));
      for (uint32_t i = 0; i < n; ++i) {
        double x = static_cast<int>((i * 7 + salt) % 29) / 4.0 - 3.5;
        if (fine) x += static_cast<int>((i * 13 + salt) % 61 - 30) / 8192.0;  // needs 16+ mantissa bits
        const uint64_t bits = from_double(dtype, x);
        v.push_back(to_double(dtype, bits));
        std::memcpy(bytes.data() + i * tg_dtype_size(dtype), &bits, tg_dtype_size(dtype));
      }
      return bytes;
    };
    std::vector<double> a, b, c;
    const std::vector<unsigned char> ab = values(tc.dtype_in, problems * ops[0].size, 3, a),
                                     bb = values(tc.dtype_in, problems * ops[1].size, 11, b),
                                     cb = values(tc.dtype_acc, problems * ops[2].size, 5, c);
    Buffer bout(uint64_t{problems} * ops[2].size * tg_dtype_size(tc.dtype_acc)), ba(ab.data(), ab.size()),
        bb_(bb.data(), bb.size()), bc(cb.data(), cb.size()), ia(where[0]), ib(where[1]), ic(where[2]);
    kernel.launch({bout.addr(), ba.addr(), ia.addr(), bb_.addr(), ib.addr(), bc.addr(), ic.addr()},
                  {{groups, 1, 1}, {warps * tc.threads, 1, 1}});
    const std::vector<unsigned char> got = bout.read();
    for (uint32_t p = 0; p < problems; ++p)
      for (uint32_t r = 0; r < tc.m; ++r)
        for (uint32_t col = 0; col < tc.n; ++col) {
          const size_t at = p * ops[2].size + r * tc.n + col;
          double want = c[at], magnitude = std::abs(c[at]);
          for (uint32_t q = 0; q < tc.k; ++q) {
            const double term = a[p * ops[0].size + r * tc.k + q] * b[p * ops[1].size + q * tc.n + col];
            want += 2 * term, magnitude += 2 * std::abs(term);
          }
          uint64_t bits = 0;
          std::memcpy(&bits, got.data() + at * tg_dtype_size(tc.dtype_acc), tg_dtype_size(tc.dtype_acc));
          const double value = to_double(tc.dtype_acc, bits);
          if (fine ? !(std::abs(value - want) <= magnitude * 0x1p-18) : value != want)
            kernel.fail(cat(which, ": warp ", p, " (group ", p / warps, "), D[", r, "][", col, "] is ",
                            show(tc.dtype_acc, bits), ", expected ", want,
                            fine ? " within 2^-18 of the terms' magnitude" : " exactly",
                            " (C + 2AB through two chained WMMAs; fragments laid out by the caps' bit maps)"));
        }
  }
}

// Image reads (ABI 1.2), where caps.image_max_width is set: a float32 buffer passed as TG_PARAM_IMAGE, 8 texels
// wide x 4 high, read by each work-item as one element and, where float32 x 4 vectors are claimed, as an aligned
// 4-lane texel and as 4 lanes starting two elements into a texel (the renderer must read those element by
// element). Then the buffer's contents change and the kernel runs again: an image the plugin copied must be
// refreshed. Every value must be exact.
void image_reads() {
  const Session& s = session();
  if (!TG_ABI_HAS(&s.caps, tg_renderer_caps, image_max_height) || s.caps.image_max_width == 0)
    throw Skip("caps.image_max_width is 0: the renderer reads no images");
  if (s.caps.image_max_width < 8 || s.caps.image_max_height < 4)
    throw Failure(cat("caps claim images of only ", s.caps.image_max_width, " x ", s.caps.image_max_height, " texels"));
  require_int32_ops({kAdd, kMul});
  const bool vectors = s.claims_width(TG_DTYPE_FLOAT32, 4);
  constexpr uint32_t n = 128, texels = n / 4, per = 9;  // 8 x 4 texels; 9 results per work-item
  Kir k;
  const uint32_t f32 = TG_DTYPE_FLOAT32;
  const int out = k.buffer(f32, true), img = k.image(8);
  const int g = k.global_id(texels - 1);  // texel g; the shifted read needs texel g + 1 too
  const int four = k.alu(kMul, kI32, {g, k.i32(4)});
  const int base = k.alu(kMul, kI32, {g, k.i32(per)});
  k.store(out, base, k.load(f32, img, k.alu(kAdd, kI32, {four, k.i32(3)})));  // element 4g + 3
  if (vectors) {
    const int texel = k.load(f32, img, four, 4);                                   // elements 4g .. 4g + 3
    const int shifted = k.load(f32, img, k.alu(kAdd, kI32, {four, k.i32(2)}), 4);  // elements 4g + 2 .. 4g + 5
    for (uint32_t l = 0; l < 4; ++l) {
      k.store(out, k.alu(kAdd, kI32, {base, k.i32(1 + l)}), k.op(TG_KIR_GEP, f32, {texel}, 1, l));
      k.store(out, k.alu(kAdd, kI32, {base, k.i32(5 + l)}), k.op(TG_KIR_GEP, f32, {shifted}, 1, l));
    }
  }
  Kernel kernel(k, "conf_image_reads");
  Buffer bout(std::vector<float>((texels - 1) * per, -1.0f)), bimg(std::vector<float>(n, 0.0f));
  for (int round = 0; round < 2; ++round) {
    std::vector<float> data(n), want((texels - 1) * per, -1.0f);
    for (uint32_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(i) * (round ? -0.75f : 0.5f) + (round ? 3.5f : -17.25f);
    TGC_OK(api().allocator_copy_in(s.device, &bimg.desc(), 0, data.data(), n * sizeof(float)));
    for (uint32_t t = 0; t + 1 < texels; ++t) {
      want[t * per] = data[4 * t + 3];
      for (uint32_t l = 0; vectors && l < 4; ++l)
        want[t * per + 1 + l] = data[4 * t + l], want[t * per + 5 + l] = data[4 * t + 2 + l];
    }
    kernel.launch({bout.addr(), bimg.addr()}, {{texels - 1, 1, 1}, {1, 1, 1}});
    const std::vector<float> got = bout.read_as<float>();
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i])
        kernel.fail(cat(round ? "after the buffer changed, " : "", "image 8 x 4 texels, work-item ", i / per, ": ",
                        i % per == 0  ? "element 4g+3"
                        : i % per < 5 ? cat("texel 4g lane ", i % per - 1)
                                      : cat("4 lanes from 4g+2, lane ", i % per - 5),
                        " is ", got[i], ", expected ", want[i]));
  }
}

// TILE_MMA (ABI 1.6) on every C dtype whose ops claim it: each shape (16 or 32 by 16 or 32), C overwritten and
// accumulated, K = 2 steps, C's rows wider than N and A's slabs apart with a gap, A and B packed by the layouts
// plugin_abi.h states. bfloat16 inputs are multiples of 1/4 below 4 (every product and sum exact in float32) and
// int8 inputs any bytes (int32 exact): the result must match bit for bit.
void matrix_unit() {
  const Session& s = session();
  bool any = false;
  for (const uint32_t cd : {uint32_t{TG_DTYPE_FLOAT32}, uint32_t{TG_DTYPE_INT32}}) {
    if (!s.claims_op(cd, TG_KIR_TILE_MMA)) continue;
    any = true;
    const bool bf16 = cd == TG_DTYPE_FLOAT32;
    const uint32_t ab = bf16 ? TG_DTYPE_BFLOAT16 : TG_DTYPE_INT8, isz = tg_dtype_size(ab);
    const int64_t step = 64 / isz, group = 4 / isz, slab = 1024 / isz, steps = 2, K = steps * step;
    for (int64_t bits : {0x11, 0x12, 0x21, 0x22, 0x122, 0x111}) {
      const int64_t M = 16 * (bits & 15), N = 16 * ((bits >> 4) & 15), ldc = N + 5, sa = steps * slab + 32,
                    sb = steps * slab;
      const bool acc = bits & 256;
      Kir k;
      const int c = k.buffer(cd, true), a = k.buffer(ab), b = k.buffer(ab);
      auto i64 = [&](int64_t v) { return k.op(TG_KIR_CONST, TG_DTYPE_INT64, {}, 1, v); };
      k.op(TG_KIR_TILE_MMA, cd, {c, i64(0), i64(ldc), a, i64(0), i64(sa), b, i64(0), i64(sb), i64(steps)}, 1, bits);
      Kernel kernel(k, cat("conf_tile_mma_", bf16 ? "bf16_" : "int8_", M, "x", N, acc ? "_acc" : ""));
      auto value = [&](int64_t i, int64_t salt) {
        return bf16 ? static_cast<double>((i * 7 + salt) % 29) / 4.0 - 3.5
                    : static_cast<double>((i * 37 + salt) % 256) - 128.0;
      };
      std::vector<double> av(M * K), bv(K * N), cv(M * ldc);
      std::vector<unsigned char> abytes((M / 16) * sa * isz, 0x7f), bbytes((N / 16) * sb * isz, 0x7f),
          cbytes(M * ldc * 4);
      auto put = [&](std::vector<unsigned char>& bytes, int64_t at, uint32_t dtype,
                     double x) {  // two's complement for ints
        const uint64_t raw = dtype == TG_DTYPE_INT8 || dtype == TG_DTYPE_INT32
                                 ? static_cast<uint64_t>(static_cast<int64_t>(x))
                                 : from_double(dtype, x);
        std::memcpy(bytes.data() + at * tg_dtype_size(dtype), &raw, tg_dtype_size(dtype));
      };
      for (int64_t m = 0; m < M; ++m)
        for (int64_t q = 0; q < K; ++q)
          put(abytes, m / 16 * sa + q / step * slab + m % 16 * step + q % step, ab,
              av[m * K + q] = value(m * K + q, 3));
      for (int64_t q = 0; q < K; ++q)
        for (int64_t n = 0; n < N; ++n)
          put(bbytes, n / 16 * sb + q / step * slab + q % step / group * step + n % 16 * group + q % group, ab,
              bv[q * N + n] = value(q * N + n, 11));
      for (int64_t i = 0; i < M * ldc; ++i) put(cbytes, i, cd, cv[i] = bf16 ? value(i, 5) : value(i, 5) * 1000);
      Buffer bc(cbytes.data(), cbytes.size()), ba(abytes.data(), abytes.size()), bb(bbytes.data(), bbytes.size());
      kernel.launch({bc.addr(), ba.addr(), bb.addr()}, {{1, 1, 1}, {1, 1, 1}});
      const std::vector<unsigned char> got = bc.read();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < ldc; ++n) {
          double want = cv[m * ldc + n];
          if (n < N) {
            double sum = 0;
            for (int64_t q = 0; q < K; ++q) sum += av[m * K + q] * bv[q * N + n];
            want = acc ? want + sum : sum;
          }
          uint64_t raw = 0;
          std::memcpy(&raw, got.data() + (m * ldc + n) * 4, 4);
          const double value =
              bf16 ? to_double(cd, raw) : static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(raw)));
          if (value != want)
            kernel.fail(cat(M, "x", N, " C", acc ? " +=" : " =", " A . B (K ", K, ", ", sdk::dtype_name(ab), "): C[", m,
                            "][", n, "] is ", show(cd, raw), ", expected ", want,
                            n >= N ? " (a column past N: untouched)" : "",
                            " (A in slabs of 16 rows, B in the interleaved order plugin_abi.h gives)"));
        }
    }
  }
  if (!any) throw Skip("no dtype claims TILE_MMA: the renderer has no matrix unit");
}

}  // namespace

// Inline code (ABI 1.1), where caps.language names one: a CUSTOMI expression and a CUSTOM statement written in
// the C subset every C-like language shares, so one kernel checks C, OpenCL C and CUDA renderers alike.
void inline_code() {
  const Session& s = session();
  if (!TG_ABI_HAS(&s.caps, tg_renderer_caps, language) || s.caps.language == nullptr)
    throw Skip("caps.language is NULL: the renderer takes no inline code");
  constexpr uint32_t n = 64;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  const int v = k.custom(TG_KIR_CUSTOMI, kI32, "{0} * {1} + 7", {k.load(kI32, in, g), k.i32(3)});
  k.custom(TG_KIR_CUSTOM, kI32, "{0}[{1}] = {2} - {1};", {out, g, v});
  Kernel kernel(k, "conf_inline_code");
  std::vector<int32_t> input(n), want(n);
  for (uint32_t i = 0; i < n; ++i)
    input[i] = static_cast<int32_t>(i * 37 % 101) - 50, want[i] = input[i] * 3 + 7 - static_cast<int32_t>(i);
  Buffer bout(std::vector<int32_t>(n, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail(cat("CUSTOMI \"{0} * {1} + 7\" then CUSTOM \"{0}[{1}] = {2} - {1};\" (language ", s.caps.language,
                    "): ", diff));
}

void add_control_tests(Tests& tests) {
  tests.push_back({"control.work_item_ids", Tier::Core, work_item_ids});
  tests.push_back({"control.matrix_unit", Tier::Core, matrix_unit});
  tests.push_back({"control.gated_load_store", Tier::Core, gated_load_store});
  tests.push_back({"control.range_loops_with_accumulator", Tier::Core, range_loops_with_accumulator});
  tests.push_back({"control.if_endif", Tier::Core, if_endif});
  tests.push_back({"control.local_memory_and_barrier", Tier::Core, local_memory_and_barrier});
  tests.push_back({"control.inline_code", Tier::Core, inline_code});
  tests.push_back({"control.tensor_cores", Tier::Core, tensor_cores});
  tests.push_back({"control.image_reads", Tier::Core, image_reads});
}

}  // namespace tg::conformance
