// Specialization: generic functions become one function per binding of
// their symbols, reachable from the entry.
//
// Every operation's result type is re-derived from its operands with the
// registry's shape rules, so a binding that makes a generic body invalid
// (two symbols bound to sizes that do not broadcast, say) is reported at
// the operation with the binding that caused it. When the entry's argument
// types are symbolic (`mdl check` of `main(x: f32[B, 4])`), those symbols
// stay symbolic.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace mdl::passes {

struct SpecializeOptions {
  /// Entry functions to start from; empty means `main` if it exists, else
  /// every function that no other function calls.
  std::vector<std::string> entries;
  /// Argument types for the (single) entry; empty means as declared.
  std::vector<ir::TensorType> entryArgs;
  /// Names every instance of a generic function after its binding
  /// (`f.N3`, `dense.B1_N3_M2`) instead of numbering the instances of each
  /// function in the order they are reached (`f`, or `f.1`, `f.2`): an
  /// instance then has the same name, and the same code, whatever else the
  /// program calls. The REPL asks for it so that the JIT's compile cache,
  /// keyed by each function's text, finds instances compiled earlier.
  bool stableNames = false;
};

/// Returns the specialized module, or null after reporting errors.
std::unique_ptr<ir::Module> specialize(const ir::Module &m,
                                       const SpecializeOptions &opts,
                                       ir::DiagnosticEngine &diags);

/// Binds the symbols of `params` from `args` (static sizes or symbols);
/// returns false with a message on a conflict or a mismatch.
bool bindSymbols(const std::vector<ir::TensorType> &params,
                 const std::vector<ir::TensorType> &args,
                 std::vector<std::pair<std::string, ir::Dim>> &binding,
                 std::string &error);

} // namespace mdl::passes
