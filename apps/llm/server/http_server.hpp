// `tg-llm --serve`: OpenAI's /v1/chat/completions, /v1/completions and /v1/models over cpp-httplib, plus the chat
// page at /, /health and Prometheus-style /metrics. Requests queue for the one Engine that runs the model.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "generation/generator.hpp"
#include "server/openai_api.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tg::llm::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (printed)
  std::string api_key;               // non-empty: every route but / and /health needs "Authorization: Bearer KEY"
  size_t max_queued = 16;            // requests waiting beyond the one running; more get 503
  size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  int timeout_s = 30;                // reading a request / writing a reply; a stalled client is dropped after this
  RequestDefaults defaults;
  LookupOptions lookup;
};

// Binds, then runs `warm_up` while /health answers "loading", then serves until SIGINT or SIGTERM. Returns the
// process exit code. Errors binding (port in use) are tg::Error.
int serve(Generator& gen, const Tokenizer& tok, const ServeOptions& opts, const std::function<void()>& warm_up);

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts later: serve() takes them in one
// thread of its own. Call before anything starts threads (plugins, TBB), so no other thread is killed by them.
void block_stop_signals();

// The chat page served at / (chat_page.cpp).
const std::string& chat_page_html();

}  // namespace tg::llm::server
