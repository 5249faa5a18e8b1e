// Tensor cores (ABI 1.2, tg_tensor_core): the fragment bit maps of known matrix units, and reading a map: which
// element of A, B or C/D a work-item's fragment lane holds, and whether a description is well formed.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "tg/plugin_abi.h"
#include "tg/sdk/status.hpp"

namespace tg::sdk {

// NVIDIA mma.sync m16n8k16 (.row.col, 16-bit inputs, float32 accumulators; PTX ISA "Matrix Fragments for
// mma.m16n8k16"), lane = 4 * group + t: A[group + 8 e1][2t + e0 + 8 e2], B[2t + e0 + 8 e1][group],
// C[group + 8 e1][2t + e0].
inline constexpr uint8_t kMmaM16N8K16A[16] = {TG_TC_LANE(2), TG_TC_LANE(3), TG_TC_LANE(4), TG_TC_ELEM(1),
                                              TG_TC_ELEM(0), TG_TC_LANE(0), TG_TC_LANE(1), TG_TC_ELEM(2)};
inline constexpr uint8_t kMmaM16N8K16B[16] = {TG_TC_ELEM(0), TG_TC_LANE(0), TG_TC_LANE(1), TG_TC_ELEM(1),
                                              TG_TC_LANE(2), TG_TC_LANE(3), TG_TC_LANE(4)};
inline constexpr uint8_t kMmaM16N8K16C[16] = {TG_TC_LANE(2), TG_TC_LANE(3), TG_TC_LANE(4), TG_TC_ELEM(1),
                                              TG_TC_ELEM(0), TG_TC_LANE(0), TG_TC_LANE(1)};

// The m16n8k16 unit with the given input dtype: 32 work-items, float32 accumulators.
inline tg_tensor_core mma_m16n8k16(uint32_t dtype_in) {
  tg_tensor_core tc{sizeof(tg_tensor_core), 16, 8, 16, dtype_in, TG_DTYPE_FLOAT32, 32, {}, {}, {}};
  for (int i = 0; i < 16; ++i)
    tc.a_map[i] = kMmaM16N8K16A[i], tc.b_map[i] = kMmaM16N8K16B[i], tc.c_map[i] = kMmaM16N8K16C[i];
  return tc;
}

// The caps' tensor core t as this SDK knows the struct (members a newer plugin appended are not read), or nullopt
// when the caps list none, t is past the end, or the plugin's struct is smaller than ABI 1.2's.
inline std::optional<tg_tensor_core> tensor_core_at(const tg_renderer_caps& caps, uint32_t t) {
  if (!TG_ABI_HAS(&caps, tg_renderer_caps, ntensor_cores) || caps.tensor_cores == nullptr || t >= caps.ntensor_cores)
    return std::nullopt;
  const size_t stride = caps.tensor_cores[0].struct_size;
  if (stride < sizeof(tg_tensor_core) || stride % 8 || stride > 4096) return std::nullopt;  // not a struct size
  tg_tensor_core tc;
  std::memcpy(&tc, reinterpret_cast<const char*>(caps.tensor_cores) + t * stride, sizeof tc);
  return tc;
}

inline int tc_log2(uint32_t x) {
  int b = 0;
  while ((1u << b) < x) ++b;
  return b;
}

// A fragment's lane count: 2 to the number of element bits in the first `bits` entries of its map.
inline uint32_t tc_lanes(const uint8_t* map, int bits) {
  int elems = 0;
  for (int i = 0; i < bits; ++i) elems += map[i] >= 32;
  return 1u << elems;
}

// (row, col) of the element that lane `elem` of work-item `lane`'s fragment holds, for a matrix with 2^row_bits
// rows and 2^col_bits columns.
inline std::pair<uint32_t, uint32_t> tc_coord(const uint8_t* map, int row_bits, int col_bits, uint32_t lane,
                                              uint32_t elem) {
  uint32_t coord = 0;
  for (int i = 0; i < row_bits + col_bits; ++i)
    coord |= ((map[i] >= 32 ? elem >> (map[i] - 32) : lane >> map[i]) & 1u) << i;
  return {coord & ((1u << row_bits) - 1u), coord >> row_bits};
}

// Why a tensor-core description cannot be used ("" when it can): sizes are powers of two, every map entry names
// a lane bit below log2(threads) or an element bit, and the fragments hold whole vectors of at most 16 lanes.
inline std::string tc_problem(const tg_tensor_core& tc) {
  const auto pow2 = [](uint32_t x) { return x != 0 && (x & (x - 1)) == 0; };
  if (!pow2(tc.m) || !pow2(tc.n) || !pow2(tc.k) || !pow2(tc.threads) || tc.threads > 1024 || tc.m * tc.k > 4096 ||
      tc.k * tc.n > 4096 || tc.m * tc.n > 4096)
    return cat("m, n, k and threads must be powers of two (at most 1024 threads, 4096-element matrices); got m=", tc.m,
               " n=", tc.n, " k=", tc.k, " threads=", tc.threads);
  if (tc.dtype_in >= TG_DTYPE_COUNT || tc.dtype_acc >= TG_DTYPE_COUNT) return "dtype_in or dtype_acc is not a tg_dtype";
  const int lb = tc_log2(tc.threads);
  const struct {
    const char* name;
    const uint8_t* map;
    int bits;
  } maps[] = {{"a_map", tc.a_map, tc_log2(tc.m) + tc_log2(tc.k)},
              {"b_map", tc.b_map, tc_log2(tc.k) + tc_log2(tc.n)},
              {"c_map", tc.c_map, tc_log2(tc.m) + tc_log2(tc.n)}};
  for (const auto& m : maps) {
    if (m.bits > 16) return cat(m.name, " needs ", m.bits, " entries; it has 16");
    uint64_t seen = 0;
    int elems = 0;
    for (int i = 0; i < m.bits; ++i) {
      if (m.map[i] < 32 ? m.map[i] >= lb : m.map[i] >= 32 + 16)
        return cat(m.name, "[", i, "] = ", +m.map[i], " names no lane bit below ", lb, " and no element bit");
      if (seen >> m.map[i] & 1u) return cat(m.name, " names source ", +m.map[i], " twice");
      seen |= uint64_t{1} << m.map[i];
      elems += m.map[i] >= 32;
    }
    // the element bits are exactly 0..E-1, so each fragment lane holds one element and every element is held
    if ((seen >> 32) != (uint64_t{1} << elems) - 1) return cat(m.name, "'s element bits are not 0..", elems - 1);
    if (elems > 4) return cat(m.name, " gives fragments of more than 16 lanes");
  }
  return "";
}

}  // namespace tg::sdk
