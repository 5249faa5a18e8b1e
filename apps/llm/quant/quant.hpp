// Quantized weights on the device and the kernels that read their packed blocks in place: matrix-vector /
// matrix products, embedding rows and (for tests and small tensors) whole dequantization.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "tg/tensor.hpp"

namespace tg::llm {

// The weight formats the kernels decode (the others are refused with this list).
const std::vector<GGMLType>& supported_types();
bool is_supported(GGMLType t);

// A [rows, cols] weight matrix exactly as the GGUF stores it: each row a run of packed blocks, held on the
// device as its bytes. Nothing is dequantized or repacked; on host devices `words` is the mapped file itself.
struct QuantMatrix {
  GGMLType type = GGMLType::F32;
  int64_t rows = 0, cols = 0;
  Tensor words;               // (rows * row_words,) uint8
  int64_t row_words() const;  // bytes per row
};

// Views GGUF tensor `t` (ne = {cols, rows, ...}; dims past the first fold into rows). `owner` keeps its bytes
// alive (the GGUFFile's mapping). Unsupported types: tg::Error naming the tensor, its type and the supported ones.
QuantMatrix upload_matrix(const GGUFTensor& t, std::shared_ptr<const void> owner, const std::string& device = "");

// y = x W^T: x is (T, cols) float32, y is (T, rows) float32. The integer formats multiply bytes by the activation
// quantized to int8 (quant_int8.hpp) for every T: decode and short prompts decode each weight word once for up to 16
// tokens, longer prompts run the tiled int8 product. The float formats decode to float32 in the kernel
// below kPanelTokens tokens; from there on panels of rows are decoded into a bounded scratch and multiplied by
// tg's float32 GEMM. Measured prefill tok/s (Qwen3-0.6B-shaped Q4_0, 512 tokens, 2 threads): 83 on the panels,
// 82 on the 16-token int8 kernel, 141 on the tiled one.
inline constexpr int64_t kPanelTokens = 128;
Tensor qmatmul(const QuantMatrix& w, const Tensor& x);
// The input of several products (q, k and v of one norm; gate and up): what a product derives from it (the int8
// form) is made once, by the first product that needs it.
struct Int8Activation;
struct ProductInput {
  Tensor x;
  std::shared_ptr<Int8Activation> int8;
  std::shared_ptr<Tensor> tiles;  // x in bfloat16 tiles for the matrix unit (quant_matrix_unit.hpp)
};
Tensor qmatmul(const QuantMatrix& w, ProductInput& in);
// argmax over the rows of x W^T: (T,) int32, the first row on ties. For greedy decoding's output head: the integer
// formats never store the (T, rows) logits (each block of rows keeps its best row); the others take the argmax of
// qmatmul.
Tensor qargmax(const QuantMatrix& w, ProductInput& in);
// Products with E experts' matrices stacked in one W (E * rows, cols), as a GGUF stores ffn_*_exps (E, rows, cols),
// each (token t, slot s) pair by expert ids[t, s] alone: ids (T, k) int32, x (T, cols) (every slot of a token
// takes its row: gate, up) or (T * k, cols) (a row per pair: down) float32 -> (T * k, rows) float32, pair t * k + s.
// Only the picked experts' rows are read; an id outside [0, E) gives a zero row. The integer formats multiply bytes
// by x quantized to int8 once (with in's other products).
Tensor qmatmul_experts(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids);
Tensor qmatmul_experts(const QuantMatrix& w, int64_t experts, const Tensor& x, const Tensor& ids);
// The same with one input row per pair, x (T * k, cols), summed by the routing weights (T, k) float32 into one row
// per token: (T, rows), the sum over s of weights[t, s] x (pair t * k + s's product). The integer formats fold the
// sum into the product (each token's k rows read as one long row).
Tensor qmatmul_experts_summed(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids,
                              const Tensor& weights);
// The prefill form of the experts' products (llama.cpp's mul_mat_id): x (T, cols) holds its rows grouped by expert,
// each run of kExpertRunTokens rows one expert's tokens (padded with any rows), ids (T / kExpertRunTokens,) int32 the
// runs' experts -> (T, rows / experts); each run multiplies its expert's rows only, all the experts in one kernel, so
// each expert's weights are read once per run of its tokens. An id outside [0, experts) reads expert 0 (a run of
// padding gives what it gives). The integer formats (has_int8_product) on devices without a matrix unit for them
// (grouped_product_runs); the others throw.
inline constexpr int64_t kExpertRunTokens = 16;
bool grouped_product_runs(const QuantMatrix& w);
Tensor qmatmul_grouped(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids);
// Rows of W for token ids (T,) int32 -> (T, cols) float32 (ids outside [0, rows) give zero rows).
Tensor qembedding(const QuantMatrix& w, const Tensor& ids);
// All of W as float32 (rows, cols): tests and small tensors only. dequantize_rows: rows [row0, row0 + n).
Tensor dequantize(const QuantMatrix& w);
Tensor dequantize_rows(const QuantMatrix& w, int64_t row0, int64_t n);

}  // namespace tg::llm
