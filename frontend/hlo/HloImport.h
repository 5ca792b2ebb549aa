// Importing XLA HLO text: a hand-written, streaming reader (HLO dumps reach
// gigabytes, mostly constant literals) and the translation of the entry
// computation, and everything it calls, into mdl IR.
//
// Constants over 1 KiB never enter the IR: they are streamed into a
// safetensors weight file and referenced by `load` operations. Locations
// point at the `.hlo` line. Unsupported constructs are all reported in one
// run (E0601); malformed text is E0602 with line and column.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <string>

namespace mdl::frontend::hlo {

struct HloImportOptions {
  /// Where constants over 1 KiB are written (a safetensors file); the IR's
  /// `load` operations reference this path.
  std::string weightsOut;
  /// Values for elided constants (`constant({...})`), keyed by instruction
  /// name (`--weights FILE`).
  std::string elidedWeights;
  /// `--fill-elided=zeros`: elided constants become zeros, with a warning.
  bool fillElidedZeros = false;
  /// Show a progress bar on stderr for large inputs when it is a terminal.
  bool progress = true;
};

/// Reads and translates an HLO text file. Returns null after reporting
/// diagnostics.
std::unique_ptr<ir::Module> importHloFile(const std::string &path,
                                          ir::DiagnosticEngine &diags,
                                          const HloImportOptions &opts);

} // namespace mdl::frontend::hlo
