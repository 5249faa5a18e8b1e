// Tensor collectives over a Communicator: the tensor's bytes through host memory, combined by the backend, and
// copied back to the tensor's device. Every rank first shares its shape and dtype, so a mismatch fails on all of
// them with the same message instead of a hang or a sum of unrelated bytes.
#include <array>
#include <numeric>
#include <vector>

#include "comm/device_communicator.hpp"
#include "runtime/collectives.hpp"
#include "runtime/options.hpp"
#include "tensor/tensor_internal.hpp"
#include "tg/comm.hpp"
#include "tg/error.hpp"

namespace tg {

namespace {

constexpr size_t kMaxDims = 14;

// (dtype, ndim, dims...) of every rank; throws on every rank when any differs.
void check_same_tensor(const Tensor& t, Communicator& comm, const char* what) {
  if (t.ndim() > static_cast<int64_t>(kMaxDims)) throw Error(std::string("tg: ") + what + ": more than 14 dims");
  std::array<int64_t, kMaxDims + 2> mine{};
  mine[0] = static_cast<int64_t>(t.dtype().scalar) * 256 + t.dtype().count;
  mine[1] = t.ndim();
  for (int64_t i = 0; i < t.ndim(); ++i) mine[static_cast<size_t>(i) + 2] = t.shape()[static_cast<size_t>(i)];
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), sizeof(mine));
  auto header = [&](int r) { return all.begin() + static_cast<long>(mine.size()) * r; };
  auto describe = [&](int r) {  // "(2, 3) float32"
    Shape dims(header(r) + 2, header(r) + 2 + header(r)[1]);
    const int64_t code = header(r)[0];
    return shape_str(dims) + " " + DType{static_cast<ScalarType>(code / 256), static_cast<uint8_t>(code % 256)}.name();
  };
  // every rank compares with rank 0, so every rank names the same two and fails alike
  for (int r = 1; r < comm.size(); ++r)
    if (!std::equal(header(0), header(0) + static_cast<long>(mine.size()), header(r)))
      throw Error(std::string("tg: ") + what + " over " + std::to_string(comm.size()) + " ranks: rank 0 has " +
                  describe(0) + ", rank " + std::to_string(r) + " has " + describe(r) +
                  " (shapes and dtypes must agree on every rank)");
}

std::vector<uint8_t> host_bytes(Tensor t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.numel()) * t.dtype().itemsize());
  t.copy_out(bytes.data(), bytes.size());
  return bytes;
}

}  // namespace

double comm_timeout_seconds() { return rt::read_options().comm_timeout_s; }

Communicator::~Communicator() { rt::forget_collectives(this); }

Tensor allreduce(const Tensor& t, Communicator& comm, CollectiveOp op) {
  if (t.device().find(',') != std::string::npos)
    throw std::invalid_argument("tg: allreduce over a communicator of a tensor on several devices (" + t.device() +
                                "); gather it first");
  check_same_tensor(t, comm, "allreduce");
  static const char* names[] = {"allreduce_sum", "allreduce_max", "allreduce_min"};
  // a device communicator combines its device's buffers where they are; the rest goes through host memory
  auto* on = dynamic_cast<DeviceCommunicator*>(&comm);
  rt::DeviceCollectiveFn on_device;
  if (on && on->device() == t.device())
    on_device = [on, op](rt::Buffer& dst, rt::Buffer& src) { on->allreduce_buffers(dst, src, op); };
  const std::string name = rt::register_collective(
      &comm, names[static_cast<int>(op)] + std::string(on_device ? "_on_device" : ""),
      [&comm, op](void* data, size_t n, DType d) { comm.allreduce(data, n, d, op); }, on_device);
  return Tensor(mk(ir::Op::COLLECTIVE, t.dtype(), {t.node()}, name, ir::dims_of(*t.node())), t.device());
}

Tensor allgather(const Tensor& t, Communicator& comm, int64_t axis) {
  const int64_t a = axis < 0 ? axis + t.ndim() : axis;
  if (a < 0 || a >= t.ndim())
    throw std::invalid_argument("tg: allgather: axis " + std::to_string(axis) + " is out of range for shape " +
                                shape_str(t.shape()));
  check_same_tensor(t, comm, "allgather");
  const std::vector<uint8_t> mine = host_bytes(t);
  std::vector<uint8_t> all(mine.size() * static_cast<size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), mine.size());
  Shape stacked = t.shape();
  stacked.insert(stacked.begin(), comm.size());
  Tensor s = Tensor::from_bytes(all.data(), all.size(), stacked, t.dtype(), t.device());
  // (ranks, d0, .., da, ..) -> (d0, .., ranks, da, ..) -> merge ranks into axis a
  std::vector<int64_t> order;
  for (int64_t i = 1; i <= a; ++i) order.push_back(i);
  order.push_back(0);
  for (int64_t i = a + 1; i <= t.ndim(); ++i) order.push_back(i);
  Shape out = t.shape();
  out[static_cast<size_t>(a)] *= comm.size();
  return s.permute(order).reshape(out);
}

}  // namespace tg
