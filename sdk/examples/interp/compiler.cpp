// The INTERP plugin's Compiler: parses the Renderer's KIR text back into a kernel, checks it, and serializes it
// as the blob. There is no machine code: the "binary" is the KIR itself, which program_create decodes.
#include "interp_plugin.hpp"

#include <cstdlib>
#include <cstring>

struct tg_compiler_s {
  std::shared_ptr<tg::interp::Device> device;
};

namespace tg::interp {

using sdk::cat;
using sdk::Error;

namespace {

// Blob layout, little-endian: magic, version, then counts, the name, params (kind, dtype, writable), insts as the
// ABI lays them out, and the operand pool. Versioned, since the core may cache blobs on disk across releases.
constexpr char kMagic[8] = {'T', 'G', 'K', 'I', 'R', 'B', 'L', 'B'};
constexpr uint32_t kBlobVersion = 1;

template <class T>
void put(std::vector<char>& out, const T& value) {
  const char* bytes = reinterpret_cast<const char*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

std::vector<char> kir_to_blob(const tg_kir_kernel& k) {
  std::vector<char> out(kMagic, kMagic + sizeof kMagic);
  const std::string name = k.name ? k.name : "";
  put(out, kBlobVersion);
  put(out, static_cast<uint32_t>(name.size()));
  put(out, k.nparams);
  put(out, k.ninsts);
  put(out, k.nsrc_pool);
  put(out, k.global_dims);
  out.insert(out.end(), name.begin(), name.end());
  for (uint32_t p = 0; p < k.nparams; ++p) {
    put(out, k.params[p].kind);
    put(out, k.params[p].dtype);
    put(out, k.params[p].writable);
  }
  for (uint32_t i = 0; i < k.ninsts; ++i) put(out, k.insts[i]);
  for (uint32_t s = 0; s < k.nsrc_pool; ++s) put(out, k.src_pool[s]);
  return out;
}

KirCopy kir_from_blob(const void* blob, size_t size) {
  const char* at = static_cast<const char*>(blob);
  const char* const end = at + size;
  const auto take = [&](void* dst, size_t n) {
    if (static_cast<size_t>(end - at) < n)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob is truncated (", size, " bytes)"));
    std::memcpy(dst, at, n);
    at += n;
  };
  char magic[sizeof kMagic];
  take(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof magic) != 0)
    throw Error(TG_ERR_INVALID_ARGUMENT, "the blob is not an INTERP KIR blob (bad magic)");
  uint32_t version = 0, name_size = 0, nparams = 0, ninsts = 0, npool = 0;
  KirCopy k;
  take(&version, 4);
  if (version != kBlobVersion)
    throw Error(TG_ERR_INVALID_ARGUMENT,
                cat("the blob is INTERP KIR blob version ", version, "; this plugin reads ", kBlobVersion));
  take(&name_size, 4);
  take(&nparams, 4);
  take(&ninsts, 4);
  take(&npool, 4);
  take(&k.global_dims, 4);
  // Sizes come from the blob: bound them by what is left before allocating.
  const size_t left = static_cast<size_t>(end - at);
  if (name_size > left || nparams > left / 12 || ninsts > left / sizeof(tg_kir_inst) || npool > left / 4)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob is truncated (", size, " bytes)"));
  k.name.resize(name_size);
  take(k.name.data(), name_size);
  k.params.resize(nparams);
  k.param_names.resize(nparams);
  for (uint32_t p = 0; p < nparams; ++p) {
    take(&k.params[p].kind, 4);
    take(&k.params[p].dtype, 4);
    take(&k.params[p].writable, 4);
    k.param_names[p] = cat(k.params[p].kind == TG_PARAM_BUFFER ? "data" : "var", p);
  }
  k.insts.resize(ninsts);
  take(k.insts.data(), ninsts * sizeof(tg_kir_inst));
  k.src_pool.resize(npool);
  take(k.src_pool.data(), npool * sizeof(int32_t));
  if (at != end) throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob has ", end - at, " bytes past its end"));
  k.fix_names();
  return k;
}

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "interp";

  static std::unique_ptr<Compiler> create(tg_device device) {
    return std::unique_ptr<Compiler>(new Compiler{device_of(device)});
  }
  static sdk::Blob compile(Compiler& /*compiler*/, const char* source, const char* kernel_name) {
    const KirCopy kernel = kir_from_text(source);
    if (kernel_name != nullptr && *kernel_name != '\0' && kernel.name != kernel_name)
      throw Error(TG_ERR_COMPILE, cat("the source is kernel ", kernel.name, ", not ", kernel_name));
    const tg_kir_kernel view = kernel.view();
    try {
      decode(view);  // a compile error is reported as one, with the instruction named
    } catch (const Error& e) {
      throw Error(TG_ERR_COMPILE, e.what());
    }
    return sdk::Blob::copy_of(kir_to_blob(view));
  }
};

}  // namespace tg::interp

template struct tg::sdk::CompilerSlots<tg::interp::CompilerHooks>;
