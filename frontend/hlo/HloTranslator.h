// Internal to the HLO import: the translator from an HloModule to mdl IR.
//
// 1. Index the computations and find which are referenced (call targets,
//    loop bodies, branches, reducers, comparators).
// 2. The ENTRY computation becomes `main`; every computation reached by a
//    `call`, used as a reducer or comparator that is not recognized, or not
//    referenced at all becomes a function (worklist, no recursion across
//    functions). Loop bodies and conditions, conditional branches and
//    fusions are inlined into the regions that use them.
// 3. Within a computation, instructions are translated in dependency order.
//    Tuples are flattened: an HLO value is a list of IR values (its array
//    leaves) plus its HLO shape, and get-tuple-element picks a range.
// 4. Unsupported constructs report E0601 and poison their value; anything
//    computed from a poisoned value is skipped silently, so one run lists
//    every unsupported construct once.
#pragma once

#include "frontend/hlo/HloImport.h"
#include "frontend/hlo/HloModule.h"

#include <map>
#include <set>
#include <unordered_map>

namespace mdl::frontend::hlo {

/// An HLO value in IR: its array leaves, in order, and its HLO shape.
struct HVal {
  std::vector<ir::Value *> leaves;
  const HloShape *shape = nullptr;
  bool poisoned = false;
};

struct TranslateOptions {
  /// The weight file the reader streamed large constants into.
  std::string weightsFile;
  std::string elidedWeights;
  bool fillElidedZeros = false;
};

/// Names for IR values and functions, for the mdl writer.
using NameHints = std::unordered_map<const ir::Value *, std::string>;

class Translator {
public:
  Translator(const HloModule &m, uint32_t fileId, const TranslateOptions &opts,
             ir::DiagnosticEngine &diags);
  /// Translates the whole module; null after errors.
  std::unique_ptr<ir::Module> run();
  NameHints &names() { return names_; }

  // --- used by the per-opcode translation (HloTranslateOps.cpp) ---------

  /// Translates one instruction given its operands' values.
  HVal translateOp(const HloInstruction &inst, const std::vector<const HVal *> &operands);
  /// Emits an operation at the current instruction's location, checking
  /// the registry's shape rule against `types`. Null after an error.
  ir::Operation *emit(ir::OpKind kind, const std::vector<ir::Value *> &operands,
                      std::vector<ir::NamedAttr> attrs,
                      const std::vector<ir::TensorType> &types);
  ir::Value *emit1(ir::OpKind kind, const std::vector<ir::Value *> &operands,
                   std::vector<ir::NamedAttr> attrs, const ir::TensorType &type) {
    ir::Operation *op = emit(kind, operands, std::move(attrs), {type});
    return op ? op->result() : nullptr;
  }
  /// A scalar constant of `t` holding `v` (converted as `cast` converts).
  ir::Value *scalarConstant(ir::DType t, double v);
  /// The IR type of an array shape; reports E0601 for element types mdl
  /// cannot store.
  std::optional<ir::TensorType> typeOf(const HloShape &s);
  /// Reports E0601 for the current instruction (or at `pos`).
  void unsupported(const std::string &construct, const std::string &why);
  /// Reports E0602 (malformed) at the current instruction or an attribute.
  void malformed(const std::string &msg, const HloAttr *at = nullptr);
  /// A required attribute, or null after reporting it missing.
  const HloAttr *need(const char *name);
  /// The computation an attribute names, or null after reporting.
  const HloComputation *computationAttr(const char *name);
  /// A reducer computation recognized as a named reduction over scalars
  /// (`add`, `mul`, `max`, `min`, `and`, `or`), or empty.
  std::string recognizeReducer(const HloComputation &c, bool unsignedType);
  /// `assign` (root is parameter 1) or a recognized reducer, for scatter.
  std::string recognizeCombiner(const HloComputation &c, bool unsignedType);
  /// The function for a computation (created on first use, body queued).
  ir::Function *functionFor(const HloComputation &c);
  /// Inlines a computation into the current region with the given
  /// parameter leaves; returns its root value.
  HVal inlineComputation(const HloComputation &c, const std::vector<ir::Value *> &params);

  const HloComputation *findComputation(const std::string &name) const {
    auto it = comps_.find(name);
    return it == comps_.end() ? nullptr : it->second;
  }
  const HloInstruction *cur() const { return cur_; }
  ir::Region *region() const { return region_; }
  void setRegion(ir::Region *r) { region_ = r; }
  ir::Location loc() const { return loc_; }
  const TranslateOptions &options() const { return opts_; }
  ir::Module &module() { return *module_; }
  /// The constant value of a scalar instruction operand, when it is one.
  std::optional<double> constantScalar(const HVal &v);

private:
  HVal translateComputation(const HloComputation &c, const std::vector<ir::Value *> &params);
  void translateFunction(const HloComputation &c, ir::Function &f);
  HVal translateConstant(const HloInstruction &inst);
  /// Reports what in an instruction that is not translated (its operands
  /// failed, or its computation is never reached) mdl does not support.
  void scanUnsupported(const HloInstruction &inst);
  int deviceFor(int64_t ordinal);
  std::string uniqueFunctionName(const std::string &hloName);
  std::string uniqueGlobalName(const std::string &key);

  const HloModule &m_;
  uint32_t file_;
  const TranslateOptions &opts_;
  ir::DiagnosticEngine &diags_;
  std::unique_ptr<ir::Module> module_;
  std::map<std::string, const HloComputation *> comps_;
  std::map<const HloComputation *, ir::Function *> functions_;
  std::vector<std::pair<const HloComputation *, ir::Function *>> pending_;
  std::set<std::string> fnNames_, globalNames_;
  std::vector<const HloComputation *> inlining_; // the inline stack
  std::set<const HloComputation *> visited_;
  const HloInstruction *cur_ = nullptr;
  ir::Region *region_ = nullptr;
  ir::Location loc_;
  NameHints names_;
  std::unordered_map<const ir::Value *, double> scalarConstants_;
  unsigned errors_ = 0;
};

/// The construct name and reason when an instruction's opcode (or
/// custom-call target) is one mdl does not implement, whatever its operands.
std::optional<std::pair<std::string, std::string>> unsupportedConstruct(const HloInstruction &inst);

/// "asc" / "desc" when a sort comparator orders operand 0 like the native
/// sort (HloRecognize.cpp), "" otherwise.
std::string recognizeSortOrder(const HloComputation &c, size_t operands, bool isFloatKey);
/// "ge", "gt", "le", "lt" for a select-and-scatter `compare(p0, p1)`.
std::string recognizeSelect(const HloComputation &c);

/// Per-opcode translation, split by family; each returns false when the
/// opcode is not its business.
bool translateElementwise(Translator &t, const HloInstruction &inst,
                          const std::vector<const HVal *> &ops, HVal &out);
bool translateDataMovement(Translator &t, const HloInstruction &inst,
                           const std::vector<const HVal *> &ops, HVal &out);
bool translateStructured(Translator &t, const HloInstruction &inst,
                         const std::vector<const HVal *> &ops, HVal &out);
bool translateControlFlow(Translator &t, const HloInstruction &inst,
                          const std::vector<const HVal *> &ops, HVal &out);

} // namespace mdl::frontend::hlo
