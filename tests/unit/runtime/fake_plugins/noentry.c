/* A shared object named like a plugin that exports no tg_plugin_get_api. */
int tg_not_a_plugin(void) { return 42; }
