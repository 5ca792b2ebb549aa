// libFuzzer target for the mdl frontend and the placement passes: arbitrary
// bytes are parsed, checked and lowered; every module that lowers must
// verify, and then specialize, affinity, insertTransfers and partition run
// on it and must keep it valid. A malformed input must end in diagnostics:
// any crash, sanitizer report, hang, failed verification or unbounded
// allocation is a bug.
//
// Built only with -DMDL_FUZZ=ON and clang; run from the conformance programs:
//   build-fuzz/tests/mdl_fuzzer -max_total_time=600 CORPUS ../shared/conformance/run
#include "backend/cpu/CpuDevice.h"
#include "backend/hip/HipKind.h"
#include "backend/mpc/MpcKind.h"
#include "frontend/Lower.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/SourceManager.h"
#include "ir/passes/Affinity.h"
#include "ir/passes/InsertTransfers.h"
#include "ir/passes/Partition.h"
#include "ir/passes/Specialize.h"
#include "ir/passes/Verify.h"

#include <string>

// The device kinds, registered once as the mdl tool's main does.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mdl::backend::cpu::registerCpuKind();
  mdl::backend::hip::registerHipKind();
  mdl::backend::mpc::registerMpcKind();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace mdl;
  frontend::SourceManager sm;
  ir::DiagnosticEngine diags;
  const frontend::SourceBuffer *buf =
      sm.addBuffer("fuzz.mdl", std::string(reinterpret_cast<const char *>(data), size));
  auto program = frontend::loadProgramFromBuffer(*buf, sm, diags);
  if (!program)
    return 0;
  auto checked = frontend::checkProgram(*program, diags);
  if (!checked)
    return 0;
  auto module = frontend::lowerProgram(*checked);
  if (!passes::verifyModule(*module).empty())
    __builtin_trap(); // lowering a checked program must give valid IR
  auto spec = passes::specialize(*module, {}, diags);
  if (!spec)
    return 0;
  if (!passes::verifyModule(*spec).empty())
    __builtin_trap();
  passes::AffinityOptions ao;
  auto placed = passes::affinity(*spec, ao, diags);
  if (!placed || !passes::insertTransfers(*placed, diags))
    return 0;
  passes::partition(*placed);
  if (!passes::verifyModule(*placed).empty())
    __builtin_trap();
  return 0;
}
