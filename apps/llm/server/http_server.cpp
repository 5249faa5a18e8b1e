// Routes, authentication, SSE streaming and error bodies. A handler thread prepares the prompt (template and
// tokenizer are read-only), submits a job and relays its events; a failed write means the client is gone and
// cancels the job, which the engine notices before its next token.
#include "server/http_server.hpp"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "chat/chat_prompt.hpp"
#include "server/anthropic_api.hpp"
#include "server/reply_format.hpp"
#include "server/responses_api.hpp"

namespace tg::llm::server {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

// In the shape of the API the path belongs to: Anthropic's for /v1/messages (its clients read only that), else
// OpenAI's.
void send_error(httplib::Response& res, const ApiError& e, const std::string& path) {
  send_json(res, e.status, path.rfind("/v1/messages", 0) == 0 ? anthropic_error(e) : e.body());
}

// Known routes and the methods each takes: other methods get 405, other paths 404.
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"},
                             {"/v1/models", "GET"},
                             {"/v1/chat/completions", "POST"},
                             {"/v1/completions", "POST"},
                             {"/chat/completions", "POST"},
                             {"/completions", "POST"},
                             {"/tokenize", "POST"},
                             {"/detokenize", "POST"},
                             {"/v1/messages", "POST"},
                             {"/v1/responses", "POST"}};

enum class Api { chat, completion, messages, responses };

// OpenAI's replies (ReplyBuilder) as server-sent events: "data: JSON" frames, then "data: [DONE]".
class OpenAIReply : public ReplyFormat {
 public:
  OpenAIReply(bool chat, std::string model, bool logprobs, std::string echo, bool include_usage, int n)
      : b_(chat, std::move(model), logprobs, std::move(echo), n), include_usage_(include_usage) {}
  std::vector<std::string> open() override { return frames_of(b_.first_chunks()); }
  std::vector<std::string> frames(const JobEvent& e) override { return frames_of(b_.chunks(e)); }
  std::vector<std::string> close() override {
    std::vector<std::string> out = frames_of(b_.final_chunks(include_usage_));
    out.push_back("data: [DONE]\n\n");
    return out;
  }
  void absorb(const JobEvent& e) override { b_.absorb(e); }
  json reply() override { return b_.reply(); }
  std::vector<std::string> failed(const ApiError& e) override { return {sse(e.body()), "data: [DONE]\n\n"}; }

 private:
  static std::vector<std::string> frames_of(const std::vector<json>& chunks) {
    std::vector<std::string> out;
    for (const json& c : chunks) out.push_back(sse(c));
    return out;
  }
  ReplyBuilder b_;
  bool include_usage_;
};

class Service {
 public:
  Service(Generator& gen, const Tokenizer& tok, const ServeOptions& o) : gen_(gen), tok_(tok), opts_(o) {}

  void install(httplib::Server& svr) {
    svr.set_payload_max_length(opts_.max_body_bytes);
    svr.set_read_timeout(opts_.timeout_s, 0);
    svr.set_write_timeout(opts_.timeout_s, 0);
    svr.set_keep_alive_timeout(5);
    const size_t threads =
        opts_.max_queued + 16;  // every queued request holds a thread; the rest serve /health, errors
    svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return gate(req, res); });
    // errors httplib itself answers (a body over the limit: 413, a malformed request line: 400) get an API body
    svr.set_error_handler(
        httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string what = res.status == 413
                                 ? "the request body is larger than " + std::to_string(opts_.max_body_bytes) + " bytes"
                                 : "HTTP error " + std::to_string(res.status);
          send_error(res, ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error", what),
                     req.path);
          return httplib::Server::HandlerResponse::Handled;
        }));
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string msg = "internal error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        msg = e.what();
      } catch (...) {}
      send_json(res, 500, ApiError(500, "server_error", msg).body());
    });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(chat_page_html(), "text/html; charset=utf-8");
    });
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, engine_ ? 200 : 503, {{"status", engine_ ? "ready" : "loading"}});
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics(), "text/plain; version=0.0.4");
    });
    svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
    });
    svr.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1] == opts_.defaults.model_id)
        send_json(res, 200, model_json());
      else
        send_error(
            res,
            ApiError(404, "invalid_request_error", "The model '" + std::string(req.matches[1]) + "' does not exist",
                     "model", "model_not_found"),
            req.path);
    });
    for (const char* p : {"/v1/chat/completions", "/chat/completions"})
      svr.Post(p, [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::chat); });
    for (const char* p : {"/v1/completions", "/completions"})
      svr.Post(p, [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::completion); });
    svr.Post("/v1/messages",
             [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::messages); });
    svr.Post("/v1/responses",
             [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::responses); });
    svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      with_body(req, res, [this](const json& b) { return tokenize(b); });
    });
    svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      with_body(req, res, [this](const json& b) { return detokenize(b); });
    });
    auto fallback = [](const httplib::Request& req, httplib::Response& res) {
      std::string allow;
      for (const Route& r : kRoutes)
        if (req.path == r.path) allow += (allow.empty() ? "" : ", ") + std::string(r.method);
      if (allow.empty())
        return send_error(res, ApiError(404, "invalid_request_error", "no route " + req.path), req.path);
      res.set_header("Allow", allow);
      send_error(res,
                 ApiError(405, "invalid_request_error",
                          req.method + " is not allowed on " + req.path + " (allowed: " + allow + ")"),
                 req.path);
    };
    svr.Get(".*", fallback);
    svr.Post(".*", fallback);
    svr.Put(".*", fallback);
    svr.Patch(".*", fallback);
    svr.Delete(".*", fallback);
    svr.Options(".*", fallback);
  }

  void ready() {
    owned_ = std::make_unique<Engine>(gen_, tok_, opts_.max_queued, opts_.lookup);
    engine_ = owned_.get();
  }
  void stop() {
    if (Engine* e = engine_) e->stop();
  }

 private:
  // Authentication, then "still loading"; / and /health are open to all.
  httplib::Server::HandlerResponse gate(const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    // OpenAI's clients send the key as a bearer token, Anthropic's as x-api-key
    if (!opts_.api_key.empty() && req.get_header_value("Authorization") != "Bearer " + opts_.api_key &&
        req.get_header_value("x-api-key") != opts_.api_key) {
      send_error(res,
                 ApiError(401, "invalid_request_error", "missing or wrong API key: send 'Authorization: Bearer <key>'",
                          {}, "invalid_api_key"),
                 req.path);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!engine_ && req.path != "/metrics") {
      send_error(res, ApiError(503, "unavailable_error", "the model is still loading; retry when /health says ready"),
                 req.path);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  json model_json() const {
    return {{"id", opts_.defaults.model_id},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "tg"},
            {"meta", {{"n_ctx", gen_.model().max_context()}, {"architecture", gen_.model().config().arch}}}};
  }

  std::string metrics() const {
    Engine* e = engine_;
    EngineMetrics m = e ? e->metrics() : EngineMetrics{};
    std::string out;
    auto put = [&](const char* name, const char* type, const char* help, uint64_t v) {
      out += std::string("# HELP tg_llm_") + name + " " + help + "\n# TYPE tg_llm_" + name + " " + type + "\ntg_llm_" +
             name + " " + std::to_string(v) + "\n";
    };
    put("requests_total", "counter", "generation requests finished", m.requests);
    put("requests_interrupted_total", "counter", "requests whose client went away mid-generation", m.interrupted);
    put("requests_rejected_total", "counter", "requests refused because the queue was full", m.rejected);
    put("requests_failed_total", "counter", "requests that failed in the model", m.failed);
    put("prompt_tokens_total", "counter", "prompt tokens of finished requests", m.prompt_tokens);
    put("prompt_tokens_cached_total", "counter", "prompt tokens reused from the KV cache instead of prefilled",
        m.cached_tokens);
    put("tokens_generated_total", "counter", "tokens generated", m.generated_tokens);
    put("draft_tokens_total", "counter",
        "tokens guessed by prompt lookup or the draft model (--lookup-ngram, --draft-model)", m.drafted_tokens);
    put("draft_tokens_accepted_total", "counter", "guessed tokens the model confirmed", m.accepted_tokens);
    put("requests_queued", "gauge", "requests waiting", m.queued);
    put("requests_running", "gauge", "requests generating", m.running);
    return out;
  }

  // A JSON object body in, fn's reply out (or its ApiError).
  template <typename Fn>
  void with_body(const httplib::Request& req, httplib::Response& res, Fn fn) {
    try {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) throw invalid_request("the request body must be a JSON object");
      send_json(res, 200, fn(body));
    } catch (const ApiError& e) {
      send_error(res, e, req.path);
    }
  }

  // llama.cpp's server's /tokenize: {"content", "add_special" (false), "with_pieces" (false)} -> {"tokens"}
  json tokenize(const json& b) const {
    auto it = b.find("content");
    if (it == b.end() || !it->is_string()) throw invalid_request("'content' must be a string", "content");
    for (const char* flag : {"add_special", "with_pieces"})
      if (b.contains(flag) && !b[flag].is_boolean())
        throw invalid_request(std::string("'") + flag + "' must be a boolean", flag);
    const bool special = b.value("add_special", false), pieces = b.value("with_pieces", false);
    json out = json::array();
    for (int32_t id : tok_.encode(it->get<std::string>(), special, true))
      out.push_back(pieces ? json{{"id", id}, {"piece", tok_.token_utf8(id)}} : json(id));
    return {{"tokens", out}};
  }

  // /detokenize: {"tokens": [ids]} -> {"content"} (control tokens such as BOS render as nothing)
  json detokenize(const json& b) const {
    auto it = b.find("tokens");
    if (it == b.end() || !it->is_array()) throw invalid_request("'tokens' must be a list of token ids", "tokens");
    std::vector<int32_t> ids;
    for (const json& t : *it) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= static_cast<int64_t>(tok_.n_tokens()))
        throw invalid_request(
            "'tokens' must be ids of this model's vocabulary (0 to " + std::to_string(tok_.n_tokens() - 1) + ")",
            "tokens");
      ids.push_back(t.get<int32_t>());
    }
    return {{"content", tok_.decode(ids)}};
  }

  JobSpec job_spec(const GenerationRequest& r, const char* kind) const {
    JobSpec s;
    s.kind = kind;
    s.sampling = r.sampling;
    s.max_tokens = r.max_tokens;
    s.output.stop = r.stop;
    s.constraint = r.constraint;
    s.n = r.n;
    return s;
  }

  void generate(const httplib::Request& req, httplib::Response& res, Api api) {
    const bool chat = api != Api::completion;
    try {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded()) throw invalid_request("the request body is not valid JSON");
      const auto ordered = nlohmann::ordered_json::parse(req.body);
      JobSpec spec;
      GenerationRequest common;
      std::string echo;
      if (chat) {
        ChatRequest r = api == Api::messages    ? parse_messages_request(body, ordered, opts_.defaults)
                        : api == Api::responses ? parse_responses_request(body, ordered, opts_.defaults)
                                                : parse_chat_request(body, ordered, opts_.defaults);
        ChatPrompt p;
        try {
          p = chat_prompt(gen_.model(), tok_, r.messages, r.tools, r.template_kwargs);
        } catch (const Error& e) {
          throw invalid_request(e.what(), "chat_template_kwargs");
        }
        if (!p.warning.empty()) std::fprintf(stderr, "tg-llm: warning: %s\n", p.warning.c_str());
        spec = job_spec(r, "chat");
        spec.prompt = std::move(p.tokens);
        // the template opened the reasoning block itself (Qwen3 with enable_thinking, DeepSeek-R1)
        std::string_view t = p.text;
        while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
        spec.output.in_reasoning = t.ends_with("<think>");
        // a constrained reply is the answer, not reasoning: the open block closes first, empty
        if (spec.output.in_reasoning && spec.constraint)
          spec.constraint->before = "</think>\n\n" + spec.constraint->before;
        spec.output.tools = !r.constraint || r.tool_call;  // a JSON reply is content, even where it looks like a call
        common = r;
      } else {
        CompletionRequest r = parse_completion_request(body, ordered, opts_.defaults);
        spec = job_spec(r, "completion");
        if (r.prompt_ids.empty()) {
          spec.prompt = tok_.encode(r.prompt, true, true);
        } else {
          for (int32_t id : r.prompt_ids)
            if (id >= static_cast<int32_t>(tok_.n_tokens()))
              throw invalid_request(
                  "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(tok_.n_tokens()),
                  "prompt");
          spec.prompt = r.prompt_ids;
        }
        spec.output.reasoning = spec.output.tools = false;  // raw text in, raw text out
        if (r.echo) echo = r.prompt_ids.empty() ? r.prompt : tok_.decode(r.prompt_ids);
        spec.score_prompt = r.echo;
        spec.prompt_only = r.prompt_only;
        common = r;
      }
      const int64_t ctx = gen_.model().max_context();
      if (spec.prompt.empty()) throw invalid_request("the prompt is empty", chat ? "messages" : "prompt");
      if (static_cast<int64_t>(spec.prompt.size()) >= ctx)
        throw ApiError(400, "invalid_request_error",
                       "the prompt has " + std::to_string(spec.prompt.size()) + " tokens; this server's context is " +
                           std::to_string(ctx) + " tokens (--max-context) and the reply needs at least one",
                       chat ? "messages" : "prompt", "context_length_exceeded");
      std::shared_ptr<Job> job;
      try {
        Engine* engine = engine_;
        job = engine->submit(std::move(spec));
      } catch (const QueueFull& e) {
        throw ApiError(503, "unavailable_error", e.what());
      } catch (const std::invalid_argument& e) {
        throw invalid_request(e.what(), "n");
      }
      const int64_t prompt_tokens = static_cast<int64_t>(job->spec().prompt.size());
      std::shared_ptr<ReplyFormat> b;
      if (api == Api::messages)
        b = messages_reply(body.value("model", opts_.defaults.model_id), prompt_tokens);
      else if (api == Api::responses)
        b = responses_reply(opts_.defaults.model_id);
      else
        b = std::make_shared<OpenAIReply>(chat, opts_.defaults.model_id, common.sampling.logprobs >= 0, echo,
                                          common.include_usage, common.n);
      if (common.stream)
        stream(res, job, b);
      else
        reply(res, job, *b);
    } catch (const ApiError& e) {
      send_json(res, e.status, api == Api::messages ? anthropic_error(e) : e.body());
    }
  }

  // (a job of n choices is complete at its n-th Done)
  void reply(httplib::Response& res, const std::shared_ptr<Job>& job, ReplyFormat& b) {
    for (int done = 0;;) {
      auto e = job->next(std::chrono::milliseconds(1000));
      if (!e) continue;
      if (e->kind == JobEvent::Kind::Failed) {
        job->cancel();  // the other choices stop too
        return send_json(res, 500, b.error_body(ApiError(500, "server_error", e->error)));
      }
      b.absorb(*e);
      if (e->kind == JobEvent::Kind::Done && ++done == job->spec().n) return send_json(res, 200, b.reply());
    }
  }

  void stream(httplib::Response& res, const std::shared_ptr<Job>& job, std::shared_ptr<ReplyFormat> b) {
    auto started = std::make_shared<bool>(false);
    auto done = std::make_shared<int>(0);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, b, started, done](size_t, httplib::DataSink& sink) {
          auto send = [&](const std::vector<std::string>& frames) {
            for (const auto& f : frames)
              if (!sink.write(f.data(), f.size())) return false;
            return true;
          };
          bool ok = true, finished = false;
          if (!*started) {
            *started = true;
            ok = send(b->open());
          }
          auto e = ok ? job->next(std::chrono::milliseconds(1000)) : std::nullopt;
          if (ok && !e) {  // nothing yet (queued or prefilling): a comment line finds out whether the client is there
            static const char ping[] = ": waiting\n\n";
            ok = sink.write(ping, sizeof ping - 1);
          } else if (ok && e->kind == JobEvent::Kind::Failed) {
            ok = send(b->failed(ApiError(500, "server_error", e->error)));
            job->cancel();  // the other choices stop too
            finished = true;
          } else if (ok) {
            ok = send(b->frames(*e));
            if (ok && (e->kind != JobEvent::Kind::Done || ++*done < job->spec().n)) return true;
            if (ok) ok = send(b->close());
            finished = true;
          }
          if (!ok) {
            job->cancel();
            return false;
          }
          if (finished) sink.done();
          return true;
        },
        [job](bool success) {
          if (!success) job->cancel();
        });
  }

  Generator& gen_;
  const Tokenizer& tok_;
  const ServeOptions& opts_;
  std::unique_ptr<Engine> owned_;
  std::atomic<Engine*> engine_{nullptr};  // set once warmed up; handler threads read it
};

}  // namespace

namespace {
sigset_t stop_signal_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
}  // namespace

void block_stop_signals() {
  sigset_t s = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

int serve(Generator& gen, const Tokenizer& tok, const ServeOptions& opts, const std::function<void()>& warm_up) {
  // SIGINT / SIGTERM are taken by one thread (blocked everywhere else, so httplib's threads never see them)
  block_stop_signals();
  sigset_t stop_signals = stop_signal_set();
  signal(SIGPIPE, SIG_IGN);

  httplib::Server svr;
  Service service(gen, tok, opts);
  service.install(svr);
  int port =
      opts.port == 0 ? svr.bind_to_any_port(opts.host) : (svr.bind_to_port(opts.host, opts.port) ? opts.port : -1);
  if (port < 0)
    throw Error("tg-llm: cannot listen on " + opts.host + ":" + std::to_string(opts.port) +
                " (in use, or not an address of this host)");
  std::fprintf(stderr, "tg-llm: listening on http://%s:%d (loading)\n", opts.host.c_str(), port);
  std::thread listener([&] { svr.listen_after_bind(); });
  std::atomic<bool> warmed{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "\ntg-llm: %s, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
    if (!warmed) std::_Exit(128 + sig);  // warm-up cannot be interrupted cleanly; nothing is half-written
    service.stop();  // handlers waiting on jobs get their last event, so the server's threads can finish
    svr.stop();
  });
  warm_up();
  service.ready();
  warmed = true;
  std::fprintf(stderr, "tg-llm: ready: http://%s:%d/ (chat page), OpenAI API at http://%s:%d/v1\n", opts.host.c_str(),
               port, opts.host.c_str(), port);
  listener.join();
  pthread_kill(stopper.native_handle(), SIGTERM);  // if the listener ended on its own, the stopper still waits
  stopper.join();
  return 0;
}

}  // namespace tg::llm::server
