// What an architecture file builds its layers from: the GGUF's hyper-parameters and tensors (checked against the
// shapes the architecture expects, with errors naming the tensor), the sequence state to add caches to, the
// RoPE tables it shares between layers, and this rank's share of a tensor-parallel model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gguf/gguf.hpp"
#include "model/blocks/rope.hpp"
#include "model/config.hpp"
#include "model/state.hpp"
#include "model/tensor_parallel.hpp"
#include "quant/quant.hpp"

namespace tg::llm {

class ModelBuilder {
 public:
  ModelBuilder(std::shared_ptr<GGUFFile> file, ModelConfig& config, SequenceState& state, std::string device,
               int64_t max_score_bytes, TensorParallel tp = {});

  const GGUFFile& file() const { return *file_; }
  ModelConfig& config() { return cfg_; }
  SequenceState& state() { return state_; }
  const std::string& device() const { return device_; }
  int64_t max_score_bytes() const { return max_score_bytes_; }  // LoadOptions::max_score_bytes
  // "<arch>.<key>" of the file
  std::string key(const std::string& name) const { return cfg_.arch + "." + name; }

  // "blk.<layer>.<name>": a layer's tensor
  static std::string blk(int64_t layer, const std::string& name) { return "blk." + std::to_string(layer) + "." + name; }
  bool has(const std::string& tensor) const { return file_->tensor(tensor) != nullptr; }
  // A (rows, cols) weight matrix read in place (dims past the first two fold into the rows: stacked experts);
  // `read` of its bytes counted in what a decode step reads (an embedding: 0, a few rows; experts: the share a
  // token picks).
  QuantMatrix matrix(const std::string& name, int64_t rows, int64_t cols, double read = 1.0);
  // Tensor parallelism: rows of a (rows, cols) matrix (a column-parallel product: this rank's heads or FFN
  // columns), read in place where they are one run; and columns of every row (a row-parallel product), a copy,
  // where each range starts and ends on the format's block boundaries (block_elems).
  QuantMatrix matrix_rows(const std::string& name, int64_t rows, int64_t cols, const IndexRanges& ranges,
                          double read = 1.0);
  QuantMatrix matrix_rows(const std::string& name, int64_t rows, int64_t cols, int64_t begin, int64_t end,
                          double read = 1.0) {
    return matrix_rows(name, rows, cols, IndexRanges{{begin, end}}, read);
  }
  QuantMatrix matrix_cols(const std::string& name, int64_t rows, int64_t cols, const IndexRanges& ranges);
  QuantMatrix matrix_cols(const std::string& name, int64_t rows, int64_t cols, int64_t begin, int64_t end) {
    return matrix_cols(name, rows, cols, IndexRanges{{begin, end}});
  }
  int64_t block_elems(const std::string& name) const;  // values per quantization block of a tensor's type
  const TensorParallel& tp() const { return tp_; }
  // Each of the experts [range) (a tensor-parallel rank's share) as its (rows, cols) matrix of a stacked
  // (E, rows, cols) tensor, viewed in place on host devices (no copy); empty elsewhere, where a view would be a copy.
  std::vector<QuantMatrix> expert_views(const std::string& name, int64_t experts, std::pair<int64_t, int64_t> range);
  // n float32 values (norm weights, biases) viewed in place.
  Tensor vector(const std::string& name, int64_t n);
  Tensor vector(const std::string& name, int64_t n,
                const IndexRanges& ranges);  // those values of it (in place: one run)
  Tensor vector(const std::string& name, int64_t n, int64_t begin, int64_t end) {
    return vector(name, n, IndexRanges{{begin, end}});
  }
  std::optional<Tensor> optional_vector(const std::string& name, int64_t n);  // nullopt where the file has none
  std::optional<Tensor> optional_vector(const std::string& name, int64_t n, const IndexRanges& ranges);
  std::optional<Tensor> optional_vector(const std::string& name, int64_t n, int64_t begin, int64_t end) {
    return optional_vector(name, n, IndexRanges{{begin, end}});
  }
  // The RoPE table for `base` and the file's rotated dims, scaling (unless `scaled` is false: gemma3's local
  // layers) and frequency factors (rope_freqs.weight), made once and shared by the layers that use it.
  std::shared_ptr<const RopeTable> rope(double base, bool scaled = true);

  uint64_t step_bytes() const { return step_bytes_; }

 private:
  std::shared_ptr<GGUFFile> file_;
  ModelConfig& cfg_;
  SequenceState& state_;
  std::string device_;
  int64_t max_score_bytes_;
  TensorParallel tp_;
  uint64_t step_bytes_ = 0;
  std::map<std::pair<double, bool>, std::shared_ptr<const RopeTable>> ropes_;
};

}  // namespace tg::llm
