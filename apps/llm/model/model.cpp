// The model's frame around its architecture's layers: loading, the embedding, output norm and head, and the
// positions, slots and padding of prefill chunks and decode batches.
#include "model/model.hpp"

#include <algorithm>

#include "model/blocks/norm.hpp"
#include "model/model_builder.hpp"
#include "tg/error.hpp"

namespace tg::llm {

namespace {

const Architecture& find_architecture(const GGUFFile& f) {
  const std::string arch = f.get_string("general.architecture");
  for (const Architecture& a : architectures())
    if (arch == a.name) return a;
  std::string list;
  for (const auto& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
  throw Error("tg-llm: " + f.path() + ": architecture '" + arch + "' is not supported (supported: " + list + ")");
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  auto file = std::make_shared<GGUFFile>(GGUFFile::open(path));
  return std::make_unique<Model>(std::move(file), opts);
}

Model::Model(std::shared_ptr<GGUFFile> file, const LoadOptions& opts) : file_(std::move(file)), device_(opts.device) {
  const Architecture& arch = find_architecture(*file_);
  cfg_ = read_common_config(*file_);
  const int slots = std::max(1, opts.slots);
  const int64_t max_ctx = std::max<int64_t>(1, std::min(opts.max_context, cfg_.context_length));
  state_ = std::make_unique<SequenceState>(slots, max_ctx, opts.kv, opts.ssm, device_);
  for (int b = 0; b < slots; ++b) {
    const std::string n = b == 0 ? "" : std::to_string(b);
    pos_vars_.emplace_back("start_pos" + n, 0, max_ctx - 1);
    base_vars_.emplace_back("slot_base" + n, 0, (slots - 1) * state_->rows_per_slot());
  }
  decode_rows_ = std::max(slots, opts.decode_rows);
  if (opts.decode_rows > 1 && opts.decode_rows <= max_ctx)
    chunk_pos_.emplace("chunk_pos", 0, max_ctx - opts.decode_rows);
  ModelBuilder b(file_, cfg_, *state_, device_, opts.max_score_bytes, opts.tp);
  const int64_t d = cfg_.d_model;
  // the embedding reads one row per token; a head tied to it reads all of it. Tensor-parallel, each rank's head
  // holds its share of the vocabulary (the head is a small model's largest matrix), its logits summed into place
  tp_ = opts.tp;
  head_ = tp_.share(cfg_.vocab, 1, file_->path() + ": the vocabulary of " + std::to_string(cfg_.vocab) + " tokens");
  const bool tied = !b.has("output.weight"), whole_head = head_.second - head_.first == cfg_.vocab;
  embed_ = std::make_unique<QuantMatrix>(b.matrix("token_embd.weight", cfg_.vocab, d, tied && whole_head ? 1.0 : 0.0));
  output_ =
      std::make_unique<QuantMatrix>(tied && whole_head ? *embed_
                                                       : b.matrix_rows(tied ? "token_embd.weight" : "output.weight",
                                                                       cfg_.vocab, d, head_.first, head_.second));
  out_norm_ = std::make_unique<Tensor>(b.vector("output_norm.weight", d));
  decoder_ = arch.build(b);
  step_bytes_ = b.step_bytes();
  if (device_.empty()) device_ = embed_->words.device();
}

Model::~Model() = default;

Tensor Model::run(const Tensor& ids, int64_t T, const std::vector<SeqPos>& seqs, const Tensor* last_row,
                  int64_t key_len, Head head, int64_t valid) {
  Tensor x = qembedding(*embed_, ids);
  if (decoder_.embed_scale != 1.0) x = x * decoder_.embed_scale;
  const Pass pass{T, seqs, key_len, valid > 0 ? valid : T, valid > 0};
  for (auto& layer : decoder_.layers) x = layer->forward(x, pass);
  // the row is picked by a product with a one-hot vector (data, not shape): one graph for every real length
  Tensor last = last_row ? last_row->matmul(x) : x;
  ProductInput out{rms_norm(last, *out_norm_, cfg_.norm_eps), nullptr};
  if (tp_.split()) {  // this rank's logits, in place among zeros, summed over the ranks: the whole row on every rank
    Tensor logits = tp_.sum(qmatmul(*output_, out).pad({{0, 0}, {head_.first, cfg_.vocab - head_.second}}));
    return head == Head::argmax ? logits.argmax(-1).cast(dtypes::int32) : logits;
  }
  return head == Head::argmax ? qargmax(*output_, out) : qmatmul(*output_, out);
}

Tensor Model::forward(const std::vector<int32_t>& tokens, int64_t start_pos, int slot, Logits which) {
  const int64_t T = static_cast<int64_t>(tokens.size()), max_ctx = max_context();
  if (T == 0) throw std::invalid_argument("tg-llm: forward of no tokens");
  if (start_pos < 0 || start_pos + T > max_ctx)
    throw Error("tg-llm: " + std::to_string(T) + " tokens at position " + std::to_string(start_pos) +
                " do not fit in the context of " + std::to_string(max_ctx) + " tokens (--max-context)");
  for (int32_t id : tokens)
    if (id < 0 || id >= cfg_.vocab)
      throw Error("tg-llm: token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(cfg_.vocab));
  if (slot < 0 || slot >= slots())
    throw std::invalid_argument("tg-llm: KV-cache slot " + std::to_string(slot) + " of " + std::to_string(slots()));
  const int64_t P = prefill_length(T, start_pos);
  // the position's range is what keeps [pos, pos + P) inside the cache, so each chunk length has its own variable
  const Variable var = P == 1 ? pos_vars_[0] : Variable("start_pos", 0, max_ctx - P);
  std::vector<int32_t> ids(tokens);
  ids.resize(static_cast<size_t>(P), tokens.back());
  std::vector<float> pick(static_cast<size_t>(P), 0.0f);
  pick[static_cast<size_t>(T - 1)] = 1.0f;
  Tensor last = Tensor::from_vector(pick, {1, P}, dtypes::float32, device_);
  const SeqPos at{base_vars_[0].bind(static_cast<int64_t>(slot) * state_->rows_per_slot()), var.bind(start_pos)};
  Tensor ids_t = Tensor::from_vector(ids, {P}, dtypes::int32, device_);
  if (which == Logits::every) {
    Tensor all = run(ids_t, P, {at}, nullptr, 0, Head::logits, T);
    return P == T ? all : all.shrink({{0, T}, {0, cfg_.vocab}});
  }
  return run(ids_t, P, {at}, P == 1 ? nullptr : &last, 0, Head::logits, T);
}

int64_t Model::prefill_length(int64_t n, int64_t start_pos) const {
  if (n <= 1) return n;
  const int64_t p = n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : (n + 63) / 64 * 64;
  return start_pos + p <= max_context() ? p : n;
}

SeqPos Model::decode_position(int b, int slot, int64_t pos) const {
  if (b < 0 || b >= slots() || slot < 0 || slot >= slots())
    throw std::invalid_argument("tg-llm: decode batch row " + std::to_string(b) + " / slot " + std::to_string(slot));
  return {base_vars_[static_cast<size_t>(b)].bind(static_cast<int64_t>(slot) * state_->rows_per_slot()),
          pos_vars_[static_cast<size_t>(b)].bind(pos)};
}

Tensor Model::decode(const Tensor& tokens, const std::vector<SeqPos>& seqs, int64_t key_len, Head head) {
  const int64_t B = tokens.shape()[0];
  if (B < 1 || static_cast<size_t>(B) != seqs.size())
    throw std::invalid_argument("tg-llm: decode of " + std::to_string(B) + " tokens and " +
                                std::to_string(seqs.size()) + " positions");
  for (const SeqPos& s : seqs)
    if (key_len > 0 && (s.pos.value() >= key_len || key_len > state_->rows_per_slot()))
      throw std::invalid_argument("tg-llm: decode key length " + std::to_string(key_len) + " for position " +
                                  std::to_string(s.pos.value()));
  return run(tokens, B, seqs, nullptr, key_len, head);
}

SeqPos Model::chunk_position(int slot, int64_t pos) const {
  if (!chunk_pos_ || slot < 0 || slot >= slots() || pos < 0 || pos > chunk_pos_->max())
    throw std::invalid_argument("tg-llm: no decode chunk at slot " + std::to_string(slot) + ", position " +
                                std::to_string(pos) + " (LoadOptions::decode_rows " + std::to_string(decode_rows_) +
                                ")");
  return {base_vars_[0].bind(static_cast<int64_t>(slot) * state_->rows_per_slot()), chunk_pos_->bind(pos)};
}

Tensor Model::decode_chunk(const Tensor& tokens, const SeqPos& at, int64_t key_len) {
  const int64_t n = tokens.shape()[0];
  if (n < 1 || n > decode_rows_ || at.pos.value() + n > key_len || key_len > state_->rows_per_slot())
    throw std::invalid_argument("tg-llm: a decode chunk of " + std::to_string(n) + " tokens at " +
                                std::to_string(at.pos.value()) + " over " + std::to_string(key_len) + " keys");
  return run(tokens, n, {at}, nullptr, key_len, Head::argmax);
}

int64_t Model::decode_key_length(int64_t pos) const {
  return std::min(state_->rows_per_slot(), (pos + 1 + 127) / 128 * 128);
}

}  // namespace tg::llm
