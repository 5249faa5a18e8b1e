#include "model/model_builder.hpp"

#include <algorithm>
#include <cstring>

#include "tg/error.hpp"

namespace tg::llm {

ModelBuilder::ModelBuilder(std::shared_ptr<GGUFFile> file, ModelConfig& config, SequenceState& state,
                           std::string device, int64_t max_score_bytes, TensorParallel tp)
    : file_(std::move(file)),
      cfg_(config),
      state_(state),
      device_(std::move(device)),
      max_score_bytes_(max_score_bytes),
      tp_(tp) {}

namespace {

// The tensor, checked to be a (rows, cols) matrix.
const GGUFTensor& need_matrix(const GGUFFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GGUFTensor& t = f.need_tensor(name);
  if (t.ne.empty() || t.ne[0] != cols || t.rows() != rows)
    throw Error("tg-llm: " + f.path() + ": tensor '" + name + "' is " + std::to_string(t.rows()) + "x" +
                std::to_string(t.ne.empty() ? 0 : t.ne[0]) + ", expected " + std::to_string(rows) + "x" +
                std::to_string(cols));
  return t;
}

}  // namespace

QuantMatrix ModelBuilder::matrix(const std::string& name, int64_t rows, int64_t cols, double read) {
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  step_bytes_ += static_cast<uint64_t>(static_cast<double>(t.nbytes) * read);
  return upload_matrix(t, file_, device_);
}

int64_t ModelBuilder::block_elems(const std::string& name) const {
  return std::max<int64_t>(1, type_traits(file_->need_tensor(name).type).block_elems);
}

namespace {

std::string describe(const IndexRanges& r) {
  std::string s;
  for (auto [b, e] : r) s += (s.empty() ? "" : ",") + std::to_string(b) + ":" + std::to_string(e);
  return s;
}

}  // namespace

QuantMatrix ModelBuilder::matrix_rows(const std::string& name, int64_t rows, int64_t cols, const IndexRanges& ranges,
                                      double read) {
  const IndexRanges r = merged(ranges);
  if (r == IndexRanges{{0, rows}}) return matrix(name, rows, cols, read);
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(rows);
  GGUFTensor part = t;
  part.name = name + "[rows " + describe(r) + "]";
  part.ne = {cols, count(r)};
  part.nbytes = static_cast<uint64_t>(count(r)) * row_bytes;
  step_bytes_ += static_cast<uint64_t>(static_cast<double>(part.nbytes) * read);
  if (r.size() == 1) {  // one run of rows: read in place
    part.data = t.data + static_cast<uint64_t>(r[0].first) * row_bytes;
    return upload_matrix(part, file_, device_);
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(part.nbytes);
  uint8_t* at = bytes->data();
  for (auto [b, e] : r) {
    const uint64_t n = static_cast<uint64_t>(e - b) * row_bytes;
    std::memcpy(at, t.data + static_cast<uint64_t>(b) * row_bytes, n);
    at += n;
  }
  part.data = bytes->data();
  return upload_matrix(part, bytes, device_);
}

QuantMatrix ModelBuilder::matrix_cols(const std::string& name, int64_t rows, int64_t cols, const IndexRanges& ranges) {
  const IndexRanges r = merged(ranges);
  if (r == IndexRanges{{0, cols}}) return matrix(name, rows, cols);
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  const int64_t block = block_elems(name);
  for (auto [b, e] : r)
    if (b % block || e % block)
      throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' (" + type_name(t.type) + ", blocks of " +
                  std::to_string(block) + ") cannot be split at column " + std::to_string(b % block ? b : e) +
                  " (use fewer devices)");
  const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(rows),
                 block_bytes = row_bytes / static_cast<uint64_t>(cols / block);
  const uint64_t n = static_cast<uint64_t>(count(r) / block) * block_bytes;  // bytes a row keeps
  auto bytes = std::make_shared<std::vector<uint8_t>>(n * static_cast<uint64_t>(rows));
  uint8_t* at = bytes->data();
  for (int64_t row = 0; row < rows; ++row)
    for (auto [b, e] : r) {
      const uint64_t len = static_cast<uint64_t>((e - b) / block) * block_bytes;
      std::memcpy(at, t.data + row_bytes * static_cast<uint64_t>(row) + static_cast<uint64_t>(b / block) * block_bytes,
                  len);
      at += len;
    }
  GGUFTensor part = t;
  part.name = name + "[cols " + describe(r) + "]";
  part.ne = {count(r), rows};
  part.data = bytes->data();
  part.nbytes = bytes->size();
  step_bytes_ += part.nbytes;
  return upload_matrix(part, bytes, device_);
}

std::vector<QuantMatrix> ModelBuilder::expert_views(const std::string& name, int64_t experts,
                                                    std::pair<int64_t, int64_t> range) {
  std::vector<QuantMatrix> views;
  if (!device_.empty() && device_.rfind("CPU", 0) != 0) return views;
  const GGUFTensor& t = file_->need_tensor(name);
  const uint64_t each = t.nbytes / static_cast<uint64_t>(experts);
  for (int64_t e = range.first; e < range.second; ++e) {
    GGUFTensor v = t;
    v.name = name + "[" + std::to_string(e) + "]";
    v.ne = {t.ne.at(0), t.rows() / experts};
    v.data = t.data + static_cast<uint64_t>(e) * each;
    v.nbytes = each;
    views.push_back(upload_matrix(v, file_, device_));
  }
  return views;
}

Tensor ModelBuilder::vector(const std::string& name, int64_t n) { return vector(name, n, IndexRanges{{0, n}}); }

Tensor ModelBuilder::vector(const std::string& name, int64_t n, const IndexRanges& ranges) {
  const GGUFTensor& t = file_->need_tensor(name);
  if (t.type != GGMLType::F32 || t.numel() != n)
    throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' must be " + std::to_string(n) +
                " float32 values, got " + type_name(t.type) + " x " + std::to_string(t.numel()));
  const IndexRanges r = merged(ranges);
  const auto* values = reinterpret_cast<const float*>(t.data);
  if (r.size() == 1)  // one run: viewed in place
    return Tensor::from_host_memory(values + r[0].first, static_cast<uint64_t>(count(r)) * 4, {count(r)},
                                    dtypes::float32, file_, device_);
  std::vector<float> part;
  for (auto [b, e] : r) part.insert(part.end(), values + b, values + e);
  return Tensor::from_vector(part, {count(r)}, dtypes::float32, device_);
}

std::optional<Tensor> ModelBuilder::optional_vector(const std::string& name, int64_t n) {
  if (!has(name)) return std::nullopt;
  return vector(name, n);
}

std::optional<Tensor> ModelBuilder::optional_vector(const std::string& name, int64_t n, const IndexRanges& ranges) {
  if (!has(name)) return std::nullopt;
  return vector(name, n, ranges);
}

std::shared_ptr<const RopeTable> ModelBuilder::rope(double base, bool scaled) {
  auto& table = ropes_[{base, scaled}];
  if (!table) {
    std::vector<float> factors;
    const int64_t half = cfg_.rope_dims / 2;
    if (const GGUFTensor* t = file_->tensor("rope_freqs.weight")) {
      if (t->type != GGMLType::F32 || t->numel() != half)
        throw Error("tg-llm: " + file_->path() + ": tensor 'rope_freqs.weight' must be " + std::to_string(half) +
                    " float32 values, got " + type_name(t->type) + " x " + std::to_string(t->numel()));
      factors.resize(static_cast<size_t>(half));
      std::memcpy(factors.data(), t->data, factors.size() * sizeof(float));
      for (float f : factors)
        if (!(f > 0))
          throw Error("tg-llm: " + file_->path() + ": tensor 'rope_freqs.weight' holds a factor that is not positive");
    }
    table = std::make_shared<const RopeTable>(base, cfg_.rope_dims, scaled ? cfg_.rope_scaling : RopeScaling{}, factors,
                                              state_.max_context(), device_);
  }
  return table;
}

}  // namespace tg::llm
