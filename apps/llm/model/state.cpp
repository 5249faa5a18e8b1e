#include "model/state.hpp"

#include "tg/custom_kernel.hpp"

namespace tg::llm {

SequenceState::SequenceState(int slots, int64_t max_context, KvType kv, DType recurrent, std::string device)
    : slots_(slots),
      max_ctx_(max_context),
      rows_((max_context + 127) / 128 * 128),
      kv_(kv),
      recurrent_dtype_(recurrent),
      device_(std::move(device)),
      key_index_(Tensor::arange(0, static_cast<double>(rows_), 1, dtypes::int32, device_).contiguous().realize()),
      copy_from_("copy_from", 0, (slots - 1) * rows_),
      copy_to_("copy_to", 0, (slots - 1) * rows_) {}

void SequenceState::copy_slot(int from, int to) {
  if (from < 0 || to < 0 || from >= slots_ || to >= slots_ || from == to)
    throw std::invalid_argument("tg-llm: no copy from slot " + std::to_string(from) + " to slot " + std::to_string(to));
  for (KvCache& kv : kv_caches_) kv.copy(copy_from_.bind(from * rows_), copy_to_.bind(to * rows_), rows_);
  if (has_recurrent_state()) restore(to, checkpoint(from));
}

const Tensor& SequenceState::add_recurrent_state(int64_t rows, int64_t width) {
  return recurrent_.emplace_back(
      Tensor::zeros({slots_ * rows, width}, recurrent_dtype_, device_).contiguous().realize());
}

Tensor SequenceState::sequence_table(const std::vector<SeqPos>& seqs, int64_t valid) const {
  std::vector<Tensor> values;
  for (const SeqPos& s : seqs) {
    for (const BoundVariable* v : {&s.base, &s.pos})
      values.push_back(Tensor::from_variable(*v, device_).cast(dtypes::int32).reshape({1}));
    values.push_back(Tensor::full({1}, static_cast<double>(seqs.size() == 1 ? valid : 1), dtypes::int32, device_));
  }
  return Tensor::cat(values, 0).reshape({static_cast<int64_t>(seqs.size()), 3}).contiguous();
}

// Copies and restores are kernels of their own: a slice of a realized tensor may be a view of it (one slot: the
// whole state), which would follow the live state instead of keeping this point of it.
SequenceState::Checkpoint SequenceState::checkpoint(int slot) const {
  Checkpoint c;
  for (const Tensor& s : recurrent_) {
    const int64_t rows = s.shape()[0] / slots_, n = rows * s.shape()[1];
    CustomKernel k("state_checkpoint");
    KExpr e = k.range(n, Axis::GLOBAL);
    k.run(k.store(k.buffer(0, s.dtype()), e,
                  k.load(k.buffer(1, s.dtype()), k.constant(static_cast<double>(slot * n), e.dtype()) + e)));
    k.parallel();
    c.parts.push_back(k({{{rows, s.shape()[1]}, s.dtype()}}, {s})[0].realize());
  }
  return c;
}

void SequenceState::restore(int slot, const Checkpoint& c) {
  if (c.parts.size() != recurrent_.size()) throw std::invalid_argument("tg-llm: a checkpoint of another model's state");
  for (size_t i = 0; i < recurrent_.size(); ++i) {
    const Tensor& s = recurrent_[i];
    const int64_t rows = s.shape()[0] / slots_, n = rows * s.shape()[1];
    // the slot's rows overwritten in place (the state tensor stays the one the layers' kernels hold)
    CustomKernel k("state_restore");
    KExpr e = k.range(n, Axis::GLOBAL);
    k.run(k.store(k.buffer(1, s.dtype()), k.constant(static_cast<double>(slot * n), e.dtype()) + e,
                  k.load(k.buffer(0, s.dtype()), e)));
    k.parallel();
    k({}, {c.parts[i], s});
  }
}

KvCache& SequenceState::add_kv_cache(int64_t width) {
  return kv_caches_.emplace_back(width, slots_ * rows_, kv_, device_);
}

}  // namespace tg::llm
