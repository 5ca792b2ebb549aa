// Host code for the indexing operations the JIT computes itself
// (InlineOps.h): dynamic_slice and dynamic_update_slice with their starts
// clamped as XLA clamps them (and as the CPU kernels do), dynamic_index
// (`x[i]` with a run-time i: negative counts from the end, out of range is
// an error that the CPU kernel reports), and element scatters (an update
// out of range is skipped, as the kernel skips it). A slice is copied as
// rows: trailing axes that the slice spans whole form one contiguous run,
// the axes before it become loops, usually none.
//
// dynamic_update_slice and scatter write their result over a copy of their
// operand, or, when the buffer plan put the result in the operand's own
// buffer (the operand dies there: BufferPlan.h), over the operand itself: a
// loop that updates one element per step then stores one element, where it
// used to copy the whole tensor.
#include "backend/jit/Codegen.h"
#include "backend/jit/InlineOps.h"
#include "stdlib/Registry.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <functional>

namespace mdl::backend::jit {

using namespace ir;
using llvm::Value;

namespace {

/// A scatter whose every update is one element of a single operand, at an
/// index vector stored last in its row of the indices, combined by name
/// (assign, add, mul, max, min): what the host code does itself.
bool elementScatter(const Operation &op) {
  if (op.operands.size() != 3 || op.results.size() != 1 || !op.stringAttr("to_apply").empty())
    return false;
  std::string comb = op.stringAttr("combiner");
  if (comb != "assign" && comb != "add" && comb != "mul" && comb != "max" && comb != "min")
    return false;
  const TensorType &x = op.operands[0]->type, &idx = op.operands[1]->type,
                   &upd = op.operands[2]->type;
  if (x.dtype == DType::F16 || x.dtype == DType::BF16 || !isInteger(idx.dtype))
    return false;
  if (!op.intListAttr("update_window_dims").empty() ||
      !op.intListAttr("input_batching_dims").empty() ||
      !op.intListAttr("scatter_indices_batching_dims").empty())
    return false;
  int64_t rank = x.rank(), ivd = op.intAttr("index_vector_dim", 0), irank = idx.rank();
  int64_t vec = ivd < irank ? idx.sizes()[size_t(ivd)] : 1;
  const std::vector<int64_t> &inserted = op.intListAttr("inserted_window_dims"),
                             &toOperand = op.intListAttr("scatter_dims_to_operand_dims");
  if (ivd < irank - 1 || int64_t(inserted.size()) != rank || vec != rank ||
      int64_t(toOperand.size()) != rank)
    return false;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t d = 0; d < size_t(rank); ++d) {
    if (inserted[d] != int64_t(d) || toOperand[d] < 0 || toOperand[d] >= rank ||
        seen[size_t(toOperand[d])])
      return false;
    seen[size_t(toOperand[d])] = true;
  }
  // One update element per index vector, in the same order.
  std::vector<int64_t> rows = idx.sizes();
  if (ivd < irank)
    rows.erase(rows.begin() + ivd);
  return upd.sizes() == rows;
}

} // namespace

const InlineOpInfo *inlineOp(const Operation &op) {
  static const InlineOpInfo slice{1u << 0, false};             // x
  static const InlineOpInfo update{1u << 1, false};            // the update; x may be a view
  static const InlineOpInfo index{1u << 0, true};              // x; the kernel reports a bad index
  static const InlineOpInfo scatter{1u << 1 | 1u << 2, false}; // indices, updates
  switch (op.kind) {
  case OpKind::DynamicSlice:
    return &slice;
  case OpKind::DynamicUpdateSlice:
    return &update;
  case OpKind::DynamicIndex:
    return &index;
  case OpKind::Scatter:
    return elementScatter(op) ? &scatter : nullptr;
  default:
    return nullptr;
  }
}

namespace {

/// Copies a slice of shape `slice` between a contiguous tensor of shape
/// `full` at `fullPtr` (starting at element `starts`, in range) and a
/// contiguous buffer at `slicePtr`; into the full tensor when `intoFull`.
void copySlice(llvm::IRBuilder<> &b, const std::vector<int64_t> &full,
               const std::vector<int64_t> &slice, int64_t elem, Value *fullPtr, Value *slicePtr,
               const std::vector<Value *> &starts, bool intoFull) {
  int64_t count = 1;
  for (int64_t n : slice)
    count *= n;
  if (count == 0)
    return;
  std::vector<int64_t> fs = rowMajor(full), ss = rowMajor(slice);
  Value *offset = b.getInt64(0);
  for (size_t d = 0; d < full.size(); ++d)
    if (full[d] != slice[d]) // a whole axis starts at 0
      offset = b.CreateAdd(offset, b.CreateMul(starts[d], b.getInt64(uint64_t(fs[d]))));
  // Axes after the last partial one are whole: with it, one contiguous run.
  int last = int(full.size()) - 1;
  while (last >= 0 && full[size_t(last)] == slice[size_t(last)])
    --last;
  int64_t run = 1;
  for (int d = std::max(last, 0); d < int(slice.size()); ++d)
    run *= slice[size_t(d)];
  Value *fullBase =
      b.CreateGEP(b.getInt8Ty(), fullPtr, b.CreateMul(offset, b.getInt64(uint64_t(elem))));
  // Loops over the axes before it (a row of a matrix needs none).
  std::vector<int> outer;
  for (int d = 0; d < last; ++d)
    if (slice[size_t(d)] > 1)
      outer.push_back(d);
  std::function<void(size_t, Value *, Value *)> nest = [&](size_t k, Value *fo, Value *so) {
    if (k == outer.size()) {
      Value *f = b.CreateGEP(b.getInt8Ty(), fullBase, b.CreateMul(fo, b.getInt64(uint64_t(elem))));
      Value *s = b.CreateGEP(b.getInt8Ty(), slicePtr, b.CreateMul(so, b.getInt64(uint64_t(elem))));
      uint64_t bytes = uint64_t(run * elem);
      if (intoFull)
        b.CreateMemCpy(f, llvm::MaybeAlign(), s, llvm::MaybeAlign(), bytes);
      else
        b.CreateMemCpy(s, llvm::MaybeAlign(), f, llvm::MaybeAlign(), bytes);
      return;
    }
    int d = outer[k];
    llvm::Function *fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext &c = b.getContext();
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *head = llvm::BasicBlock::Create(c, "slice.row", fn);
    auto *exit = llvm::BasicBlock::Create(c, "slice.end", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode *i = b.CreatePHI(b.getInt64Ty(), 2);
    i->addIncoming(b.getInt64(0), pre);
    nest(k + 1, b.CreateAdd(fo, b.CreateMul(i, b.getInt64(uint64_t(fs[size_t(d)])))),
         b.CreateAdd(so, b.CreateMul(i, b.getInt64(uint64_t(ss[size_t(d)])))));
    Value *next = b.CreateAdd(i, b.getInt64(1));
    i->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, b.getInt64(uint64_t(slice[size_t(d)]))), head, exit);
    b.SetInsertPoint(exit);
  };
  nest(0, b.getInt64(0), b.getInt64(0));
}

/// XLA's start of a slice of `size` along an axis of `dim`: clamped to
/// [0, dim - size].
Value *clampStart(llvm::IRBuilder<> &b, Value *start, int64_t dim, int64_t size) {
  Value *lo = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, start, b.getInt64(0));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, lo, b.getInt64(uint64_t(dim - size)));
}

std::vector<Value *> clampedStarts(llvm::IRBuilder<> &b, HostValues &values,
                                   const std::vector<ir::Value *> &operands, size_t first,
                                   const std::vector<int64_t> &full,
                                   const std::vector<int64_t> &slice) {
  std::vector<Value *> starts;
  for (size_t d = 0; d < full.size(); ++d)
    starts.push_back(full[d] == slice[d]
                         ? b.getInt64(0)
                         : clampStart(b, values.index(operands[first + d]), full[d], slice[d]));
  return starts;
}

/// The scatter kernel's combiners on one element (backend/cpu/
/// HloKernelsIndexing.cpp): integers wrap, max and min keep a NaN.
Value *combine(llvm::IRBuilder<> &b, const std::string &c, DType t, Value *old, Value *upd) {
  if (c == "assign")
    return upd;
  if (t == DType::Bool)
    return c == "add" || c == "max" ? b.CreateOr(old, upd) : b.CreateAnd(old, upd);
  bool fl = isFloat(t);
  if (c == "add")
    return fl ? b.CreateFAdd(old, upd) : b.CreateAdd(old, upd);
  if (c == "mul")
    return fl ? b.CreateFMul(old, upd) : b.CreateMul(old, upd);
  bool max = c == "max";
  Value *keep;
  if (fl)
    keep = b.CreateOr(max ? b.CreateFCmpOGT(old, upd) : b.CreateFCmpOLT(old, upd),
                      b.CreateFCmpUNO(old, old));
  else if (t == DType::U8)
    keep = max ? b.CreateICmpUGT(old, upd) : b.CreateICmpULT(old, upd);
  else
    keep = max ? b.CreateICmpSGT(old, upd) : b.CreateICmpSLT(old, upd);
  return b.CreateSelect(keep, old, upd);
}

/// An element scatter (elementScatter): for each update, its index vector
/// (an update out of range is skipped, as the kernel skips it) and the
/// combined element.
void emitElementScatter(llvm::IRBuilder<> &b, const Operation &op, HostValues &values) {
  const ir::Value *x = op.operands[0], *idx = op.operands[1], *upd = op.operands[2];
  const ir::Value *y = op.results[0].get();
  DType t = x->type.dtype, it = idx->type.dtype;
  std::vector<int64_t> xs = x->type.sizes(), xstr = rowMajor(xs);
  const std::vector<int64_t> &toOperand = op.intListAttr("scatter_dims_to_operand_dims");
  std::string comb = op.stringAttr("combiner");
  int64_t n = upd->type.numElements(), vec = int64_t(xs.size());
  values.copy(y, x); // nothing when the scatter is computed in x's buffer
  if (n == 0)
    return;
  llvm::LLVMContext &c = b.getContext();
  Value *base = values.address(y), *ib = values.address(idx), *ub = values.address(upd);
  llvm::Type *et = storageType(c, t), *itTy = storageType(c, it);
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(c, "scatter", fn);
  auto *store = llvm::BasicBlock::Create(c, "scatter.in", fn);
  auto *latch = llvm::BasicBlock::Create(c, "scatter.next", fn);
  auto *exit = llvm::BasicBlock::Create(c, "scatter.end", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode *u = b.CreatePHI(b.getInt64Ty(), 2);
  u->addIncoming(b.getInt64(0), pre);
  Value *offset = b.getInt64(0), *inside = b.getTrue();
  for (int64_t j = 0; j < vec; ++j) {
    Value *at = b.CreateAdd(b.CreateMul(u, b.getInt64(uint64_t(vec))), b.getInt64(uint64_t(j)));
    Value *i = b.CreateIntCast(b.CreateLoad(itTy, b.CreateGEP(itTy, ib, at)), b.getInt64Ty(),
                               it != DType::U8);
    int64_t d = toOperand[size_t(j)];
    inside = b.CreateAnd(inside, b.CreateICmpULT(i, b.getInt64(uint64_t(xs[size_t(d)]))));
    offset = b.CreateAdd(offset, b.CreateMul(i, b.getInt64(uint64_t(xstr[size_t(d)]))));
  }
  b.CreateCondBr(inside, store, latch);
  b.SetInsertPoint(store);
  Value *p = b.CreateGEP(et, base, offset);
  Value *v = combine(b, comb, t, loadElement(b, t, p), loadElement(b, t, b.CreateGEP(et, ub, u)));
  storeElement(b, t, v, p);
  b.CreateBr(latch);
  b.SetInsertPoint(latch);
  Value *next = b.CreateAdd(u, b.getInt64(1));
  u->addIncoming(next, latch);
  b.CreateCondBr(b.CreateICmpSLT(next, b.getInt64(uint64_t(n))), head, exit);
  b.SetInsertPoint(exit);
}

} // namespace

void emitInlineOp(llvm::IRBuilder<> &b, const Operation &op, HostValues &values) {
  if (op.kind == OpKind::Scatter) {
    emitElementScatter(b, op, values);
    return;
  }
  const ir::Value *x = op.operands[0], *y = op.results[0].get();
  std::vector<int64_t> xs = x->type.sizes();
  int64_t elem = int64_t(dtypeSize(x->type.dtype));
  switch (op.kind) {
  case OpKind::DynamicSlice: {
    std::vector<int64_t> ys = y->type.sizes();
    copySlice(b, xs, ys, elem, values.address(x), values.address(y),
              clampedStarts(b, values, op.operands, 1, xs, ys), false);
    return;
  }
  case OpKind::DynamicUpdateSlice: {
    const ir::Value *u = op.operands[1];
    std::vector<int64_t> us = u->type.sizes();
    std::vector<Value *> starts = clampedStarts(b, values, op.operands, 2, xs, us);
    values.copy(y, x); // nothing when the result is computed in x's buffer
    copySlice(b, xs, us, elem, values.address(y), values.address(u), starts, true);
    return;
  }
  default: { // dynamic_index
    int64_t axis = op.intAttr("axis", 0), n = xs[size_t(axis)];
    Value *i = values.index(op.operands[1]);
    i = b.CreateSelect(b.CreateICmpSLT(i, b.getInt64(0)), b.CreateAdd(i, b.getInt64(uint64_t(n))),
                       i);
    llvm::Function *fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext &c = b.getContext();
    auto *fast = llvm::BasicBlock::Create(c, "index.ok", fn);
    auto *slow = llvm::BasicBlock::Create(c, "index.bad", fn);
    auto *join = llvm::BasicBlock::Create(c, "index.end", fn);
    b.CreateCondBr(b.CreateICmpULT(i, b.getInt64(uint64_t(n))), fast, slow,
                   llvm::MDBuilder(c).createBranchWeights(1 << 20, 1));
    b.SetInsertPoint(slow);
    values.kernel(op); // reports the index and returns
    b.CreateBr(join);
    b.SetInsertPoint(fast);
    std::vector<int64_t> slice = xs;
    slice[size_t(axis)] = 1;
    std::vector<Value *> starts(xs.size(), b.getInt64(0));
    starts[size_t(axis)] = i;
    copySlice(b, xs, slice, elem, values.address(x), values.address(y), starts, false);
    b.CreateBr(join);
    b.SetInsertPoint(join);
    return;
  }
  }
}

} // namespace mdl::backend::jit
