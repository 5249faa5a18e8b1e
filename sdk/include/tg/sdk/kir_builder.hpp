// tg::sdk::Kir: KIR kernels built by hand (the conformance battery's, plugin tests', a plugin author's own
// experiments), dump_kir() (one instruction per line, for failure messages), and pack_args(), the packed argument
// blob a launch takes.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/c_renderer.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace tg::sdk {

// A kernel under construction: each call appends one instruction and returns its index.
class Kir {
 public:
  int op(tg_kir_op op, uint32_t dtype, std::vector<int> srcs = {}, uint32_t vcount = 1, int64_t arg = 0) {
    tg_kir_inst inst{};
    inst.op = static_cast<uint16_t>(op);
    inst.dtype = static_cast<uint8_t>(dtype);
    inst.vcount = static_cast<uint8_t>(vcount);
    inst.nsrc = static_cast<uint8_t>(srcs.size());
    inst.src_start = static_cast<uint32_t>(pool_.size());
    inst.arg.i = arg;
    // The address space of what a pointer-producing instruction defines (buffer PARAMs are global, 0).
    if (op == TG_KIR_DEFINE_LOCAL) inst.addrspace = TG_ADDR_LOCAL;
    if (op == TG_KIR_DEFINE_REG) inst.addrspace = TG_ADDR_REG;
    pool_.insert(pool_.end(), srcs.begin(), srcs.end());
    insts_.push_back(inst);
    return static_cast<int>(insts_.size() - 1);
  }
  // A buffer parameter "data<N>" and the PARAM instruction that names it.
  int buffer(uint32_t dtype, bool writable = false) {
    return param(TG_PARAM_BUFFER, dtype, writable, "data" + std::to_string(params_.size()));
  }
  int var(uint32_t dtype, const std::string& name) { return param(TG_PARAM_VAR, dtype, false, name); }
  // A float32 buffer read through an image2d view `width` texels wide (ABI 1.2).
  int image(uint32_t width) {
    const int p = param(TG_PARAM_IMAGE, TG_DTYPE_FLOAT32, false, "data" + std::to_string(params_.size()));
    params_.back().reserved = width;
    insts_[p].addrspace = TG_ADDR_IMAGE;
    return p;
  }
  int i32(int64_t value) { return op(TG_KIR_CONST, TG_DTYPE_INT32, {}, 1, value); }
  int constant(uint32_t dtype, int64_t value) { return op(TG_KIR_CONST, dtype, {}, 1, value); }
  int constant_f(uint32_t dtype, double value) {
    const int i = op(TG_KIR_CONST, dtype);
    insts_[i].arg.f = value;
    return i;
  }
  // Work-item id of `kind` along dim 0 with the given extent.
  int special(uint32_t kind, int64_t extent) {
    return op(TG_KIR_SPECIAL, TG_DTYPE_INT32, {i32(extent)}, 1, static_cast<int64_t>(kind) * 4 + 0);
  }
  int global_id(int64_t extent) { return special(TG_SPECIAL_GLOBAL, extent); }
  int load(uint32_t dtype, int ptr, int idx, uint32_t vcount = 1) { return op(TG_KIR_LOAD, dtype, {ptr, idx}, vcount); }
  int load_gated(uint32_t dtype, int ptr, int idx, int gate) { return op(TG_KIR_LOAD, dtype, {ptr, idx, gate}); }
  void store(int ptr, int idx, int value) { op(TG_KIR_STORE, insts_[value].dtype, {ptr, idx, value}); }
  void store_gated(int ptr, int idx, int value, int gate) {
    op(TG_KIR_STORE, insts_[value].dtype, {ptr, idx, value, gate});
  }
  int alu(tg_kir_op o, uint32_t dtype, std::vector<int> srcs, uint32_t vcount = 1) {
    return op(o, dtype, std::move(srcs), vcount);
  }
  // Inline code (ABI 1.1): CUSTOMI is an expression of dtype, CUSTOM a statement; {N} stands for srcs[N].
  int custom(tg_kir_op o, uint32_t dtype, const std::string& code, std::vector<int> srcs) {
    snippets_.push_back(code);
    strings_.push_back(snippets_.back().c_str());
    return op(o, dtype, std::move(srcs), 1, static_cast<int64_t>(strings_.size() - 1));
  }

  // The kernel as the ABI passes it; valid while this builder lives and is not changed.
  tg_kir_kernel kernel(const std::string& name) {
    name_ = name;
    uint32_t dims = 0;
    for (const tg_kir_inst& in : insts_) {
      if (in.op == TG_KIR_SPECIAL && in.arg.i / 4 == TG_SPECIAL_GLOBAL)
        dims = std::max(dims, static_cast<uint32_t>(in.arg.i % 4) + 1);
    }
    return tg_kir_kernel{sizeof(tg_kir_kernel),
                         name_.c_str(),
                         insts_.data(),
                         static_cast<uint32_t>(insts_.size()),
                         static_cast<uint32_t>(pool_.size()),
                         pool_.data(),
                         params_.data(),
                         static_cast<uint32_t>(params_.size()),
                         dims,
                         strings_.data(),
                         static_cast<uint32_t>(strings_.size()),
                         0};
  }
  const std::vector<tg_kir_param>& params() const { return params_; }
  const std::vector<tg_kir_inst>& insts() const { return insts_; }
  const std::vector<int32_t>& pool() const { return pool_; }

 private:
  int param(tg_param_kind kind, uint32_t dtype, bool writable, const std::string& name) {
    names_.push_back(name);
    params_.push_back(tg_kir_param{static_cast<uint32_t>(kind), dtype, writable ? 1u : 0u, 0, names_.back().c_str()});
    return op(TG_KIR_PARAM, dtype, {}, 1, static_cast<int64_t>(params_.size() - 1));
  }
  std::vector<tg_kir_inst> insts_;
  std::vector<int32_t> pool_;
  std::vector<tg_kir_param> params_;
  std::deque<std::string> names_;     // stable storage for params_[].name
  std::deque<std::string> snippets_;  // and for strings_
  std::vector<const char*> strings_;
  std::string name_;
};

// The KIR of a kernel, one instruction per line: `  12: ADD int32x4 %10 %11`. Long kernels keep their first
// `max_lines` instructions, which is where a failing battery kernel's interesting part is.
inline std::string dump_kir(const tg_kir_kernel& k, uint32_t max_lines = 80) {
  std::string out = cat("KIR of kernel ", k.name ? k.name : "(null)", " (", k.ninsts, " instructions, ", k.nparams,
                        " parameters):\n");
  for (uint32_t p = 0; p < k.nparams; ++p) {
    const tg_kir_param& param = k.params[p];
    out += cat("  param ", p, ": ",
               param.kind == TG_PARAM_BUFFER  ? "buffer "
               : param.kind == TG_PARAM_IMAGE ? "image "
                                              : "var ",
               dtype_name(param.dtype), param.kind != TG_PARAM_VAR ? "*" : "",
               param.kind == TG_PARAM_IMAGE ? cat(" (", param.reserved, " texels wide)") : "", " ",
               param.name ? param.name : "", param.writable ? " (writable)" : "", "\n");
  }
  for (uint32_t i = 0; i < k.ninsts && i < max_lines; ++i) {
    const tg_kir_inst& in = k.insts[i];
    std::string line =
        cat("  ",
            i < 10    ? "  "
            : i < 100 ? " "
                      : "",
            i, ": ", op_name(in.op), " ", dtype_name(in.dtype), in.vcount > 1 ? cat("x", +in.vcount) : "");
    if (in.op == TG_KIR_PARAM || in.op == TG_KIR_DEFINE_REG || in.op == TG_KIR_DEFINE_LOCAL) line += "*";
    for (uint32_t j = 0; j < in.nsrc && in.src_start + j < k.nsrc_pool; ++j)
      line += cat(" %", k.src_pool[in.src_start + j]);
    if (in.op == TG_KIR_CONST) {
      line += is_float(in.dtype) ? cat(" ", in.arg.f) : cat(" ", in.arg.i);
    } else if (in.op == TG_KIR_SPECIAL) {
      static const char* const kinds[] = {"global", "group", "local"};
      line += cat(" [", in.arg.i / 4 <= 2 ? kinds[in.arg.i / 4] : "?", " dim ", in.arg.i % 4, "]");
    } else if ((in.op == TG_KIR_CUSTOM || in.op == TG_KIR_CUSTOMI) && TG_ABI_HAS(&k, tg_kir_kernel, nstrings) &&
               in.arg.i >= 0 && static_cast<uint64_t>(in.arg.i) < k.nstrings && k.strings[in.arg.i]) {
      line += cat(" \"", k.strings[in.arg.i], "\"");
    } else if (in.op == TG_KIR_PARAM || in.op == TG_KIR_DEFINE_REG || in.op == TG_KIR_DEFINE_LOCAL ||
               in.op == TG_KIR_RANGE || in.op == TG_KIR_GEP) {
      line += cat(" arg=", in.arg.i);
    }
    out += line + "\n";
  }
  if (k.ninsts > max_lines) out += cat("  ... ", k.ninsts - max_lines, " more instructions\n");
  return out;
}

// The packed argument blob: `values[p]` is parameter p's bytes (little-endian: a buffer's address, or a var's
// value in its low bytes), placed at tg_param_layout's offsets.
inline std::vector<unsigned char> pack_args(const std::vector<tg_kir_param>& params,
                                            const std::vector<uint64_t>& values) {
  std::vector<size_t> offsets(params.size());
  std::vector<unsigned char> blob(tg_param_layout(params.data(), static_cast<uint32_t>(params.size()), offsets.data()));
  for (size_t p = 0; p < values.size() && p < params.size(); ++p)
    std::memcpy(blob.data() + offsets[p], &values[p], tg_param_size(&params[p]));
  return blob;
}

}  // namespace tg::sdk

namespace tg::sdk {

// pack_args for a builder's own parameters.
inline std::vector<unsigned char> pack(const Kir& kir, const std::vector<uint64_t>& values) {
  return pack_args(kir.params(), values);
}

}  // namespace tg::sdk
