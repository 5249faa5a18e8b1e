#include "model/state.hpp"

namespace tg::llm {

SequenceState::SequenceState(int slots, int64_t max_context, KvType kv, std::string device)
    : slots_(slots),
      max_ctx_(max_context),
      rows_((max_context + 127) / 128 * 128),
      kv_(kv),
      device_(std::move(device)),
      key_index_(Tensor::arange(0, static_cast<double>(rows_), 1, dtypes::int32, device_).contiguous().realize()) {}

KvCache& SequenceState::add_kv_cache(int64_t width) { return kv_caches_.emplace_back(width, slots_ * rows_, kv_, device_); }

}  // namespace tg::llm
