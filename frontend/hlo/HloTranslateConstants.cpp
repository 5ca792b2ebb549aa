// Constants and what cannot be translated: a constant becomes a `constant`
// operation (small literals), a param loaded from the weight file (literals
// over the inline limit, and elided literals given with --weights), zeros
// with a warning (elided, with --fill-elided=zeros), or E0601; and the scan
// that names the unsupported constructs of instructions that are never
// translated.
#include "frontend/hlo/HloTranslator.h"
#include "stdlib/Registry.h"

namespace mdl::frontend::hlo {

using namespace ir;

void Translator::scanUnsupported(const HloInstruction &inst) {
  if (auto u = unsupportedConstruct(inst)) {
    unsupported(u->first, u->second);
    return;
  }
  std::vector<const HloShape *> leaves;
  inst.shape.leaves(leaves);
  for (const HloShape *l : leaves)
    if (l->buffer || l->dynamic || !storageType(l->type)) {
      (void)typeOf(*l); // reports the element type, dynamic or buffer shape
      return;
    }
}

HVal Translator::translateConstant(const HloInstruction &inst) {
  HVal out;
  auto type = [&]() -> std::optional<TensorType> { return typeOf(inst.shape); };
  const HloLiteral &lit = inst.literal;
  auto global = [&](const std::string &file, const std::string &key,
                    const TensorType &t) -> Value * {
    Global g;
    g.name = uniqueGlobalName(key);
    g.isParam = true;
    g.type = t;
    g.loc = loc_;
    g.init = std::make_unique<Region>();
    auto load = std::make_unique<Operation>(OpKind::Load, loc_);
    load->attrs = {{"file", Attribute::string(file)}, {"key", Attribute::string(key)}};
    Value *lv = load->addResult(t);
    g.init->push(std::move(load));
    auto y = std::make_unique<Operation>(OpKind::Yield, loc_);
    y->operands = {lv};
    g.init->push(std::move(y));
    std::string name = g.name;
    module_->globals.push_back(std::move(g));
    return emit1(OpKind::Global, {}, {{"name", Attribute::symbol(name)}}, t);
  };
  switch (lit.kind) {
  case HloLiteral::Kind::Unsupported:
    if (inst.shape.isTuple)
      unsupported("tuple-constant", "tuple-shaped constants are not supported");
    else
      (void)type(); // reports the element type or dynamic shape
    out.poisoned = true;
    return out;
  case HloLiteral::Kind::Inline: {
    auto t = type();
    if (!t) {
      out.poisoned = true;
      return out;
    }
    auto d = std::make_shared<DenseData>();
    d->type = *t;
    d->bytes = lit.bytes;
    Value *v = emit1(OpKind::Constant, {}, {{"value", Attribute::dense(d)}}, *t);
    if (v && t->isScalar())
      scalarConstants_[v] = d->elementAsDouble(0);
    out.leaves = {v};
    return out;
  }
  case HloLiteral::Kind::Weight: {
    auto t = type();
    if (!t) {
      out.poisoned = true;
      return out;
    }
    out.leaves = {global(opts_.weightsFile, lit.key, *t)};
    return out;
  }
  case HloLiteral::Kind::Elided: {
    auto t = type();
    if (!t) {
      out.poisoned = true;
      return out;
    }
    if (!opts_.elidedWeights.empty()) {
      out.leaves = {global(opts_.elidedWeights, inst.name, *t)};
    } else if (opts_.fillElidedZeros) {
      diags_.warning("W0702", loc_,
                     "elided constant '" + inst.name + "' (" + t->str() +
                         ") is filled with zeros (--fill-elided=zeros): results are not those "
                         "of the original model");
      out.leaves = {emit1(OpKind::Zeros, {}, {{"type", Attribute::type(*t)}}, *t)};
    } else {
      ++errors_;
      auto &d = diags_.error("E0601", loc_,
                             "unsupported HLO construct 'elided-constant': the value of constant '" +
                                 inst.name + "' (" + t->str() + ") was elided from the dump ({...})");
      d.notes.push_back({{}, "give its value with --weights FILE.safetensors (key '" + inst.name +
                                 "'), or run with --fill-elided=zeros to use zeros"});
      out.poisoned = true;
    }
    return out;
  }
  case HloLiteral::Kind::None:
    break;
  }
  malformed("constant without a value");
  out.poisoned = true;
  return out;
}

} // namespace mdl::frontend::hlo
