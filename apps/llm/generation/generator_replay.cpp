// A follower's side of tensor parallelism (lockstep.hpp): the leader's Generator calls, each run as the leader ran
// it, on this rank's share of the model, with the leader's pending tokens (a follower samples nothing).
#include <array>
#include <functional>

#include "generation/generator.hpp"
#include "tg/error.hpp"

namespace tg::llm {

namespace {

// A call's arguments, read in order.
struct Args {
  const std::vector<int64_t>& w;
  size_t at = 0;
  int64_t next() {
    if (at >= w.size()) throw Error("tg-llm: a lockstep call from rank 0 is missing arguments");
    return w[at++];
  }
  int slot() { return static_cast<int>(next()); }
  std::vector<int32_t> rest() {
    std::vector<int32_t> t(w.begin() + static_cast<ptrdiff_t>(at), w.end());
    at = w.size();
    return t;
  }
};

std::optional<int32_t> token(int64_t t) {
  return t < 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(t));
}

}  // namespace

void Generator::replay(Lockstep& lockstep) {
  using Op = LockstepCall::Op;
  // each call as generator.cpp sends it (Announce): op -> how to run it here
  const std::array<std::function<void(Args&)>, 8> run{
      [](Args&) {},      // keepalive
      [](Args&) {},      // end
      [this](Args& a) {  // prefill: slot, top_n (-1: not scored), prompt
        const int slot = a.slot();
        PromptScores scores{a.next(), {}};
        prefill(a.rest(), slot, scores.top_n >= 0 ? &scores : nullptr);
      },
      [this](Args& a) {  // next_batch: n, then n slots, n logits flags, n pending tokens
        const size_t n = static_cast<size_t>(a.next());
        std::vector<int> slots;
        std::vector<bool> logits;
        for (size_t i = 0; i < n; ++i) slots.push_back(a.slot());
        for (size_t i = 0; i < n; ++i) logits.push_back(a.next() != 0);
        for (size_t i = 0; i < n; ++i) seq(slots[i]).pending = token(a.next());
        step(slots, logits, nullptr);
      },
      [this](Args& a) {  // next_drafted: rows, slot, pending token, draft
        const int64_t rows = a.next();
        const int slot = a.slot();
        seq(slot).pending = token(a.next());
        next_drafted(a.rest(), rows, slot);
      },
      [this](Args& a) {  // follow: rows, slot, context
        const int64_t rows = a.next();
        const int slot = a.slot();
        follow(a.rest(), rows, slot);
      },
      [this](Args& a) { reset(a.slot()); },
      [this](Args& a) {
        const int from = a.slot();
        fork(from, a.slot());
      },
  };
  bool failed = false;  // this rank's last call threw (what: `why`)
  std::string why;
  for (;;) {
    const LockstepCall call = lockstep.receive();
    if (call.leader_failed != failed)
      throw Error("tg-llm: rank " + std::to_string(lockstep.rank()) + " no longer matches rank 0: " +
                  (failed ? "its last call failed (" + why + ") where rank 0's did not"
                          : "rank 0's last call failed where its own did not"));
    if (call.op == Op::end) return;
    const auto op = static_cast<size_t>(call.op);
    if (op >= run.size())
      throw Error("tg-llm: rank 0 sent lockstep call " + std::to_string(op) + ", which this rank does not know");
    try {
      Args args{call.args};
      run[op](args);
      failed = false;
    } catch (const std::exception& e) {
      failed = true;
      why = e.what();
    }
  }
}

}  // namespace tg::llm
