#include "generation/lockstep.hpp"

#include <algorithm>

#include "tg/error.hpp"

namespace tg::llm {

// On the wire: the word count, then [op, leader_failed, args...], as int64 (send/recv want each size known).
void Lockstep::send(LockstepCall call) {
  std::vector<int64_t> words{static_cast<int64_t>(call.op), last_failed_ ? 1 : 0};
  words.insert(words.end(), call.args.begin(), call.args.end());
  const int64_t n = static_cast<int64_t>(words.size());
  for (int r = 1; r < comm_.size(); ++r) {
    comm_.send(&n, sizeof n, r);
    comm_.send(words.data(), words.size() * sizeof(int64_t), r);
  }
  last_sent_ = std::chrono::steady_clock::now();
}

LockstepCall Lockstep::receive() {
  int64_t n = 0;
  comm_.recv(&n, sizeof n, 0);
  if (n < 2)
    throw Error("tg-llm: " + comm_.describe() + ": a lockstep call of " + std::to_string(n) + " words from rank 0");
  std::vector<int64_t> words(static_cast<size_t>(n));
  comm_.recv(words.data(), words.size() * sizeof(int64_t), 0);
  return {static_cast<LockstepCall::Op>(words[0]), std::vector<int64_t>(words.begin() + 2, words.end()), words[1] != 0};
}

std::chrono::milliseconds Lockstep::keepalive_period() const {
  return std::chrono::milliseconds(std::max<int64_t>(10, static_cast<int64_t>(comm_timeout_seconds() * 1000 / 8)));
}

void Lockstep::keepalive(bool now) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (now || std::chrono::steady_clock::now() - last_sent_ >= 2 * keepalive_period())
    send({LockstepCall::Op::keepalive, {}});
}

}  // namespace tg::llm
