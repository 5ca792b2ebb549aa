// The CPU kernel entry point: checks the call against the operation table,
// allocates missing outputs and runs the kernel the table holds for the
// operation's kind (KernelTable.h).
#include "backend/cpu/KernelSupport.h"
#include "backend/cpu/KernelTable.h"
#include "stdlib/Registry.h"

#include <cassert>
#include <new>

namespace mdl::backend::cpu {

using ir::OpKind;

KernelTable::KernelTable() : fns_(size_t(ir::kNumOpKinds)) {}

void KernelTable::add(OpKind kind, KernelFn fn) {
  KernelFn &slot = fns_[size_t(kind)];
  if (slot)
    twice_.push_back(ir::opName(kind));
  slot = std::move(fn);
}

void KernelTable::add(std::initializer_list<OpKind> kinds, const KernelFn &fn) {
  for (OpKind k : kinds)
    add(k, fn);
}

const KernelFn *KernelTable::find(OpKind kind) const {
  const KernelFn &fn = fns_[size_t(kind)];
  return fn ? &fn : nullptr;
}

std::string KernelTable::problems() const {
  std::string missing, extra;
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    bool wanted = stdlib::hasKernel(OpKind(k));
    if (wanted && !fns_[size_t(k)])
      missing +=
          std::string(missing.empty() ? "" : ", ") + ir::opName(OpKind(k));
    if (!wanted && fns_[size_t(k)])
      extra += std::string(extra.empty() ? "" : ", ") + ir::opName(OpKind(k));
  }
  std::string out;
  if (!missing.empty())
    out += "no CPU kernel for: " + missing + "; ";
  if (!extra.empty())
    out += "CPU kernels for operations without one: " + extra + "; ";
  for (const std::string &n : twice_)
    out += "a second CPU kernel for " + n + "; ";
  return out;
}

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerCastKernels(t);
    registerReductionKernels(t);
    registerLinalgKernels(t);
    registerShapeKernels(t);
    registerIndexingKernels(t);
    registerNeuralKernels(t);
    registerConvKernels(t);
    registerCreationKernels(t);
    registerHloKernels(t);
    assert(t.problems().empty() && "the CPU kernel table is incomplete");
    return t;
  }();
  return table;
}

std::optional<std::string> runKernel(const ir::Operation &op,
                                     const std::vector<Tensor> &inputs,
                                     std::vector<Tensor> &outputs,
                                     const FunctionCaller *caller) {
  std::string name = ir::opName(op.kind);
  const KernelFn *fn = kernelTable().find(op.kind);
  if (!fn)
    return "'" + name + "' is not a kernel operation";
  int want = stdlib::opInfo(op.kind).operandCount;
  if ((want >= 0 && int(inputs.size()) != want) || (want < 0 && inputs.empty()))
    return "'" + name + "' expects " +
           (want < 0 ? "at least 1" : std::to_string(want)) +
           " operands, got " + std::to_string(inputs.size());
  for (const Tensor &t : inputs)
    if (!t.valid())
      return "'" + name + "' got an operand without data";
  if (op.results.empty())
    return "'" + name + "' has no result";
  // Outputs the caller did not allocate are allocated here.
  if (outputs.size() < op.results.size())
    outputs.resize(op.results.size());
  for (size_t i = 0; i < op.results.size(); ++i) {
    const ir::TensorType &t = op.result(unsigned(i))->type;
    if (!t.isStatic())
      return "'" + name + "' result type " + t.str() + " is not static";
    if (outputs[i].valid()) {
      // Kernels write the whole output by its type: a wrong buffer would be
      // written out of bounds.
      if (outputs[i].type() != t)
        return "'" + name + "' output is " + outputs[i].type().str() +
               ", but the result type is " + t.str();
      continue;
    }
    outputs[i] = Tensor::empty(t);
    if (!outputs[i].valid())
      return "out of memory allocating " + t.str() + " for '" + name + "'";
  }
  try {
    return (*fn)(op, inputs, outputs, caller);
  } catch (const std::bad_alloc &) {
    return "out of memory in '" + name + "'";
  }
}

} // namespace mdl::backend::cpu
