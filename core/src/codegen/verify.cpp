// The core's use of the shared KIR verifier (the runtime calls it where TG_CHECK_IR or the build type asks).
#include "codegen/verify.hpp"

#include "tg/error.hpp"
#include "tg/sdk/verify_kir.hpp"

namespace tg::codegen {

void verify_lowered(const KirProgram& kir) {
  const tg_kir_kernel view = kir.view();
  if (auto broken = sdk::verify_kir(&view))
    throw Error("tg: lowering produced malformed KIR (a bug in tg): " + *broken);
}

}  // namespace tg::codegen
