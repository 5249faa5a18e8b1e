// Generator calls mirrored over a tensor-parallel group (ranks.hpp). The leader (rank 0) decides everything that is
// not the same on every rank: the chat's input, the server's requests and when each runs, the sampled tokens, the
// choices made from measured times. It sends each Generator call that runs the model to the other ranks before it
// runs it, and they replay the call on their share of the model (Generator::replay), so that every collective inside
// meets its peers. A follower waits for the next call under the communicator's bound (TG_COMM_TIMEOUT_S): a leader
// waiting for work (a chat's next line, a server's next request) sends keepalives often enough.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tg/comm.hpp"

namespace tg::llm {

// One Generator call: what it is and its integer arguments (slots, row counts, token ids).
struct LockstepCall {
  enum class Op : int64_t { keepalive, end, prefill, next_batch, next_drafted, follow, reset, fork };
  Op op = Op::keepalive;
  std::vector<int64_t> args;
  bool leader_failed = false;  // the leader's previous call threw (set by send: a follower compares it with its own)
};

class Lockstep {
 public:
  explicit Lockstep(Communicator& comm) : comm_(comm) {}
  bool leader() const { return comm_.rank() == 0; }
  int rank() const { return comm_.rank(); }

  // The leader: `call` to every other rank; held(): the lock a call keeps from its send until it returns, so that a
  // keepalive from another thread (the server's) never comes between a call and the collectives it runs.
  void send(LockstepCall call);
  std::unique_lock<std::mutex> held() { return std::unique_lock<std::mutex>(mu_); }
  void failed(bool f) { last_failed_ = f; }  // the outcome of the call just run, sent with the next one
  // A keepalive when nothing was sent for a quarter of the followers' bound; at once if `now`. Skipped while a call
  // runs (it talks to them anyway).
  void keepalive(bool now = false);
  void end() { send({LockstepCall::Op::end, {}}); }  // the followers' replay returns
  // How often a leader waiting for work calls keepalive(): an eighth of the bound.
  std::chrono::milliseconds keepalive_period() const;

  // A follower: the leader's next call.
  LockstepCall receive();

 private:
  Communicator& comm_;
  std::mutex mu_;
  bool last_failed_ = false;
  std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();
};

}  // namespace tg::llm
