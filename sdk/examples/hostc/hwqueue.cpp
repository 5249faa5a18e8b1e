// The HOSTC plugin's HWQueue: the SDK's host queue; an exec calls the kernel on all its work-items at once.
#include "hostc_plugin.hpp"

namespace tg::hostc {

void QueueHooks::run(Device&, const Program& program, const unsigned char* args, uint64_t count) {
  if (count != 0) program.fn(args, 0, static_cast<int64_t>(count));
}

}  // namespace tg::hostc
