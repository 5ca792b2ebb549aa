// The epilogue of a fused convolution: its spelling and the operation's
// shape rule (the convolution's rule, then the epilogue's operands checked
// against its result).
#include "stdlib/ConvEpilogue.h"
#include "stdlib/ConvLabels.h"
#include "stdlib/ShapeRulesHloSupport.h"

#include <cmath>

namespace mdl::stdlib {

namespace {

struct Spelling {
  EpilogueKind kind;
  const char *name;
};
constexpr Spelling kSteps[] = {
    {EpilogueKind::Add, "add"},   {EpilogueKind::Sub, "sub"},
    {EpilogueKind::Mul, "mul"},   {EpilogueKind::Residual, "residual"},
    {EpilogueKind::Relu, "relu"}, {EpilogueKind::Clip, "clip"},
};

} // namespace

bool takesOperand(EpilogueKind k) {
  return k == EpilogueKind::Add || k == EpilogueKind::Sub || k == EpilogueKind::Mul ||
         k == EpilogueKind::Residual;
}

const char *epilogueName(EpilogueKind k) {
  for (const Spelling &s : kSteps)
    if (s.kind == k)
      return s.name;
  return "?";
}

std::optional<std::vector<EpilogueStep>> parseEpilogue(const std::string &spec) {
  std::vector<EpilogueStep> steps;
  int operands = 0;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string word =
        spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const Spelling *found = nullptr;
    for (const Spelling &s : kSteps)
      if (word == s.name)
        found = &s;
    if (!found)
      return std::nullopt;
    EpilogueStep step{found->kind, -1};
    if (takesOperand(step.kind))
      step.operand = operands++;
    steps.push_back(step);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
    if (pos == spec.size())
      return std::nullopt; // a trailing comma
  }
  return steps;
}

ChannelOperand classifyChannelOperand(const ir::TensorType &v, const ir::TensorType &result,
                                      int feature) {
  if (v.rank() > result.rank())
    return ChannelOperand::Invalid;
  bool perChannel = false;
  for (int i = 0; i < v.rank(); ++i) {
    const ir::Dim &d = v.dims[size_t(v.rank() - 1 - i)];
    int axis = result.rank() - 1 - i;
    if (d.isStatic() && d.size == 1)
      continue;
    const ir::Dim &r = result.dims[size_t(axis)];
    if (axis != feature || !ir::dimsCompatible(d, r))
      return ChannelOperand::Invalid;
    perChannel = true;
  }
  return perChannel ? ChannelOperand::PerChannel : ChannelOperand::Scalar;
}

namespace hlorules {

InferResult fusedConvRule(const Ops &ops, Attrs &attrs) {
  if (ops.size() < 2)
    return bad("fused_convolution needs an input and a kernel");
  InferResult conv = convRule({ops[0], ops[1]}, attrs);
  if (!conv.ok())
    return conv;
  const TensorType &result = conv.types[0];
  std::string spec = strOf(attrs, "epilogue");
  std::optional<std::vector<EpilogueStep>> steps = parseEpilogue(spec);
  if (!steps)
    return bad("fused_convolution epilogue \"" + spec +
               "\" is not a list of add, sub, mul, residual, relu and clip");
  size_t wanted = 0;
  for (const EpilogueStep &s : *steps)
    wanted += takesOperand(s.kind) ? 1 : 0;
  if (ops.size() - 2 != wanted)
    return bad("fused_convolution epilogue \"" + spec + "\" takes " + std::to_string(wanted) +
               " operands after the input and the kernel, got " + std::to_string(ops.size() - 2));
  Attribute *lo = findAttr(attrs, "clip_lo"), *hi = findAttr(attrs, "clip_hi");
  if (lo && hi && !(lo->asNumber() <= hi->asNumber()))
    return bad("fused_convolution clip_lo must not exceed clip_hi");
  // convRule accepted the labels.
  int feature = int(parseConvDimLabels(strOf(attrs, "dim_labels"))->output.b);
  for (const EpilogueStep &s : *steps) {
    if (s.operand < 0)
      continue;
    int index = s.operand + 2;
    const TensorType &v = ops[size_t(index)];
    if (v.dtype != result.dtype)
      return fail("E0201",
                  std::string("the ") + epilogueName(s.kind) + " operand of a " + result.str() +
                      " fused_convolution must be " + dt(result.dtype) + ", found " + v.str(),
                  index);
    bool fits =
        s.kind == EpilogueKind::Residual
            ? v.rank() == result.rank() &&
                  std::equal(v.dims.begin(), v.dims.end(), result.dims.begin(), ir::dimsCompatible)
            : classifyChannelOperand(v, result, feature) != ChannelOperand::Invalid;
    if (!fits)
      return fail(
          "E0202",
          std::string("the ") + epilogueName(s.kind) + " operand " + v.str() +
              (s.kind == EpilogueKind::Residual
                   ? " does not have the result's shape " + result.str()
                   : " is neither a scalar nor one value per output feature of " + result.str()),
          index);
  }
  return conv;
}

} // namespace hlorules

} // namespace mdl::stdlib
