// tg::test::PluginTest: a GoogleTest fixture that opens device 0 of the test's plugin (plugin_api.hpp) with a
// renderer, compiler and queue, and runs hand-built KIR kernels on it.
#pragma once

#include "plugin_api.hpp"

#include <tg/sdk/kir_builder.hpp>

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg::test {

using sdk::Kir;   // KIR kernels built by hand (tg/sdk/kir_builder.hpp)
using sdk::pack;  // their packed argument blob

// Device 0 of the plugin with a renderer, compiler and queue shared by a suite's tests, and helpers that run
// hand-built kernels on it. Programs and buffers a test makes are released after it.
class PluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_OK(api()->device_open(0, &device_));
    ASSERT_OK(api()->renderer_create(device_, nullptr, &renderer_));
    ASSERT_OK(api()->compiler_create(device_, &compiler_));
    ASSERT_OK(api()->hwqueue_create(device_, &queue_));
  }
  static void TearDownTestSuite() {
    api()->hwqueue_destroy(queue_);
    api()->compiler_destroy(compiler_);
    api()->renderer_destroy(renderer_);
    api()->device_close(device_);
  }
  void TearDown() override {
    for (tg_program p : programs_) api()->program_destroy(p);
    for (const tg_buffer_desc& b : buffers_) api()->allocator_free(device_, &b);
  }

  std::string render(Kir& kir, const char* name) {
    const tg_kir_kernel kernel = kir.kernel(name);
    const char* source = nullptr;
    const Status s = take(api()->renderer_render(renderer_, &kernel, &source));
    EXPECT_EQ(s.code, TG_OK) << s.message;
    if (source == nullptr) return "";
    if (std::getenv("TG_TEST_PRINT_SOURCE") != nullptr) std::cout << source;
    return source;
  }
  // Render, compile and load; the program is destroyed after the test.
  tg_program build(Kir& kir, const char* name) {
    const std::string source = render(kir, name);
    void* blob = nullptr;
    size_t size = 0;
    const Status compiled = take(api()->compiler_compile(compiler_, source.c_str(), name, &blob, &size));
    EXPECT_EQ(compiled.code, TG_OK) << compiled.message << "\n" << source;
    if (compiled.code != TG_OK) return nullptr;
    tg_program program = nullptr;
    const Status loaded = take(api()->program_create(device_, blob, size, name, kir.params().data(),
                                                     static_cast<uint32_t>(kir.params().size()), &program));
    api()->blob_free(blob);
    EXPECT_EQ(loaded.code, TG_OK) << loaded.message;
    if (program != nullptr) programs_.push_back(program);
    return program;
  }
  template <class T>
  tg_buffer_desc buffer(const std::vector<T>& data) {
    tg_buffer_desc b{};
    EXPECT_EQ(take(api()->allocator_alloc(device_, data.size() * sizeof(T), &b)).code, TG_OK);
    buffers_.push_back(b);
    EXPECT_EQ(take(api()->allocator_copy_in(device_, &b, 0, data.data(), data.size() * sizeof(T))).code, TG_OK);
    return b;
  }
  template <class T>
  std::vector<T> read(const tg_buffer_desc& b) {
    std::vector<T> out(b.size / sizeof(T));
    EXPECT_EQ(take(api()->allocator_copy_out(device_, out.data(), &b, 0, b.size)).code, TG_OK);
    return out;
  }
  // exec + signal + submit + wait.
  void launch(tg_program program, const std::vector<unsigned char>& args, uint32_t global) {
    ASSERT_NE(program, nullptr);
    const tg_launch_dims dims{{global, 1, 1}, {1, 1, 1}};
    ASSERT_OK(api()->hwqueue_exec(queue_, program, args.data(), args.size(), &dims));
    ASSERT_OK(api()->hwqueue_signal(queue_, ++signal_));
    ASSERT_OK(api()->hwqueue_submit(queue_));
    ASSERT_OK(api()->hwqueue_wait(queue_, signal_, 0));
  }

  static inline tg_device device_ = nullptr;
  static inline tg_renderer renderer_ = nullptr;
  static inline tg_compiler compiler_ = nullptr;
  static inline tg_hwqueue queue_ = nullptr;
  static inline uint64_t signal_ = 0;
  std::vector<tg_program> programs_;
  std::vector<tg_buffer_desc> buffers_;
};

}  // namespace tg::test
