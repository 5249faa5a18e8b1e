// tg::test::Kir: KIR kernels built by hand for plugin tests, and pack(), the packed argument blob for a launch.
#pragma once

#include <tg/plugin_abi.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace tg::test {

// A kernel under construction: each call appends one instruction and returns its index.
class Kir {
 public:
  int op(tg_kir_op op, tg_dtype dtype, std::vector<int> srcs = {}, int vcount = 1, int64_t arg = 0) {
    tg_kir_inst inst{};
    inst.op = op;
    inst.dtype = dtype;
    inst.vcount = static_cast<uint8_t>(vcount);
    inst.nsrc = static_cast<uint8_t>(srcs.size());
    inst.src_start = static_cast<uint32_t>(pool_.size());
    inst.arg.i = arg;
    pool_.insert(pool_.end(), srcs.begin(), srcs.end());
    insts_.push_back(inst);
    return static_cast<int>(insts_.size() - 1);
  }
  int buffer(tg_dtype dtype, bool writable = false) {
    return param(TG_PARAM_BUFFER, dtype, writable, "data" + std::to_string(params_.size()));
  }
  int var(tg_dtype dtype, const std::string& name) { return param(TG_PARAM_VAR, dtype, false, name); }
  int i32(int64_t value) { return op(TG_KIR_CONST, TG_DTYPE_INT32, {}, 1, value); }
  int constant(tg_dtype dtype, int64_t value) { return op(TG_KIR_CONST, dtype, {}, 1, value); }
  int constant_f(tg_dtype dtype, double value) {
    const int i = op(TG_KIR_CONST, dtype);
    insts_[i].arg.f = value;
    return i;
  }
  int special(int extent) { return op(TG_KIR_SPECIAL, TG_DTYPE_INT32, {i32(extent)}, 1, TG_SPECIAL_GLOBAL * 4 + 0); }
  int load(tg_dtype dtype, int ptr, int idx, int vcount = 1) { return op(TG_KIR_LOAD, dtype, {ptr, idx}, vcount); }
  void store(int ptr, int idx, int value) { op(TG_KIR_STORE, TG_DTYPE_FLOAT32, {ptr, idx, value}); }

  tg_kir_kernel kernel(const char* name) const {
    return tg_kir_kernel{sizeof(tg_kir_kernel),
                         name,
                         insts_.data(),
                         static_cast<uint32_t>(insts_.size()),
                         static_cast<uint32_t>(pool_.size()),
                         pool_.data(),
                         params_.data(),
                         static_cast<uint32_t>(params_.size()),
                         1};
  }
  const std::vector<tg_kir_param>& params() const { return params_; }

 private:
  int param(tg_param_kind kind, tg_dtype dtype, bool writable, const std::string& name) {
    names_.push_back(name);
    params_.push_back(
        tg_kir_param{static_cast<uint32_t>(kind), static_cast<uint32_t>(dtype), writable, 0, names_.back().c_str()});
    return op(TG_KIR_PARAM, dtype, {}, 1, static_cast<int64_t>(params_.size() - 1));
  }
  std::vector<tg_kir_inst> insts_;
  std::vector<int32_t> pool_;
  std::vector<tg_kir_param> params_;
  std::deque<std::string> names_;  // stable storage for params_[].name
};

// The packed argument blob: buffers as addresses, vars at their own size, at tg_param_layout's offsets.
inline std::vector<unsigned char> pack(const Kir& kir, const std::vector<uint64_t>& values) {
  std::vector<size_t> offsets(kir.params().size());
  std::vector<unsigned char> blob(tg_param_layout(kir.params().data(), kir.params().size(), offsets.data()));
  for (size_t p = 0; p < values.size(); ++p)
    std::memcpy(blob.data() + offsets[p], &values[p], tg_param_size(&kir.params()[p]));  // little-endian
  return blob;
}

}  // namespace tg::test
