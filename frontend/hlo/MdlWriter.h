// Writes an IR module as readable mdl source (`mdl import`): devices,
// params loaded from the weight file, and one `fn` per function, one `let`
// per operation, with names taken from the HLO instructions.
//
// Library operations are written as calls with keyword attributes, core
// arithmetic as operators, slices as indexing, `if`/`while` as expressions
// (a loop condition of several operations becomes a helper function). A
// constant whose elements are all equal becomes `full(TYPE, v)`; any other
// constant moves into the weight file as a param, so the source never holds
// literal data and reads back bit-exactly.
#pragma once

#include "frontend/hlo/HloTranslator.h"
#include "frontend/hlo/WeightWriter.h"

#include <functional>
#include <ostream>

namespace mdl::frontend::hlo {

struct MdlWriteOptions {
  /// Names for values and arguments (from the HLO instructions).
  const NameHints *names = nullptr;
  /// The weight file: its path as the IR's `load` operations spell it, and
  /// how the source should spell it (relative to the .mdl file).
  std::string weightsPath;
  std::string weightsSpelling;
  /// Opens (or returns) the weight file, for constants moved out of the
  /// source; null with a message when it cannot be created.
  std::function<WeightWriter *(std::string &error)> weights;
  /// A header comment line, e.g. the source file it was imported from.
  std::string banner;
};

/// Writes `m`; false with a message when something cannot be written.
bool writeMdl(const ir::Module &m, std::ostream &os, const MdlWriteOptions &opts,
              std::string &error);

} // namespace mdl::frontend::hlo
