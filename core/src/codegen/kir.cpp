// KIR construction, hashing and printing.
#include "codegen/kir.hpp"

#include <cstring>
#include <sstream>
#include <tg/sdk/abi_names.hpp>

namespace tg::codegen {

const char* kir_op_name(uint32_t op) { return sdk::op_name(op); }

int32_t KirProgram::add(tg_kir_op op, uint8_t dtype, uint8_t vcount, std::vector<int32_t> src, tg_kir_arg arg,
                        uint8_t addrspace) {
  hash_ = 0;
  tg_kir_inst in{};
  in.op = static_cast<uint16_t>(op);
  in.dtype = dtype;
  in.vcount = vcount;
  in.addrspace = addrspace;
  in.nsrc = static_cast<uint8_t>(src.size());
  in.src_start = static_cast<uint32_t>(src_pool.size());
  in.arg = arg;
  src_pool.insert(src_pool.end(), src.begin(), src.end());
  insts.push_back(in);
  return static_cast<int32_t>(insts.size() - 1);
}

tg_kir_kernel KirProgram::view() const {
  tg_kir_kernel k{};
  k.struct_size = sizeof(k);
  k.name = name.c_str();
  k.insts = insts.data();
  k.ninsts = static_cast<uint32_t>(insts.size());
  k.nsrc_pool = static_cast<uint32_t>(src_pool.size());
  k.src_pool = src_pool.data();
  k.params = params.data();
  k.nparams = static_cast<uint32_t>(params.size());
  k.global_dims = global_dims;
  string_ptrs_.clear();
  for (const auto& s : strings) string_ptrs_.push_back(s.c_str());
  k.strings = string_ptrs_.data();
  k.nstrings = static_cast<uint32_t>(string_ptrs_.size());
  return k;
}

int64_t KirProgram::add_string(std::string s) {
  hash_ = 0;
  strings.push_back(std::move(s));
  return static_cast<int64_t>(strings.size() - 1);
}

namespace {
void fnv(uint64_t& h, const void* data, size_t n) {
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
}
}  // namespace

uint64_t KirProgram::hash() const {
  if (hash_) return hash_;
  uint64_t h = 0xcbf29ce484222325ull;
  fnv(h, name.data(), name.size());
  for (const auto& in : insts) {
    uint64_t fields[] = {
        in.op, in.dtype, in.vcount, in.addrspace, in.nsrc, in.src_start, static_cast<uint64_t>(in.arg.i)};
    fnv(h, fields, sizeof(fields));
  }
  fnv(h, src_pool.data(), src_pool.size() * sizeof(int32_t));
  for (const auto& p : params) {
    uint32_t f[] = {p.kind, p.dtype, p.writable, p.reserved};
    fnv(h, f, sizeof(f));
  }
  for (const auto& s : strings) fnv(h, s.c_str(), s.size() + 1);
  return hash_ = h ? h : 1;
}

std::string KirProgram::dump() const {
  std::ostringstream os;
  os << "kernel " << name << "\n";
  for (size_t i = 0; i < insts.size(); ++i) {
    const auto& in = insts[i];
    os << "  %" << i << " = " << kir_op_name(in.op) << " dt=" << int(in.dtype);
    if (in.vcount > 1) os << "x" << int(in.vcount);
    os << " [";
    for (uint32_t s = 0; s < in.nsrc; ++s) os << (s ? " %" : "%") << src_pool[in.src_start + s];
    os << "] arg=";
    if (in.op == TG_KIR_CONST && in.dtype >= TG_DTYPE_FLOAT16)
      os << in.arg.f;
    else
      os << in.arg.i;
    if ((in.op == TG_KIR_CUSTOM || in.op == TG_KIR_CUSTOMI) && in.arg.i >= 0 &&
        static_cast<size_t>(in.arg.i) < strings.size())
      os << " \"" << strings[in.arg.i] << "\"";
    os << "\n";
  }
  return os.str();
}

}  // namespace tg::codegen
