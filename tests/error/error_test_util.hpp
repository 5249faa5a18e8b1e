// Helpers for the error catalogue: the message of what a call throws, checked for its words and for being one line.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <typeinfo>

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

}  // namespace tgerr

// EXPECT_MSG(message, matchers...): the message has every matcher, and is one non-empty line.
#define EXPECT_MSG(msg, ...)                                  \
  do {                                                        \
    const std::string tgerr_m_ = (msg);                       \
    EXPECT_THAT(tgerr_m_, ::testing::AllOf(__VA_ARGS__));     \
    EXPECT_TRUE(::tgerr::one_line(tgerr_m_)) << tgerr_m_;     \
  } while (0)
