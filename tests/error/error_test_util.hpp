// Helpers for the error catalogue: the message of what a call throws, checked for its words and for being one line.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <typeinfo>

#include "tg/tensor.hpp"

namespace tgerr {

// Runs f, expecting it to throw E (or a subclass); returns the message ("" and a failure otherwise).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << " instead of " << typeid(E).name() << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

inline bool one_line(const std::string& m) { return !m.empty() && m.find('\n') == std::string::npos; }

// Zero tensors to make errors with: float32 (on `dev`, "" the default device) and int32.
inline tg::Tensor f32(const tg::Shape& s, const std::string& dev = "") {
  return tg::Tensor::zeros(s, tg::dtypes::float32, dev);
}
inline tg::Tensor i32(const tg::Shape& s) { return tg::Tensor::zeros(s, tg::dtypes::int32); }

}  // namespace tgerr

// EXPECT_MSG(message, matchers...): the message has every matcher, and is one non-empty line.
#define EXPECT_MSG(msg, ...)                              \
  do {                                                    \
    const std::string tgerr_m_ = (msg);                   \
    EXPECT_THAT(tgerr_m_, ::testing::AllOf(__VA_ARGS__)); \
    EXPECT_TRUE(::tgerr::one_line(tgerr_m_)) << tgerr_m_; \
  } while (0)
