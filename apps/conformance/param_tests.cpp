// The argument battery: typed scalar parameters of every width, ordered so that alignment padding matters in the
// packed blob, and a kernel with the most parameters the renderer advertises (caps.max_params).
#include "harness.hpp"
#include "reference.hpp"

#include <map>
#include <memory>

namespace tg::conformance {
namespace {

using sdk::dtype_name;

// A scalar parameter and the value the launch passes (its bits; every value has its top bit set where it can,
// so truncation, sign extension or a shifted offset all show).
struct Var {
  uint32_t dtype;
  uint64_t bits;
};

// Sizes 1, 8, 2, 8, 1, 4, 2, 4, 8, 4, 1, 4, 2, 8: after each small one, the next wide one needs padding.
const Var kVars[] = {{TG_DTYPE_INT8, 0x81},
                     {TG_DTYPE_INT64, 0x8123456789abcdefull},
                     {TG_DTYPE_UINT16, 0xbeef},
                     {TG_DTYPE_FLOAT64, 0xc00921fb54442d18ull /* -pi */},
                     {TG_DTYPE_UINT8, 0xfe},
                     {TG_DTYPE_INT32, 0x87654321},
                     {TG_DTYPE_INT16, 0x8001},
                     {TG_DTYPE_FLOAT32, 0xc2f6e979 /* -123.456 */},
                     {TG_DTYPE_UINT64, 0xfedcba9876543210ull},
                     {TG_DTYPE_UINT32, 0xdeadbeef},
                     {TG_DTYPE_BOOL, 1},
                     {TG_DTYPE_FLOAT32, 0x3eaaaaab /* 1/3 */},
                     {TG_DTYPE_INT16, 0x7ffe},
                     {TG_DTYPE_FLOAT64, 0x3ff0000000000001ull /* 1 + ulp */}};

void every_width_mixed_alignment() {
  const Session& s = session();
  std::vector<Var> vars;
  for (const Var& v : kVars)
    if (s.claims_dtype(v.dtype)) vars.push_back(v);
  // One output buffer per dtype first (8-byte addresses), then the scalars: var k goes to out_<dtype>[slot].
  Kir k;
  std::map<uint32_t, int> out_of;  // dtype -> its output PARAM; sorted, so the signature is the same every run
  std::map<uint32_t, uint32_t> count_of;
  for (const Var& v : vars) ++count_of[v.dtype];
  if (vars.size() + count_of.size() > s.caps.max_params)
    throw Skip(cat("caps.max_params is ", s.caps.max_params, "; this test needs ", vars.size() + count_of.size()));
  for (const auto& [dtype, count] : count_of) out_of[dtype] = k.buffer(dtype, true);
  std::map<uint32_t, uint32_t> next_slot;
  for (size_t i = 0; i < vars.size(); ++i) {
    const int p = k.var(vars[i].dtype, cat("v", i, "_", dtype_name(vars[i].dtype)));
    k.store(out_of[vars[i].dtype], k.i32(next_slot[vars[i].dtype]++), p);
  }
  Kernel kernel(k, "conf_typed_scalars");
  std::map<uint32_t, std::unique_ptr<Buffer>> buffers;
  std::vector<uint64_t> args;
  for (const auto& [dtype, count] : count_of) {
    buffers[dtype] = std::make_unique<Buffer>(std::vector<unsigned char>(count * tg_dtype_size(dtype), 0));
    args.push_back(buffers[dtype]->addr());
  }
  for (const Var& v : vars) args.push_back(v.bits);
  kernel.launch(args);
  std::map<uint32_t, uint32_t> slot;
  std::vector<size_t> offsets(kernel.params().size());
  tg_param_layout(kernel.params().data(), static_cast<uint32_t>(offsets.size()), offsets.data());
  for (size_t i = 0; i < vars.size(); ++i) {
    const uint32_t d = vars[i].dtype, size = tg_dtype_size(d);
    const std::vector<unsigned char> bytes = buffers[d]->read();
    uint64_t got = 0;
    std::memcpy(&got, bytes.data() + slot[d]++ * size, size);
    if (got != vars[i].bits)
      kernel.fail(cat("scalar parameter ", count_of.size() + i, " (", dtype_name(d), ", at byte offset ",
                      offsets[count_of.size() + i], " of the packed blob) arrived as ", show(d, got), ", passed ",
                      show(d, vars[i].bits), ": the kernel reads its parameters at the wrong offsets or widths"));
  }
}

// caps.max_params parameters: one int32 output buffer and max_params-1 scalars of mixed integer widths.
void max_param_count() {
  const Session& s = session();
  constexpr uint32_t kCap = 4096;  // a renderer may advertise "unbounded"; test a number a kernel could use
  const uint32_t count = std::min(s.caps.max_params, kCap);
  if (count < 2) throw Skip(cat("caps.max_params is ", s.caps.max_params));
  if (!s.claims_dtype(TG_DTYPE_INT32)) throw Skip("the renderer does not claim int32");
  // Narrower vars are widened with CAST where the renderer takes it; else every var is an int32.
  std::vector<uint32_t> kinds{TG_DTYPE_INT32};
  for (uint32_t d : {TG_DTYPE_INT8, TG_DTYPE_INT16, TG_DTYPE_INT64})
    if (s.claims_op(d, TG_KIR_CAST)) kinds.push_back(d);
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true);
  std::vector<uint64_t> args{0};
  std::vector<int32_t> want;
  for (uint32_t p = 1; p < count; ++p) {
    const uint32_t d = kinds[p % kinds.size()];
    const int32_t value = static_cast<int32_t>(to_signed(d, truncate_bits(d, p * 2654435761u)));
    const int var = k.var(d, cat("a", p));
    k.store(out, k.i32(p - 1), d == TG_DTYPE_INT32 ? var : k.alu(TG_KIR_CAST, TG_DTYPE_INT32, {var}));
    args.push_back(truncate_bits(d, static_cast<uint64_t>(static_cast<int64_t>(value))));
    want.push_back(value);
  }
  Kernel kernel(k, "conf_max_params");
  Buffer bout(std::vector<int32_t>(count - 1, 0));
  args[0] = bout.addr();
  kernel.launch(args);
  const std::vector<int32_t> got = bout.read_as<int32_t>();
  for (uint32_t p = 1; p < count; ++p)
    if (got[p - 1] != want[p - 1])
      kernel.fail(cat("kernel with ", count, " parameters (caps.max_params = ", s.caps.max_params, "): parameter ", p,
                      " (", dtype_name(kinds[p % kinds.size()]), ") arrived as ", got[p - 1], ", passed ",
                      want[p - 1]));
  if (s.caps.max_params > kCap)
    throw Skip(cat("passed with ", kCap, " parameters; caps.max_params is ", s.caps.max_params, ", not tried"));
}

}  // namespace

void add_param_tests(Tests& tests) {
  tests.push_back({"params.every_width_mixed_alignment", Tier::Core, every_width_mixed_alignment});
  tests.push_back({"params.max_param_count", Tier::Core, max_param_count});
}

}  // namespace tg::conformance
