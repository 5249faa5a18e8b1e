#include "model/model_builder.hpp"

#include <algorithm>
#include <cstring>

#include "tg/error.hpp"

namespace tg::llm {

ModelBuilder::ModelBuilder(std::shared_ptr<GGUFFile> file, ModelConfig& config, SequenceState& state, std::string device,
                           int64_t max_score_bytes, TensorParallel tp)
    : file_(std::move(file)), cfg_(config), state_(state), device_(std::move(device)), max_score_bytes_(max_score_bytes), tp_(tp) {}

namespace {

// The tensor, checked to be a (rows, cols) matrix.
const GGUFTensor& need_matrix(const GGUFFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GGUFTensor& t = f.need_tensor(name);
  if (t.ne.empty() || t.ne[0] != cols || t.rows() != rows)
    throw Error("tg-llm: " + f.path() + ": tensor '" + name + "' is " + std::to_string(t.rows()) + "x" + std::to_string(t.ne.empty() ? 0 : t.ne[0]) +
                ", expected " + std::to_string(rows) + "x" + std::to_string(cols));
  return t;
}

}  // namespace

QuantMatrix ModelBuilder::matrix(const std::string& name, int64_t rows, int64_t cols, double read) {
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  step_bytes_ += static_cast<uint64_t>(static_cast<double>(t.nbytes) * read);
  return upload_matrix(t, file_, device_);
}

int64_t ModelBuilder::block_elems(const std::string& name) const { return std::max<int64_t>(1, type_traits(file_->need_tensor(name).type).block_elems); }

QuantMatrix ModelBuilder::matrix_rows(const std::string& name, int64_t rows, int64_t cols, int64_t begin, int64_t end, double read) {
  if (begin == 0 && end == rows) return matrix(name, rows, cols, read);
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(rows);
  GGUFTensor part = t;
  part.name = name + "[rows " + std::to_string(begin) + ":" + std::to_string(end) + "]";
  part.ne = {cols, end - begin};
  part.data = t.data + static_cast<uint64_t>(begin) * row_bytes;
  part.nbytes = static_cast<uint64_t>(end - begin) * row_bytes;
  step_bytes_ += static_cast<uint64_t>(static_cast<double>(part.nbytes) * read);
  return upload_matrix(part, file_, device_);
}

QuantMatrix ModelBuilder::matrix_cols(const std::string& name, int64_t rows, int64_t cols, int64_t begin, int64_t end) {
  if (begin == 0 && end == cols) return matrix(name, rows, cols);
  const GGUFTensor& t = need_matrix(*file_, name, rows, cols);
  const int64_t block = block_elems(name);
  if (begin % block || end % block)
    throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' (" + type_name(t.type) + ", blocks of " + std::to_string(block) +
                ") cannot be split at column " + std::to_string(begin % block ? begin : end) + " (use fewer devices)");
  const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(rows), block_bytes = row_bytes / static_cast<uint64_t>(cols / block);
  const uint64_t first = static_cast<uint64_t>(begin / block) * block_bytes, n = static_cast<uint64_t>((end - begin) / block) * block_bytes;
  auto bytes = std::make_shared<std::vector<uint8_t>>(n * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(bytes->data() + n * static_cast<uint64_t>(r), t.data + row_bytes * static_cast<uint64_t>(r) + first, n);
  GGUFTensor part = t;
  part.name = name + "[cols " + std::to_string(begin) + ":" + std::to_string(end) + "]";
  part.ne = {end - begin, rows};
  part.data = bytes->data();
  part.nbytes = bytes->size();
  step_bytes_ += part.nbytes;
  return upload_matrix(part, bytes, device_);
}

void ModelBuilder::refuse_split(const std::string& block) const {
  if (tp_.split())
    throw Error("tg-llm: " + file_->path() + ": " + cfg_.arch + "'s " + block + " cannot run tensor-parallel yet (llama, qwen2, qwen3, gemma3 and qwen3moe can)");
}

std::vector<QuantMatrix> ModelBuilder::expert_views(const std::string& name, int64_t experts) {
  std::vector<QuantMatrix> views;
  if (!device_.empty() && device_.rfind("CPU", 0) != 0) return views;
  const GGUFTensor& t = file_->need_tensor(name);
  const uint64_t each = t.nbytes / static_cast<uint64_t>(experts);
  for (int64_t e = 0; e < experts; ++e) {
    GGUFTensor v = t;
    v.name = name + "[" + std::to_string(e) + "]";
    v.ne = {t.ne.at(0), t.rows() / experts};
    v.data = t.data + static_cast<uint64_t>(e) * each;
    v.nbytes = each;
    views.push_back(upload_matrix(v, file_, device_));
  }
  return views;
}

Tensor ModelBuilder::vector(const std::string& name, int64_t n) {
  const GGUFTensor& t = file_->need_tensor(name);
  if (t.type != GGMLType::F32 || t.numel() != n)
    throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' must be " + std::to_string(n) + " float32 values, got " + type_name(t.type) +
                " x " + std::to_string(t.numel()));
  return Tensor::from_host_memory(t.data, t.nbytes, {n}, dtypes::float32, file_, device_);
}

Tensor ModelBuilder::vector(const std::string& name, int64_t n, int64_t begin, int64_t end) {
  Tensor whole = vector(name, n);
  if (begin == 0 && end == n) return whole;
  const GGUFTensor& t = file_->need_tensor(name);
  return Tensor::from_host_memory(t.data + begin * 4, static_cast<uint64_t>(end - begin) * 4, {end - begin}, dtypes::float32, file_, device_);
}

std::optional<Tensor> ModelBuilder::optional_vector(const std::string& name, int64_t n) {
  if (!has(name)) return std::nullopt;
  return vector(name, n);
}

std::optional<Tensor> ModelBuilder::optional_vector(const std::string& name, int64_t n, int64_t begin, int64_t end) {
  if (!has(name)) return std::nullopt;
  return vector(name, n, begin, end);
}

std::shared_ptr<const RopeTable> ModelBuilder::rope(double base, bool scaled) {
  auto& table = ropes_[{base, scaled}];
  if (!table) {
    std::vector<float> factors;
    const int64_t half = cfg_.rope_dims / 2;
    if (const GGUFTensor* t = file_->tensor("rope_freqs.weight")) {
      if (t->type != GGMLType::F32 || t->numel() != half)
        throw Error("tg-llm: " + file_->path() + ": tensor 'rope_freqs.weight' must be " + std::to_string(half) + " float32 values, got " +
                    type_name(t->type) + " x " + std::to_string(t->numel()));
      factors.resize(static_cast<size_t>(half));
      std::memcpy(factors.data(), t->data, factors.size() * sizeof(float));
      for (float f : factors)
        if (!(f > 0)) throw Error("tg-llm: " + file_->path() + ": tensor 'rope_freqs.weight' holds a factor that is not positive");
    }
    table = std::make_shared<const RopeTable>(base, cfg_.rope_dims, scaled ? cfg_.rope_scaling : RopeScaling{}, factors, state_.max_context(), device_);
  }
  return table;
}

}  // namespace tg::llm
