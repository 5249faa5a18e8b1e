// A reply in one API's wire format, built from a job's events: whole (absorb, then reply) or streamed as
// server-sent events (open, frames per event, close). The HTTP layer relays either without knowing the API.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/engine.hpp"
#include "server/openai_api.hpp"

namespace tg::llm::server {

class ReplyFormat {
 public:
  virtual ~ReplyFormat() = default;
  virtual std::vector<std::string> open() = 0;                     // frames before the first event
  virtual std::vector<std::string> frames(const JobEvent& e) = 0;  // one event's (a Done ends in close())
  virtual std::vector<std::string> close() = 0;                    // after the Done event
  virtual void absorb(const JobEvent& e) = 0;
  virtual nlohmann::json reply() = 0;
  virtual nlohmann::json error_body(const ApiError& e) const { return e.body(); }
  virtual std::vector<std::string> failed(const ApiError& e) = 0;  // a stream's last frames when the job failed

  // One server-sent event: "event: NAME\n" where named, then "data: JSON\n\n".
  static std::string sse(const nlohmann::json& data, const std::string& event = {}) {
    return (event.empty() ? "" : "event: " + event + "\n") + "data: " + data.dump() + "\n\n";
  }
};

}  // namespace tg::llm::server
