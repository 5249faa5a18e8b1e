/* A plugin as one built against ABI 1.0 looks to a newer core: the INTERP plugin's slots in a table whose
 * struct_size ends at 1.0's last slot and whose abi_minor is 0. The bytes after that end hold garbage where 1.1 put
 * its optional slots: a core that read past struct_size would call them and crash. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "tg/plugin_abi.h"

static struct {
  tg_plugin_api api;
  char poison[64];
} table;

__attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                              tg_status_t* out_status) {
  void* lib = dlopen(TG_INTERP_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  tg_plugin_get_api_fn get = lib ? (tg_plugin_get_api_fn)dlsym(lib, TG_ABI_ENTRY_POINT) : NULL;
  const tg_plugin_api* real = get ? get(major, minor, out_status) : NULL;
  if (!real) return NULL;
  memcpy(&table.api, real, TG_PLUGIN_API_SIZE_1_0);
  memset((char*)&table + TG_PLUGIN_API_SIZE_1_0, 0xab, sizeof(table) - TG_PLUGIN_API_SIZE_1_0);
  table.api.struct_size = TG_PLUGIN_API_SIZE_1_0;
  table.api.abi_minor = 0;
  table.api.plugin_name = "interp-abi-1.0";
  return &table.api;
}
