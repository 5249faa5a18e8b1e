// Parallel compile: the same sources compiled concurrently give byte-identical binaries to a serial compile.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include "codegen/lower.hpp"
#include "runtime/device.hpp"
#include "runtime/disk_cache.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

TEST(ParallelCompile, BinariesMatchASerialCompile) {
  // twelve different kernels: constants are baked into the code
  std::vector<std::string> sources, names;
  Device* dev = nullptr;
  for (int i = 0; i < 12; ++i) {
    Tensor x = Tensor::rand({4, 33}, 1).realize();
    Tensor y = ((x * (1.5 + i)).exp() + static_cast<double>(i)).sum({1});
    auto items = sched::create_schedule({y.node()}, y.device()).items;
    ASSERT_EQ(items.size(), 1u);
    dev = &Device::get(y.device());
    auto k = codegen::lower_kernel(items[0].kernel, dev->caps());
    sources.push_back(dev->render(k.view()));
    names.push_back(k.name);
  }
  std::vector<uint64_t> serial(sources.size()), parallel(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    auto blob = dev->compile(sources[i], names[i]);
    serial[i] = fnv1a(blob.data(), blob.size());
  }
  tbb::parallel_for(size_t{0}, sources.size(), [&](size_t i) {
    auto blob = dev->compile(sources[i], names[i]);
    parallel[i] = fnv1a(blob.data(), blob.size());
  });
  EXPECT_EQ(serial, parallel);
  for (size_t i = 1; i < serial.size(); ++i) EXPECT_NE(serial[i], serial[0]) << "kernels should differ";
}

}  // namespace
}  // namespace tg::rt
