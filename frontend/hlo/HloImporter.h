// Internal to the HLO import: the whole import (map the file, read it,
// translate) with the by-products `mdl import` needs besides the module:
// names for IR values and the still-open weight file, into which the mdl
// writer adds the small constants it moves out of the source.
#pragma once

#include "frontend/hlo/HloImport.h"
#include "frontend/hlo/HloTranslator.h"
#include "frontend/hlo/WeightWriter.h"

namespace mdl::frontend::hlo {

struct HloImportResult {
  std::unique_ptr<ir::Module> module;
  NameHints names;
  /// The weight file (null when nothing was written to it); still open.
  std::unique_ptr<WeightWriter> weights;
};

/// Imports `path`; false after reporting diagnostics. The weight file, when
/// one was opened, is left open in `out.weights` for the caller to finish.
bool importHlo(const std::string &path, ir::DiagnosticEngine &diags,
               const HloImportOptions &opts, HloImportResult &out);

/// Imports HLO text held in memory (tests, the fuzzer); `name` is the file
/// name used in locations.
bool importHloText(const char *data, size_t size, const std::string &name,
                   ir::DiagnosticEngine &diags, const HloImportOptions &opts,
                   HloImportResult &out);

} // namespace mdl::frontend::hlo
