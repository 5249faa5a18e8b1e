/* A plugin that refuses the core's ABI version through the entry point's status. */
#include <stdlib.h>
#include <string.h>

#include "tg/plugin_abi.h"

__attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                              tg_status_t* out_status) {
  (void)major, (void)minor;
  tg_status* st = (tg_status*)malloc(sizeof(tg_status));
  st->code = TG_ERR_ABI;
  st->message = strdup("this plugin implements ABI 0.9 only");
  *out_status = st;
  return NULL;
}
