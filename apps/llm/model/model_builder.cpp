#include "model/model_builder.hpp"

#include <cstring>

#include "tg/error.hpp"

namespace tg::llm {

ModelBuilder::ModelBuilder(std::shared_ptr<GGUFFile> file, ModelConfig& config, SequenceState& state, std::string device,
                           int64_t max_score_bytes)
    : file_(std::move(file)), cfg_(config), state_(state), device_(std::move(device)), max_score_bytes_(max_score_bytes) {}

QuantMatrix ModelBuilder::matrix(const std::string& name, int64_t rows, int64_t cols, double read) {
  const GGUFTensor& t = file_->need_tensor(name);
  QuantMatrix m = upload_matrix(t, file_, device_);
  if (m.rows != rows || m.cols != cols)
    throw Error("tg-llm: " + file_->path() + ": tensor '" + name + "' is " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + ", expected " +
                std::to_string(rows) + "x" + std::to_string(cols));
  step_bytes_ += static_cast<uint64_t>(static_cast<double>(t.nbytes) * read);
  return m;
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

std::optional<Tensor> ModelBuilder::optional_vector(const std::string& name, int64_t n) {
  if (!has(name)) return std::nullopt;
  return vector(name, n);
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
