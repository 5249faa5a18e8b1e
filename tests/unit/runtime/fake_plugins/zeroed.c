/* A plugin whose entry point hands back an all-zero table: version 0.0 and struct_size 0 must never look valid. */
#include "tg/plugin_abi.h"

static tg_plugin_api api; /* zero-initialised */

__attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                              tg_status_t* out_status) {
  (void)major, (void)minor, (void)out_status;
  return &api;
}
