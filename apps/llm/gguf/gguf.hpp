// GGUF v2/v3 files: metadata, tensor infos and memory-mapped tensor data (split files joined into one view).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tg/error.hpp"

namespace tg::llm {

// ggml's tensor type numbering, as GGUF stores it.
// clang-format off: several values a line, as the list is read
enum class GGMLType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12,
  Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
  IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34,
  TQ2_0 = 35, MXFP4 = 39,
};
// clang-format on

// Block geometry of a type: `block_elems` values take `block_bytes` bytes. Unknown types: block_elems == 0.
struct TypeTraits {
  const char* name;
  int64_t block_elems;
  int64_t block_bytes;
};
TypeTraits type_traits(GGMLType t);
std::string type_name(GGMLType t);  // "Q4_K", or "type 99" for a number ggml does not define

// A metadata value. Integers keep their signedness, arrays their element type.
struct GGUFValue {
  enum class Type : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };
  // A long array of numbers or strings stays in the file's bytes (checked when parsed, decoded when read): a
  // vocabulary's tokens, scores and types as GGUFValues took ~38 MB for Gemma's 262144 entries.
  struct Packed {
    uint64_t count = 0;
    const uint8_t* bytes = nullptr;  // into the parsed image: valid while its GGUFFile lives
    size_t size = 0;
  };
  Type type = Type::U8;
  Type elem_type = Type::U8;  // for arrays
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GGUFValue>, Packed> value;

  bool is_int() const;
  int64_t as_int() const;   // any integer or bool; throws tg::Error otherwise
  double as_float() const;  // any number
  bool as_bool() const;
  const std::string& as_string() const;
  // An array's elements. A packed one is decoded into a copy on each call: prefer for_each_element.
  std::vector<GGUFValue> as_array() const;
  size_t array_size() const;
  void for_each_element(const std::function<void(const GGUFValue&)>& f) const;  // in order
  std::string str() const;  // for display: numbers, strings quoted, arrays abbreviated
};

struct GGUFTensor {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous dim (a [rows, cols] matrix has ne = {cols, rows})
  GGMLType type = GGMLType::F32;
  const uint8_t* data = nullptr;  // into the mapped file
  uint64_t nbytes = 0;
  int64_t numel() const;
  int64_t rows() const { return ne.empty() ? 1 : numel() / ne[0]; }
};

// A parsed GGUF (or the parts of a split one). Tensor data stays in the read-only mapping; nothing is copied.
class GGUFFile {
 public:
  // Opens `path`; a split file (`name-00001-of-00003.gguf`) opens all of its parts. Every error names the file,
  // the byte offset and what was expected (tg::Error).
  static GGUFFile open(const std::string& path);
  // Parses an in-memory image (tests, fuzzing): the bytes must outlive the result.
  static GGUFFile parse(const uint8_t* data, size_t size, const std::string& name = "<memory>");

  uint32_t version() const { return version_; }
  const std::map<std::string, GGUFValue>& metadata() const { return kv_; }
  const GGUFValue* find(const std::string& key) const;
  const GGUFValue& at(const std::string& key) const;  // missing key: tg::Error naming it and the file
  int64_t get_int(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const;
  double get_float(const std::string& key, std::optional<double> fallback = std::nullopt) const;
  std::string get_string(const std::string& key, std::optional<std::string> fallback = std::nullopt) const;
  bool get_bool(const std::string& key, std::optional<bool> fallback = std::nullopt) const;

  const std::vector<GGUFTensor>& tensors() const { return tensors_; }
  const GGUFTensor* tensor(const std::string& name) const;  // nullptr when absent
  const GGUFTensor& need_tensor(const std::string& name) const;
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const;  // total size of the mapped parts

 private:
  struct Mapping;
  void parse_part(const uint8_t* data, size_t size, const std::string& name, bool first);
  uint32_t version_ = 0;
  std::string path_;
  std::map<std::string, GGUFValue> kv_;
  std::vector<GGUFTensor> tensors_;
  std::map<std::string, size_t> by_name_;
  std::vector<std::shared_ptr<Mapping>> maps_;
};

}  // namespace tg::llm
