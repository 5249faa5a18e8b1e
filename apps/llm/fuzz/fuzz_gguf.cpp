// libFuzzer target for the GGUF parser: any input is parsed or refused with tg::Error; every tensor it accepts
// lies inside the input.
#include <cstdint>
#include <cstdlib>

#include "gguf/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::llm::GGUFFile f = tg::llm::GGUFFile::parse(data, size, "fuzz");
    for (const auto& t : f.tensors())
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();
    for (const auto& [k, v] : f.metadata()) (void)v.str();
  } catch (const tg::Error&) {}
  return 0;
}
