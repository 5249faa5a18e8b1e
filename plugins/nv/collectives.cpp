// The NV plugin's device collectives (tg/plugin_collectives.h): NCCL, opened at run time like the driver (the
// toolkit ships libnccl.so.2), so the plugin builds and loads without it and says what is missing when asked.
// Each comm owns a stream: NCCL enqueues there, and every call waits for it, as the extension's calls block.
#include <tg/plugin_collectives.h>
#include <tg/sdk/runtime_library.hpp>

#include <cstdlib>
#include <cstring>

#include "nv_plugin.hpp"

namespace tg::nv {

using sdk::cat;
using sdk::Error;
using sdk::guard;
using sdk::guard_void;
using sdk::require;
using sdk::slot_where;

namespace {

// nccl.h's types, declared here (building needs no NCCL headers).
struct NcclUniqueId {
  char internal[128];
};
using ncclComm_t = struct ncclComm*;
using ncclResult_t = int;
constexpr ncclResult_t kNcclSuccess = 0;
enum NcclType : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
};
enum NcclOp : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };

struct NcclApi {
  ncclResult_t (*ncclGetUniqueId)(NcclUniqueId*);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t*, int, NcclUniqueId, int);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclAllReduce)(const void*, void*, size_t, int, int, ncclComm_t, CUstream);
  const char* (*ncclGetErrorString)(ncclResult_t);
};

struct LoadedNccl {
  NcclApi api{};
  std::string error;  // why NCCL is unusable; empty when it is
};

// NV_NCCL_LIBRARY, else the loader's libnccl.so.2, else the toolkit's that CMake found at build time.
const LoadedNccl& loaded_nccl() {
  static const LoadedNccl loaded = [] {
    LoadedNccl out;
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("NV_NCCL_LIBRARY"); env != nullptr && *env != '\0') candidates.push_back(env);
    candidates.insert(candidates.end(), {"libnccl.so.2", "libnccl.so"});
#ifdef TG_NV_NCCL_HINT
    candidates.push_back(TG_NV_NCCL_HINT);
#endif
    std::vector<std::pair<std::string, std::string>> refused;
    void* lib = sdk::open_first(candidates, &refused);
    if (lib == nullptr) {
      out.error = cat("cannot load NCCL (libnccl.so.2; ", refused.empty() ? "" : refused.back().second,
                      "): it ships with the CUDA toolkit, or set NV_NCCL_LIBRARY");
      return out;
    }
    static const char* const names[] = {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclAllReduce",
                                        "ncclGetErrorString"};
    if (std::string missing = sdk::resolve_api(lib, out.api, names); !missing.empty())
      out.error = cat("NCCL has no ", missing);
    return out;
  }();
  return loaded;
}

const NcclApi& nccl() {
  const LoadedNccl& n = loaded_nccl();
  if (!n.error.empty()) throw Error(TG_ERR_UNAVAILABLE, n.error);
  return n.api;
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r != kNcclSuccess)
    throw Error(TG_ERR_INTERNAL, cat(call, " failed: ", nccl().ncclGetErrorString(r), " (", r, ")"));
}

struct Comm {
  std::shared_ptr<Device> device;
  ncclComm_t comm = nullptr;
  CUstream stream = nullptr;
  ~Comm() {  // best effort, never throwing (a half-made comm is destroyed on the error path)
    if (!device) return;
    try {
      device->bind();
      if (comm) nccl().ncclCommDestroy(comm);
      if (stream) cuda().cuStreamDestroy(stream);
    } catch (...) {}
  }
};

int nccl_type(uint32_t dtype) {
  switch (dtype) {
    case TG_DTYPE_INT8: return ncclInt8;
    case TG_DTYPE_UINT8: return ncclUint8;
    case TG_DTYPE_INT32: return ncclInt32;
    case TG_DTYPE_INT64: return ncclInt64;
    case TG_DTYPE_FLOAT16: return ncclFloat16;
    case TG_DTYPE_BFLOAT16: return ncclBfloat16;
    case TG_DTYPE_FLOAT32: return ncclFloat32;
    case TG_DTYPE_FLOAT64: return ncclFloat64;
    default: throw Error(TG_ERR_UNSUPPORTED, cat("NCCL has no reduction of dtype ", dtype));
  }
}

constexpr std::string_view kPlugin = "nv", kGroupId = "collectives.group_id", kCommCreate = "collectives.comm_create",
                           kCommDestroy = "collectives.comm_destroy", kAllreduce = "collectives.allreduce";

tg_status_t group_id(void* out_id) noexcept {
  return guard(slot_where<kPlugin, kGroupId>, [&] {
    NcclUniqueId id{};
    check_nccl(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(require(out_id, "out_id"), &id, sizeof id);
  });
}

tg_status_t comm_create(tg_device device, const void* id, uint32_t nranks, uint32_t rank, void** out_comm) noexcept {
  return guard(slot_where<kPlugin, kCommCreate>, [&] {
    if (nranks == 0 || rank >= nranks) throw Error(TG_ERR_INVALID_ARGUMENT, cat("rank ", rank, " of ", nranks));
    auto c = std::make_unique<Comm>();
    c->device = device_of(device);
    c->device->bind();
    check_cu(cuda().cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    NcclUniqueId uid{};
    std::memcpy(&uid, require(id, "id"), sizeof uid);
    check_nccl(nccl().ncclCommInitRank(&c->comm, static_cast<int>(nranks), uid, static_cast<int>(rank)),
               "ncclCommInitRank");
    *require(out_comm, "out_comm") = c.release();
  });
}

void comm_destroy(void* comm) noexcept {
  guard_void(slot_where<kPlugin, kCommDestroy>, [&] { delete static_cast<Comm*>(comm); });
}

tg_status_t allreduce(void* comm, const tg_buffer_desc* dst, const tg_buffer_desc* src, uint64_t count, uint32_t dtype,
                      uint32_t op) noexcept {
  return guard(slot_where<kPlugin, kAllreduce>, [&] {
    Comm& c = *static_cast<Comm*>(require(comm, "comm"));
    if (op > TG_REDUCE_MIN) throw Error(TG_ERR_INVALID_ARGUMENT, cat("reduce op ", op));
    const int type = nccl_type(dtype);
    c.device->bind();
    const int nop = op == TG_REDUCE_SUM ? ncclSum : op == TG_REDUCE_MAX ? ncclMax : ncclMin;
    check_nccl(
        nccl().ncclAllReduce(reinterpret_cast<const void*>(require(src, "src")->addr),
                             reinterpret_cast<void*>(require(dst, "dst")->addr), count, type, nop, c.comm, c.stream),
        "ncclAllReduce");
    check_cu(cuda().cuStreamSynchronize(c.stream), "cuStreamSynchronize");
  });
}

}  // namespace

const void* Lifecycle::get_extension(const char* name) noexcept {
  static const tg_collectives_v1 table{
      sizeof(tg_collectives_v1), sizeof(NcclUniqueId), "NCCL", group_id, comm_create, comm_destroy, allreduce};
  return name != nullptr && std::strcmp(name, TG_EXT_COLLECTIVES_V1) == 0 ? &table : nullptr;
}

}  // namespace tg::nv
