// What an architecture builds: a stack of layers over the residual stream, and the registry of architectures
// (apps/llm/model/arch/<name>.cpp each, listed in architectures.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model_builder.hpp"
#include "model/pass.hpp"
#include "tg/tensor.hpp"

namespace tg::llm {

// One layer of the residual stream: x (T, d_model) -> x after the layer.
class Layer {
 public:
  virtual ~Layer() = default;
  virtual Tensor forward(const Tensor& x, const Pass& p) = 0;
};

// The token-mixing half of a layer (attention, or a recurrence such as the gated delta net): h (T, d_model),
// already normed -> (T, d_model).
class Mixer {
 public:
  virtual ~Mixer() = default;
  virtual Tensor forward(const Tensor& h, const Pass& p) = 0;
};

// Between the token embedding and the output norm and head, which every architecture shares.
struct Decoder {
  double embed_scale = 1.0;  // gemma: sqrt(d_model)
  // some layer carries state from token to token beyond the KV cache (a recurrence): a sequence cannot be cut
  // back to a shorter prefix (only returned to a checkpoint)
  bool recurrent = false;
  // the prompt tokens a prefill chunk runs (Generator's default): experts see k/E of a chunk's tokens each, and
  // their weights are read (and, on the matrix unit, converted) once per chunk, so mixtures of experts take longer
  // chunks than dense models
  int64_t prefill_chunk = 256;
  std::vector<std::unique_ptr<Layer>> layers;
};

struct Architecture {
  const char* name;  // general.architecture
  // Reads the architecture's own keys into b.config() (the shared ones are read) and loads its layers.
  Decoder (*build)(ModelBuilder& b);
};

// Every architecture tg-llm runs, in the order error messages list them.
const std::vector<Architecture>& architectures();
std::vector<std::string> supported_architectures();

}  // namespace tg::llm
