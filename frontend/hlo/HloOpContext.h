// Internal to the per-opcode translation: one instruction's operands, result
// type and attributes, with the error reporting every family shares.
#pragma once

#include "frontend/hlo/HloAttrs.h"
#include "frontend/hlo/HloTranslator.h"

namespace mdl::frontend::hlo {

struct OpCtx {
  Translator &t;
  const HloInstruction &inst;
  const std::vector<const HVal *> &ops;
  HVal &out;

  /// Exactly `n` operands, or a malformed-HLO report.
  bool arity(size_t n) {
    if (ops.size() == n)
      return true;
    t.malformed("'" + inst.opcode + "' takes " + std::to_string(n) + " operands, found " +
                std::to_string(ops.size()));
    return false;
  }
  /// At least `n` operands.
  bool atLeast(size_t n) {
    if (ops.size() >= n)
      return true;
    t.malformed("'" + inst.opcode + "' takes at least " + std::to_string(n) + " operands, found " +
                std::to_string(ops.size()));
    return false;
  }
  /// Operand `i` as an array value, or null after a report.
  ir::Value *arg(size_t i) {
    if (i >= ops.size())
      return nullptr;
    if (ops[i]->shape->isTuple || ops[i]->leaves.size() != 1) {
      t.malformed("operand " + std::to_string(i) + " of '" + inst.opcode +
                  "' must be an array, found " + ops[i]->shape->str());
      return nullptr;
    }
    return ops[i]->leaves[0];
  }
  /// The IR type of the (array) result.
  std::optional<ir::TensorType> result() { return t.typeOf(inst.shape); }
  /// The IR types of the result's leaves (a tuple's, in order); false
  /// after a report.
  bool resultTypes(std::vector<ir::TensorType> &types) {
    std::vector<const HloShape *> leaves;
    inst.shape.leaves(leaves);
    for (const HloShape *s : leaves) {
      auto ty = t.typeOf(*s);
      if (!ty)
        return false;
      types.push_back(*ty);
    }
    return true;
  }
  /// True when operand i is u32/u64 (stored signless).
  bool unsignedOperand(size_t i) const {
    return i < ops.size() && !ops[i]->shape->isTuple && isSignlessUnsigned(ops[i]->shape->type);
  }
  bool unsignedResult() const { return !inst.shape.isTuple && isSignlessUnsigned(inst.shape.type); }
  /// Finishes with one value (false/poisoned when it is null).
  bool done(ir::Value *v) {
    out.leaves = {v};
    out.poisoned = v == nullptr;
    return true;
  }
  bool poison() {
    out.poisoned = true;
    return true;
  }
  /// An integer-list attribute (`{1,2}`).
  std::optional<IntVec> ints(const char *name, bool required = true) {
    const HloAttr *a = required ? t.need(name) : inst.attr(name);
    if (!a)
      return required ? std::nullopt : std::optional<IntVec>(IntVec{});
    auto v = parseIntList(a->value);
    if (!v)
      t.malformed("'" + std::string(name) + "' must be an integer list such as {0,1}", a);
    return v;
  }
  std::optional<int64_t> integer(const char *name) {
    const HloAttr *a = t.need(name);
    if (!a)
      return std::nullopt;
    auto v = parseInt(a->value);
    if (!v)
      t.malformed("'" + std::string(name) + "' must be an integer", a);
    return v;
  }
};

} // namespace mdl::frontend::hlo
