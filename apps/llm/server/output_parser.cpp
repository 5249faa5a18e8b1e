// Two stages: a stop-string filter over the raw text, then a tag scanner over what the filter released. Each
// keeps back only the longest suffix that is a prefix of something it looks for.
#include "server/output_parser.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tg::llm::server {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kToolOpen = "<tool_call>", kToolClose = "</tool_call>";

// Length of the longest suffix of `text` that is a proper prefix of `word`.
size_t partial_suffix(std::string_view text, std::string_view word) {
  for (size_t n = std::min(text.size(), word.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == word.substr(0, n)) return n;
  return 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

OutputParser::OutputParser(Options opts)
    : opts_(std::move(opts)), mode_(opts_.in_reasoning ? Mode::Reasoning : Mode::Content) {
  std::erase_if(opts_.stop, [](const std::string& s) { return s.empty(); });
}

std::string OutputParser::release_before_stop(std::string_view text) {
  held_ += text;
  size_t cut = std::string::npos;
  for (const auto& s : opts_.stop)
    if (const size_t at = held_.find(s); at < cut) cut = at, stop_string_ = s;
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  size_t keep = 0;
  for (const auto& s : opts_.stop) keep = std::max(keep, partial_suffix(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

void OutputParser::emit(std::vector<OutputEvent>& out, OutputEvent::Kind kind, std::string text) {
  if (kind == OutputEvent::Kind::Content && after_think_) {  // "</think>\n\nAnswer": the answer starts at "A"
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    text.erase(0, i);
    if (!text.empty()) after_think_ = false;
  }
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == kind && kind != OutputEvent::Kind::ToolCall)
    out.back().text += text;
  else
    out.push_back({kind, std::move(text), {}});
}

// A complete block: {"name": string, "arguments": object or JSON string} becomes a call; anything else stays
// visible as content rather than disappearing.
void OutputParser::close_tool_call(std::vector<OutputEvent>& out, std::string body) {
  auto j = nlohmann::json::parse(trim(body), nullptr, false);
  if (j.is_object() && j.contains("name") && j["name"].is_string() && !j["name"].get<std::string>().empty()) {
    nlohmann::json args = j.contains("arguments") ? j["arguments"] : nlohmann::json::object();
    if (args.is_string()) args = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
    if (args.is_object()) {
      ++tool_calls_;
      out.push_back({OutputEvent::Kind::ToolCall, {}, {j["name"].get<std::string>(), args.dump()}});
      return;
    }
  }
  emit(out, OutputEvent::Kind::Content, std::string(kToolOpen) + body + std::string(kToolClose));
}

void OutputParser::parse(std::vector<OutputEvent>& out, bool final) {
  for (;;) {
    // what ends the current mode, and which mode follows
    std::vector<std::pair<std::string_view, Mode>> tags;
    if (mode_ == Mode::Content) {
      if (opts_.reasoning) tags.push_back({kThinkOpen, Mode::Reasoning});
      if (opts_.tools) tags.push_back({kToolOpen, Mode::Tool});
    } else {
      tags.push_back({mode_ == Mode::Reasoning ? kThinkClose : kToolClose, Mode::Content});
    }
    size_t at = std::string::npos;
    std::pair<std::string_view, Mode> hit{};
    for (const auto& t : tags)
      if (size_t p = buffer_.find(t.first); p < at) at = p, hit = t;
    const OutputEvent::Kind kind = mode_ == Mode::Reasoning ? OutputEvent::Kind::Reasoning : OutputEvent::Kind::Content;
    if (at == std::string::npos) {
      size_t keep = 0;
      if (!final)
        for (const auto& t : tags) keep = std::max(keep, partial_suffix(buffer_, t.first));
      std::string text = buffer_.substr(0, buffer_.size() - keep);
      buffer_.erase(0, buffer_.size() - keep);
      if (mode_ == Mode::Tool) {
        tool_ += text;
        if (final) {  // never closed: the raw text is content
          emit(out, OutputEvent::Kind::Content, std::string(kToolOpen) + tool_);
          tool_.clear();
          mode_ = Mode::Content;
        }
      } else {
        emit(out, kind, std::move(text));
      }
      return;
    }
    std::string before = buffer_.substr(0, at);
    buffer_.erase(0, at + hit.first.size());
    if (mode_ == Mode::Tool) {
      close_tool_call(out, tool_ + before);
      tool_.clear();
    } else {
      emit(out, kind, std::move(before));
    }
    after_think_ = mode_ == Mode::Reasoning;
    mode_ = hit.second;
  }
}

std::vector<OutputEvent> OutputParser::feed(std::string_view text) {
  std::vector<OutputEvent> out;
  if (stopped_) return out;
  buffer_ += release_before_stop(text);
  parse(out, stopped_);
  return out;
}

std::vector<OutputEvent> OutputParser::finish() {
  std::vector<OutputEvent> out;
  buffer_ += held_;
  held_.clear();
  parse(out, true);
  return out;
}

}  // namespace tg::llm::server
