// The NV plugin's device-collectives extension (tg/plugin_collectives.h over NCCL), as far as a machine without a
// GPU can take it: the plugin serves the table, NCCL (which ships with the CUDA toolkit) makes a group id or says
// why not, and joining a group without a device is refused with a message, never a crash. A run on two GPUs is
// scripts/device-check-nv.sh's job.
#include <gtest/gtest.h>
#include <tg/plugin_collectives.h>

#include <dlfcn.h>

#include <string>
#include <vector>

namespace {

const tg_plugin_api* nv_api() {
  static void* lib = dlopen(TG_NV_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto entry = reinterpret_cast<tg_plugin_get_api_fn>(dlsym(lib, "tg_plugin_get_api"));
  tg_status_t st = nullptr;
  return entry ? entry(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &st) : nullptr;
}

std::string take(const tg_plugin_api* api, tg_status_t st) {
  if (st == nullptr) return "";
  std::string m = st->message ? st->message : "(no message)";
  api->status_free(st);
  return m;
}

TEST(NcclExtension, TheNvPluginServesIt) {
  const tg_plugin_api* api = nv_api();
  ASSERT_NE(api, nullptr) << "cannot load " << TG_NV_PLUGIN_PATH << ": " << dlerror();
  ASSERT_NE(api->get_extension, nullptr);
  EXPECT_EQ(api->get_extension("tg.no_such_extension.v9"), nullptr);
  const auto* ext = static_cast<const tg_collectives_v1*>(api->get_extension(TG_EXT_COLLECTIVES_V1));
  ASSERT_NE(ext, nullptr);
  EXPECT_GE(ext->struct_size, sizeof(tg_collectives_v1));
  EXPECT_EQ(ext->id_bytes, 128u);  // ncclUniqueId
  EXPECT_STREQ(ext->library, "NCCL");

  std::vector<char> id(ext->id_bytes);
  const tg_status_t made = ext->group_id(id.data());
  const int code = made ? made->code : 0;
  const std::string why = take(api, made);
  EXPECT_TRUE(why.empty() || code == TG_ERR_UNAVAILABLE || code == TG_ERR_INTERNAL) << why;
  std::printf("NCCL group id: %s\n", why.empty() ? "made" : why.c_str());

  void* comm = nullptr;
  const std::string no_device = take(api, ext->comm_create(nullptr, id.data(), 2, 0, &comm));
  EXPECT_NE(no_device.find("device"), std::string::npos) << no_device;
  EXPECT_EQ(comm, nullptr);
  const std::string bad_rank = take(api, ext->comm_create(nullptr, id.data(), 2, 5, &comm));
  EXPECT_NE(bad_rank.find("rank 5 of 2"), std::string::npos) << bad_rank;
}

}  // namespace
