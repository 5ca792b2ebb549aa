// The streaming HLO text reader: text in, HloModule out, large constant
// literals streamed into a weight file on the way.
//
// It accepts the syntax variants of XLA's dumps and tests from 2017 on:
// files with or without an `HloModule` line (the old trailing-colon form
// too), `FileNames`/`FunctionNames`/`FileLocations`/`StackFrames` tables,
// computations with signature or bare headers, with or without `ENTRY` and
// `ROOT` (the last computation and the last instruction stand in), names
// with or without `%`, inline operand shapes, layouts (tiling, memory
// space), bounded dynamic dimensions, nested and empty tuples, comments
// anywhere, and any attribute: values are captured as balanced raw text.
#pragma once

#include "frontend/hlo/HloLexer.h"
#include "frontend/hlo/HloModule.h"
#include "frontend/hlo/WeightWriter.h"

#include <functional>
#include <optional>
#include <string>

namespace mdl::frontend::hlo {

struct HloReadOptions {
  /// Literals of more bytes than this go to the weight file.
  size_t inlineLimit = 1024;
  /// The weight file, opened on first use; returns null with a message when
  /// it cannot be created. Without it, large literals are an error.
  std::function<WeightWriter *(std::string &error)> weights;
  /// Called about every MiB of input with the current byte offset.
  std::function<void(size_t offset)> progress;
};

/// Parses `[begin, end)`. Returns the first syntax error (E0602), if any.
std::optional<HloSyntaxError> readHloText(const char *begin, const char *end,
                                          const HloReadOptions &opts, HloModule &out);

/// Internal to the reader: parses the literal of a constant whose `(` was
/// just consumed, up to and including the closing `)`, storing it in
/// `inst.literal` (inline, streamed to the weight file, or elided).
void readLiteral(Cursor &c, HloInstruction &inst, const HloReadOptions &opts,
                 const std::string &key);

} // namespace mdl::frontend::hlo
