/* A plugin with a well-formed header whose hwqueue_wait slot, mandatory since ABI 1.0, is NULL: the core must
 * refuse it by the slot's name instead of crashing on the first wait. Every other slot holds garbage that must
 * never be called. */
#include <string.h>

#include "tg/plugin_abi.h"

static tg_plugin_api api;

__attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                              tg_status_t* out_status) {
  (void)major, (void)minor, (void)out_status;
  memset(&api, 0xab, sizeof(api));
  api.struct_size = sizeof(api);
  api.abi_major = TG_ABI_VERSION_MAJOR;
  api.abi_minor = TG_ABI_VERSION_MINOR;
  api.plugin_name = "nullslot";
  api.device_name = "NULLSLOT";
  api.hwqueue_wait = NULL;
  return &api;
}
