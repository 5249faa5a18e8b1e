// tg::Error: the exception the C++ API throws for failures a user can cause or observe.
#pragma once

#include <stdexcept>
#include <string>

namespace tg {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace tg
