// libFuzzer target for the HLO import: reads and translates arbitrary bytes
// as HLO text (half of the inputs with elided constants filled with zeros),
// verifies every module that imports, and writes it back as mdl source.
// Any crash, sanitizer report, hang or unbounded allocation is a bug: a
// malformed input must end in a diagnostic.
//
// Built only with -DMDL_FUZZ=ON and clang; run from the corpus:
//   build-fuzz/tests/hlo_fuzzer -max_total_time=600 CORPUS_DIR ../shared/corpus/hlo
#include "backend/cpu/CpuDevice.h"
#include "backend/hip/HipKind.h"
#include "backend/mpc/MpcKind.h"
#include "frontend/hlo/HloImporter.h"
#include "frontend/hlo/MdlWriter.h"
#include "ir/passes/Verify.h"

#include <sstream>
#include <string>
#include <unistd.h>

// The device kinds, registered once as the mdl tool's main does.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mdl::backend::cpu::registerCpuKind();
  mdl::backend::hip::registerHipKind();
  mdl::backend::mpc::registerMpcKind();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace mdl;
  static const std::string weights =
      "/tmp/hlo_fuzz_" + std::to_string(getpid()) + ".safetensors";
  ir::DiagnosticEngine diags;
  frontend::hlo::HloImportOptions opts;
  opts.weightsOut = weights;
  opts.progress = false;
  opts.fillElidedZeros = size % 2 == 1;
  frontend::hlo::HloImportResult r;
  bool ok = frontend::hlo::importHloText(reinterpret_cast<const char *>(data), size, "fuzz.hlo",
                                         diags, opts, r);
  if (ok && r.module) {
    std::vector<std::string> problems = passes::verifyModule(*r.module);
    if (!problems.empty())
      __builtin_trap(); // an imported module must verify
    frontend::hlo::MdlWriteOptions wo;
    wo.names = &r.names;
    wo.weightsPath = weights;
    wo.weightsSpelling = "fuzz.safetensors";
    wo.weights = [&](std::string &err) -> frontend::hlo::WeightWriter * {
      if (!r.weights) {
        auto w = std::make_unique<frontend::hlo::WeightWriter>();
        if (!w->open(weights, err))
          return nullptr;
        r.weights = std::move(w);
      }
      return r.weights.get();
    };
    std::ostringstream os;
    std::string err;
    frontend::hlo::writeMdl(*r.module, os, wo, err);
  }
  if (r.weights) {
    std::string err;
    r.weights->finish(err);
  }
  diags.reset();
  return 0;
}
