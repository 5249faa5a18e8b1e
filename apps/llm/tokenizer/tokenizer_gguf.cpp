// Tokenizer::from_gguf: fills a Vocab from a GGUF's tokenizer.ggml.* metadata.
#include "gguf/gguf.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tg::llm {

namespace {

// A token id key: absent -> -1. Range checks happen in Tokenizer's constructor, which names the key's role.
TokenId id_key(const GGUFFile& f, const std::string& key) {
  const GGUFValue* v = f.find(key);
  if (!v) return -1;
  const int64_t id = v->as_int();
  if (id < INT32_MIN || id > INT32_MAX)
    throw Error("tokenizer: " + f.path() + ": " + key + " = " + std::to_string(id) + " is not a token id");
  return static_cast<TokenId>(id);
}

// Calls f on each element of the array at key, if the key is there.
void each_of(const GGUFFile& f, const std::string& key, const std::function<void(const GGUFValue&)>& fn) {
  if (const GGUFValue* v = f.find(key)) v->for_each_element(fn);
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GGUFFile& f) {
  Vocab v;
  v.model = f.get_string("tokenizer.ggml.model");
  if (v.model != "llama" && v.model != "gpt2")
    throw Error("tokenizer: " + f.path() + ": unsupported tokenizer.ggml.model '" + v.model +
                "' (supported: llama, gpt2)");
  v.pre = f.get_string("tokenizer.ggml.pre", "default");

  const GGUFValue& tokens = f.at("tokenizer.ggml.tokens");
  v.tokens.reserve(tokens.array_size());
  tokens.for_each_element([&](const GGUFValue& t) { v.tokens.push_back(t.as_string()); });
  each_of(f, "tokenizer.ggml.scores",
          [&](const GGUFValue& s) { v.scores.push_back(static_cast<float>(s.as_float())); });
  each_of(f, "tokenizer.ggml.token_type", [&](const GGUFValue& t) {
    const int64_t type = t.as_int();
    // Out-of-range values are reported by the constructor with the token's index.
    v.types.push_back(static_cast<TokenType>(type < INT32_MIN || type > INT32_MAX ? -1 : type));
  });
  each_of(f, "tokenizer.ggml.merges", [&](const GGUFValue& m) { v.merges.push_back(m.as_string()); });

  v.bos_id = id_key(f, "tokenizer.ggml.bos_token_id");
  v.eos_id = id_key(f, "tokenizer.ggml.eos_token_id");
  v.eot_id = id_key(f, "tokenizer.ggml.eot_token_id");
  v.unk_id = id_key(f, "tokenizer.ggml.unknown_token_id");
  v.pad_id = id_key(f, "tokenizer.ggml.padding_token_id");

  // llama.cpp's defaults when a flag is absent: SentencePiece adds BOS and the prefix space; BPE adds nothing,
  // except BOS for Llama 3.
  const bool spm = v.model == "llama";
  const bool llama3 = v.pre == "llama-bpe" || v.pre == "llama3" || v.pre == "llama-v3";
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", spm || llama3);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", spm);

  try {
    return Tokenizer(std::move(v));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + f.path() + ")");
  }
}

}  // namespace tg::llm
