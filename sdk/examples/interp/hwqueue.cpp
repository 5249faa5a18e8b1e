// The INTERP plugin's HWQueue: the SDK's host queue (tg/sdk/host_queue.hpp: commands recorded, then run in order
// on the submitting thread), whose exec command interprets its program once per work-item of global dim 0.
//
// A command that fails (an out-of-bounds access) ends the submit with its error; the commands after it do not
// run, and a wait for a signal they would have set reports that instead of hanging.
#include "interp_plugin.hpp"

namespace tg::interp {

void QueueHooks::run(Device& device, const Program& program, const unsigned char* args, uint64_t count) {
  execute(*program.code, device, args, count);
}

}  // namespace tg::interp
