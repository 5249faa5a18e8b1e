#include "constrain/token_mask.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "tokenizer/tokenizer.hpp"

namespace tg::llm::constrain {

TokenTrie::TokenTrie(const Tokenizer& tok) : vocab_(tok.n_tokens()) {
  nodes_.emplace_back();
  bytes_.resize(vocab_);
  for (size_t id = 0; id < vocab_; ++id) {
    const auto t = static_cast<TokenId>(id);
    if (tok.is_end_of_generation(t)) {
      end_.push_back(t);
      continue;
    }
    bytes_[id] = tok.token_bytes(t);
    if (bytes_[id].empty()) continue;
    int32_t at = 0;
    for (char c : bytes_[id]) {
      auto& ch = nodes_[static_cast<size_t>(at)].children;
      auto it = std::lower_bound(ch.begin(), ch.end(), c, [](const auto& p, char v) { return p.first < v; });
      if (it == ch.end() || it->first != c) {
        const auto next = static_cast<int32_t>(nodes_.size());
        it = nodes_[static_cast<size_t>(at)].children.insert(it, {c, next});
        nodes_.emplace_back();
      }
      at = it->second;
    }
    nodes_[static_cast<size_t>(at)].tokens.push_back(t);
  }
  number(0);
}

int32_t TokenTrie::number(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  n.first = static_cast<int32_t>(order_.size());
  order_.insert(order_.end(), n.tokens.begin(), n.tokens.end());
  bool plain = true;
  for (size_t i = 0; i < nodes_[static_cast<size_t>(node)].children.size(); ++i) {
    const auto [c, child] = nodes_[static_cast<size_t>(node)].children[i];
    number(child);
    plain = plain && JsonMatcher::plain_byte(c) && nodes_[static_cast<size_t>(child)].plain;
  }
  nodes_[static_cast<size_t>(node)].plain = plain;
  nodes_[static_cast<size_t>(node)].last = static_cast<int32_t>(order_.size());
  return node;
}

void TokenTrie::mark(int32_t node, std::vector<uint8_t>& allowed) const {
  for (int32_t t : nodes_[static_cast<size_t>(node)].tokens) allowed[static_cast<size_t>(t)] = 1;
}

void TokenTrie::walk(int32_t node, const JsonMatcher& m, std::vector<uint8_t>& allowed) const {
  if (m.in_plain_string()) return walk_string(node, m, 0, 0, allowed);
  for (const auto& [c, child] : nodes_[static_cast<size_t>(node)].children) {
    JsonMatcher next = m;
    if (!next.feed(c)) continue;
    mark(child, allowed);
    walk(child, next, allowed);
  }
}

void TokenTrie::walk_string(int32_t node, const JsonMatcher& m, int pending, unsigned char lead,
                            std::vector<uint8_t>& allowed) const {
  for (const auto& [c, child] : nodes_[static_cast<size_t>(node)].children) {
    const auto u = static_cast<unsigned char>(c);
    int next = 0;
    unsigned char next_lead = 0;
    if (pending > 0) {
      if (lead ? !JsonMatcher::utf8_follows(lead, u) : (u & 0xC0) != 0x80) continue;
      next = pending - 1;
    } else if (JsonMatcher::plain_byte(c)) {
      const Node& n = nodes_[static_cast<size_t>(child)];
      if (n.plain) {  // printable ASCII all the way down: every token of the subtree
        for (int32_t i = n.first; i < n.last; ++i) allowed[static_cast<size_t>(order_[static_cast<size_t>(i)])] = 1;
        continue;
      }
    } else if (JsonMatcher::utf8_continuations(u) > 0) {
      next = JsonMatcher::utf8_continuations(u);
      next_lead = u;
    } else {  // '"', '\\', a control or a byte no character starts with: the matcher decides
      JsonMatcher after = m;
      if (!after.feed(c)) continue;
      mark(child, allowed);
      walk(child, after, allowed);
      continue;
    }
    mark(child, allowed);
    walk_string(child, m, next, next_lead, allowed);
  }
}

void TokenTrie::allowed(const JsonMatcher& m, std::vector<uint8_t>& allowed) const {
  allowed.assign(vocab_, 0);
  for (const JsonMatcher& one : m.paths()) walk(0, one, allowed);  // alternatives: the union of their masks
  if (m.accepting())
    for (int32_t t : end_) allowed[static_cast<size_t>(t)] = 1;
}

Constraint::Constraint(std::shared_ptr<const TokenTrie> trie, JsonMatcher matcher)
    : trie_(std::move(trie)), matcher_(std::move(matcher)) {}

const std::vector<uint8_t>& Constraint::mask() {
  const std::string key = matcher_.key();
  if (auto it = cache_.find(key); it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> allowed;
  trie_->allowed(matcher_, allowed);
  mask_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  lru_.emplace_front(key, std::move(allowed));
  cache_[key] = lru_.begin();
  if (lru_.size() > kCached) {
    cache_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return lru_.front().second;
}

void Constraint::apply(std::span<float> logits) {
  const std::vector<uint8_t>& m = mask();
  bool any = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i >= m.size() || !m[i])
      logits[i] = -std::numeric_limits<float>::infinity();
    else
      any = true;
  }
  // no token spells what must come next: the text ends here, incomplete, rather than failing the decode step
  // that other requests share
  if (!any) end_only(logits);
}

bool Constraint::accept(int32_t token) {
  if (std::find(trie_->end_tokens().begin(), trie_->end_tokens().end(), token) != trie_->end_tokens().end())
    return true;
  return token >= 0 && static_cast<size_t>(token) < trie_->vocab() && !trie_->bytes(token).empty() &&
         matcher_.feed(trie_->bytes(token));
}

void Constraint::refuse(int32_t token, std::span<float> logits) const {
  logits[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
  if (std::none_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); })) end_only(logits);
}

void Constraint::end_only(std::span<float> logits) const {
  for (int32_t t : trie_->end_tokens())
    if (static_cast<size_t>(t) < logits.size()) logits[static_cast<size_t>(t)] = 0;
}

}  // namespace tg::llm::constrain
