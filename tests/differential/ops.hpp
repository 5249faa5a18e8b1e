// The op table's parts (ops_elementwise.cpp, ops_shape.cpp) and what they share.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "program.hpp"

namespace tg::difftest {

std::vector<OpDef> elementwise_ops();
std::vector<OpDef> shape_ops();  // reductions, movement, matmul, gather

// a double as a C++ literal that reads back exactly
inline std::string repr(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  std::string s = b;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

inline std::string ints_cpp(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace tg::difftest
