// The pieces the GPU plans (plans.hpp) build from: fresh ranges, the kernel's top-level reduces, and for the two
// matmul plans (LOCAL and TC) the matmul shape they match, its block ids and tiles staged through local memory.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "codegen/gpu/plans.hpp"

namespace tg::codegen {

// The top-level REDUCEs of a kernel (those not inside another reduce's value).
std::vector<UOpPtr> top_reduces(const UOpPtr& sink);

// A constant range's extent.
int64_t extent(const UOpPtr& range);

// A fresh int32 range (a work-item id or a loop of the plan) with the next free id.
UOpPtr new_range(int64_t n, ir::AxisType type, int64_t& id);

// A matmul-shaped kernel: one store of an expression of one SUM over a single range k whose value is a * b,
// with a depending on the output range m and not on n, b on n and not on m (m and n the two innermost output
// loops; one more output loop is a batch).
struct Matmul {
  UOpPtr reduce, m, n, k, a, b, batch;
};

// The kernel as a Matmul, or nullopt when it is not one.
std::optional<Matmul> match_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges);

// `value` with the ranges replaced by index expressions (int32 here; cast to each range's dtype).
UOpPtr at(const UOpPtr& value, std::initializer_list<std::pair<const UOpPtr*, UOpPtr>> where);

// Copies a rows x cols tile, element (r, c) = value(r, c), into local memory at slot(r, c): `threads` work-items
// (thread id tid; rows * cols must be a multiple of threads) each take w consecutive elements of a row per pass,
// consecutive ids along c so the global reads coalesce; the w lanes are an UPCAST range, so they are one vector load
// where the source is contiguous (and one vector store where the slots are). w is the widest of 4, 2, 1 the
// renderer takes that tiles the copy exactly. The copy's statements, one per pass.
std::vector<UOpPtr> stage_tile(const tg_renderer_caps& caps, const UOpPtr& local, int64_t rows, int64_t cols,
                               const UOpPtr& tid, int64_t threads, int64_t& id,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& value,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& slot);

// The kernel's store for output (m, n) with `result` in place of the reduce's value (`at` leaves the plan's
// statements that `result` reaches through AFTER as they are).
UOpPtr output_store(const UOpPtr& sink, const Matmul& mm, const UOpPtr& m, const UOpPtr& n, const UOpPtr& result);

// What both matmul plans share: block ids (gx over N / BN blocks, the grid's dim 0; gy over M / BM, dim 1; the
// batch on dim 2) and the A and B tiles in local memory.
struct Blocks {
  UOpPtr gx, gy, as, bs;
};
Blocks blocks(const Matmul& mm, int64_t BM, int64_t BN, DType tile, int64_t a_elems, int64_t b_elems, int64_t& id);

}  // namespace tg::codegen
