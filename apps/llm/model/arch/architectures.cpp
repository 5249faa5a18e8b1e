// The registry: one line per architecture file.
#include "model/arch/architectures.hpp"

namespace tg::llm {

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> all = {
      {"llama", build_llama},       {"qwen2", build_qwen2},   {"qwen3", build_qwen3},
      {"gemma3", build_gemma3},     {"qwen35", build_qwen35}, {"qwen35moe", build_qwen35moe},
      {"qwen3moe", build_qwen3moe}, {"olmoe", build_olmoe},   {"deepseek2", build_deepseek2},
  };
  return all;
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> v;
  for (const auto& a : architectures()) v.push_back(a.name);
  return v;
}

}  // namespace tg::llm
