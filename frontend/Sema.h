// Semantic analysis: names, imports, element types with weak literals,
// symbolic shapes, call bindings and statement structure.
//
// Sema walks every file of a program, reports every error it finds (codes
// E01xx and E02xx) and annotates the AST in place: each expression's
// ExprInfo receives its types, weak literals receive the dtype they adopt,
// and the side tables below record what lowering needs (which operation a
// call denotes and its compile-time attributes, how an index expression
// splits into static and dynamic parts). Functions are checked once with
// their symbols left symbolic; the specializer re-checks each binding.
#pragma once

#include "frontend/AST.h"
#include "stdlib/Registry.h"
#include "ir/Attribute.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::frontend {

/// Every file of a program, the main file first, imports after it.
struct Program {
  std::vector<std::unique_ptr<SourceFile>> files;
};

/// What a call expression denotes.
struct CallInfo {
  bool userFunction = false;
  const FnItem *fn = nullptr;          // user function
  ir::OpKind kind = ir::OpKind::Print; // standard-library operation
  std::vector<ir::NamedAttr> attrs;    // canonical attributes
  std::vector<const Expr *> operands;  // in operand order
};

/// An index expression `x[...]` split into one static slice and dynamic
/// single-element picks (applied after the slice, highest axis first).
struct IndexInfo {
  std::vector<int64_t> start, stop, step, drop; // over the base's rank
  struct Dynamic {
    int64_t axis; // axis in the sliced result
    const Expr *index;
  };
  std::vector<Dynamic> dynamic;
  bool needsSlice = false;
};

/// How a param is initialized, as Sema resolved it: an operation with its
/// attributes (every value evaluated, consts included; a weight file's path
/// resolved against the declaring file), or, when `fromExpr`, the
/// initializer expression itself (a literal or constant expression).
struct ParamInit {
  bool fromExpr = false;
  ir::OpKind kind{};                // load, zeros, ones, full, random_*
  std::vector<ir::NamedAttr> attrs; // in the operation's order
};

/// A checked program: the items by name and the side tables.
struct CheckedProgram {
  Program *program = nullptr;
  std::vector<const DeviceItem *> devices; // declaration order
  std::vector<const Item *> globals;       // params and consts, in order
  std::vector<const FnItem *> functions;   // in order
  std::map<std::string, const FnItem *> fnByName;
  std::map<std::string, const Item *> globalByName;
  std::map<std::string, const DeviceItem *> deviceByName;
  std::unordered_map<const Expr *, CallInfo> calls;
  std::unordered_map<const Expr *, IndexInfo> indexes;
  /// The type each global (param or const) has.
  std::map<std::string, ir::TensorType> globalTypes;
  /// The devices of the program, each with every argument of its kind
  /// (evaluated, defaults filled in); the implicit host device when the
  /// program declares none.
  std::vector<ir::Device> irDevices;
  /// How each param is initialized.
  std::unordered_map<const Item *, ParamInit> paramInits;
  /// For each function, its result types (declared or inferred).
  std::unordered_map<const FnItem *, std::vector<ir::TensorType>> fnResults;
};

/// Checks a program. Returns null when any error was reported.
std::unique_ptr<CheckedProgram> checkProgram(Program &program,
                                             ir::DiagnosticEngine &diags);

/// The Levenshtein-closest candidate within a small distance, or "".
std::string closestName(const std::string &name,
                        const std::vector<std::string> &candidates);

} // namespace mdl::frontend
