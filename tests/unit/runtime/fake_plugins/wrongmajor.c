/* A plugin whose table claims ABI major 99: the core must refuse it and name both versions. */
#include <string.h>

#include "tg/plugin_abi.h"

static tg_plugin_api api;

__attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                              tg_status_t* out_status) {
  (void)major, (void)minor, (void)out_status;
  memset(&api, 0xab, sizeof(api)); /* garbage in every slot: the core must not call any of them */
  api.struct_size = sizeof(api);
  api.abi_major = 99;
  api.abi_minor = 0;
  api.plugin_name = "future";
  api.device_name = "FUTURE";
  return &api;
}
