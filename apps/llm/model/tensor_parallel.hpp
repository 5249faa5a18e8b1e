// Tensor parallelism (Megatron-style): each rank holds a share of every layer's attention heads and FFN columns.
// The first products of a block are column-parallel (rows of q, k, v, gate and up: the rank's heads or columns,
// read in place), the last are row-parallel (the matching columns of attn_output and ffn_down, copied out of each
// row), and their partial outputs are summed over the ranks: one allreduce after attention and one after the FFN.
// The embedding and norms are whole on every rank and the output head is split by vocabulary (its logits summed
// into place), so every rank computes the same logits. Blocks with heads of their own split the same way: a gated
// delta net by key heads, latent attention by heads (blocks/gated_delta_net.hpp, blocks/mla_attention.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tg/comm.hpp"
#include "tg/tensor.hpp"

namespace tg::llm {

// Indices [begin, end) of an axis, in order: a rank's part of it. One range for heads and FFN columns; several where
// its heads lie apart (a gated delta net's value heads, tiled over its key heads).
using IndexRanges = std::vector<std::pair<int64_t, int64_t>>;
int64_t count(const IndexRanges& r);
// Each range's ends times `by`, plus `offset` (heads -> their rows); adjacent ranges merged.
IndexRanges scaled(const IndexRanges& r, int64_t by, int64_t offset = 0);
IndexRanges merged(IndexRanges r);

struct TensorParallel {
  int rank = 0, world = 1;
  Communicator* comm = nullptr;  // must outlive the model (world > 1)

  bool split() const { return world > 1; }
  // This rank's part [begin, end) of n indices in units of `unit` (whole heads, whole quantization blocks): the
  // units dealt out as evenly as they go. `what` names them in the error when some rank would get none.
  std::pair<int64_t, int64_t> share(int64_t n, int64_t unit, const std::string& what) const;
  // A block's partial output summed over the ranks (itself on one rank): a lazy allreduce, captured by the Jit.
  Tensor sum(const Tensor& partial) const { return split() ? allreduce(partial, *comm) : partial; }
};

}  // namespace tg::llm
