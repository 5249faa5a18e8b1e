// One job at a time on the model (its KV cache holds one sequence); the cached prefix of the previous job is
// reused by Generator::prefill. Each job ends with exactly one Done or Failed event and one log line.
#include "server/engine.hpp"

#include <cstdio>

namespace tg::llm::server {

void Job::push(JobEvent e) {
  {
    std::lock_guard<std::mutex> l(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

std::optional<JobEvent> Job::next(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_for(l, wait, [&] { return !events_.empty(); })) return std::nullopt;
  JobEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

Engine::Engine(Generator& gen, Tokenizer tok, size_t max_queued)
    : gen_(gen), tok_(std::move(tok)), max_queued_(max_queued), thread_([this] { worker(); }) {}

Engine::~Engine() {
  stop();
  thread_.join();
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    if (current_) current_->cancel();
    for (auto& j : queue_) {
      j->cancel();
      j->push({JobEvent::Kind::Failed, {}, {}, {}, "the server is shutting down"});
    }
    queue_.clear();
  }
  cv_.notify_all();
}

std::shared_ptr<Job> Engine::submit(JobSpec spec) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) throw QueueFull("the server is shutting down");
  if (queue_.size() >= max_queued_) {
    ++totals_.rejected;
    throw QueueFull("the server is busy: " + std::to_string(queue_.size()) + " requests are already waiting (--queue); retry later");
  }
  auto job = std::make_shared<Job>(std::move(spec), next_id_++);
  queue_.push_back(job);
  cv_.notify_one();
  return job;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> l(mu_);
  EngineMetrics m = totals_;
  m.queued = queue_.size();
  m.busy = current_ != nullptr;
  return m;
}

void Engine::worker() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = current_ = queue_.front();
      queue_.pop_front();
    }
    run(*job);
    std::lock_guard<std::mutex> l(mu_);
    current_.reset();
  }
}

void Engine::run(Job& job) {
  using clock = std::chrono::steady_clock;
  const JobSpec& spec = job.spec();
  const auto t0 = clock::now();
  Usage usage{static_cast<int64_t>(spec.prompt.size()), 0, 0};
  std::string finish = "stop", error;
  double prefill_s = 0, decode_s = 0;
  bool interrupted = job.cancelled();
  try {
    if (!interrupted) {
      auto pre = gen_.prefill(spec.prompt);
      usage.cached_tokens = pre.reused;
      Sampler sampler(spec.sampling);
      StreamDecoder dec(tok_);
      OutputParser parser(spec.output);
      auto send = [&](std::vector<OutputEvent> evs) {
        for (auto& e : evs) job.push({JobEvent::Kind::Output, std::move(e), {}, {}, {}});
      };
      const int64_t room = gen_.model().max_context() - static_cast<int64_t>(spec.prompt.size());
      const int64_t budget = spec.max_tokens > 0 ? std::min(spec.max_tokens, room) : room;
      finish = "length";
      auto t1 = clock::now();
      for (int64_t n = 0; n < budget; ++n) {
        if (job.cancelled()) {
          interrupted = true;
          break;
        }
        int32_t id = gen_.next(sampler);  // the first call also computes the prompt's logits
        if (n == 0) prefill_s = std::chrono::duration<double>(clock::now() - t1).count();
        if (tok_.is_end_of_generation(id)) {
          finish = "stop";
          break;
        }
        ++usage.completion_tokens;
        send(parser.feed(dec.push(id)));
        if (parser.stopped()) {
          finish = "stop";
          break;
        }
      }
      if (!parser.stopped()) send(parser.feed(dec.finish()));
      send(parser.finish());
      if (finish == "stop" && parser.tool_calls() > 0) finish = "tool_calls";
      prefill_s += std::chrono::duration<double>(t1 - t0).count();
      decode_s = std::chrono::duration<double>(clock::now() - t0).count() - prefill_s;
    }
  } catch (const std::exception& e) {
    error = e.what();
    gen_.reset();  // a failure mid-prefill leaves the cache in an unknown state
  }
  if (error.empty())
    job.push({JobEvent::Kind::Done, {}, finish, usage, {}});
  else
    job.push({JobEvent::Kind::Failed, {}, {}, usage, error});
  const double total = std::chrono::duration<double>(clock::now() - t0).count();
  const int64_t fresh = usage.prompt_tokens - usage.cached_tokens;
  std::fprintf(stderr,
               "tg-llm: request %llu %s: cached %lld, new %lld, prefill %.1f tok/s, decode %.1f tok/s, %lld tokens, %.2f s total, %s\n",
               static_cast<unsigned long long>(job.id()), spec.kind.c_str(), static_cast<long long>(usage.cached_tokens),
               static_cast<long long>(fresh), fresh / std::max(prefill_s, 1e-9),
               usage.completion_tokens > 1 ? (usage.completion_tokens - 1) / std::max(decode_s, 1e-9) : 0.0,
               static_cast<long long>(usage.completion_tokens), total,
               interrupted ? "interrupted" : !error.empty() ? ("failed: " + error).c_str() : ("finish " + finish).c_str());
  std::lock_guard<std::mutex> l(mu_);
  ++totals_.requests;
  totals_.interrupted += interrupted;
  totals_.failed += !error.empty();
  totals_.prompt_tokens += static_cast<uint64_t>(usage.prompt_tokens);
  totals_.cached_tokens += static_cast<uint64_t>(usage.cached_tokens);
  totals_.generated_tokens += static_cast<uint64_t>(usage.completion_tokens);
}

}  // namespace tg::llm::server
