// Data-movement and index kernels (see GpuKernels.h): strided copies
// (transposes, materialized views, the pieces of concat / stack / pad),
// fills, gathers (gather, embedding, dynamic_index), and the reductions
// that are not row reductions of the fused loops (argmax, argmin, prod).
// Copies and fills move an element's bits (an integer of its size), so they
// serve every element type, halves included; the others compute in the
// JIT's compute types.
#include "backend/hip/codegen/GpuKernels.h"
#include "backend/cpu/KernelSupport.h"
#include "backend/jit/Codegen.h"
#include "ir/passes/FusionDomain.h"

#include <llvm/IR/Intrinsics.h>

#include <cstring>
#include <limits>

namespace mdl::backend::hip {

using namespace ir;
using llvm::Value;
namespace jit = mdl::backend::jit;

namespace {

/// Drops axes of size 1 and merges neighbouring axes wherever every access
/// allows it (fewer divisions per point): a fusion's collapse, without
/// reduced axes.
void collapse(std::vector<int64_t> &shape, std::vector<std::vector<int64_t>> &strides) {
  passes::FusionAccesses fa;
  fa.domain.dims = shape;
  fa.strides = std::move(strides);
  fa.collapse();
  shape = std::move(fa.dims);
  strides = std::move(fa.strides);
}

llvm::Type *bitsType(llvm::LLVMContext &c, DType t) {
  return llvm::Type::getIntNTy(c, unsigned(dtypeSize(t) * 8));
}

} // namespace

GpuLaunch launchOf(uint32_t kernel, int64_t groups, std::vector<GpuRef> args) {
  GpuLaunch l;
  l.kernel = kernel;
  l.grid[0] = uint32_t(groups);
  l.args = std::move(args);
  return l;
}

GpuLaunch emitCopyKernel(GpuModule &gm, const View &dst, const View &src) {
  std::vector<int64_t> shape = dst.shape;
  std::vector<std::vector<int64_t>> strides = {dst.strides, src.strides};
  collapse(shape, strides);
  int64_t total = dst.numElements(), groups = groupsFor(total);
  KernelBuilder kb(gm, gm.kernelName("copy"), kBlock, {{true, "dst"}, {true, "src"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::Type *et = bitsType(kb.context(), dst.dtype);
  kb.forEachPoint(total, groups, [&](Value *i) {
    std::vector<Value *> o = pointOffsets(b, i, shape, strides);
    b.CreateStore(b.CreateLoad(et, kb.element(kb.param(1), et, o[1])),
                  kb.element(kb.param(0), et, o[0]));
  });
  return launchOf(kb.finish(), groups, {dst.ref, src.ref});
}

GpuLaunch emitFillKernel(GpuModule &gm, const View &dst, const std::string &value) {
  std::vector<int64_t> shape = dst.shape;
  std::vector<std::vector<int64_t>> strides = {dst.strides};
  collapse(shape, strides);
  int64_t total = dst.numElements(), groups = groupsFor(total);
  KernelBuilder kb(gm, gm.kernelName("fill"), kBlock, {{true, "dst"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::Type *et = bitsType(kb.context(), dst.dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, value.data(), std::min(value.size(), sizeof bits));
  Value *v = llvm::ConstantInt::get(et, bits);
  kb.forEachPoint(total, groups, [&](Value *i) {
    std::vector<Value *> o = pointOffsets(b, i, shape, strides);
    b.CreateStore(v, kb.element(kb.param(0), et, o[0]));
  });
  return launchOf(kb.finish(), groups, {dst.ref});
}

GpuLaunch emitGatherKernel(GpuModule &gm, const View &out, const View &x, const View &idx, int axis,
                           bool fromEnd) {
  // Over the output's axes: x's axes before `axis`, idx's axes, x's after.
  size_t ir = idx.shape.size(), rank = out.shape.size();
  std::vector<int64_t> xs(rank, 0), is(rank, 0);
  for (size_t a = 0; a < size_t(axis); ++a)
    xs[a] = x.strides[a];
  for (size_t a = 0; a < ir; ++a)
    is[size_t(axis) + a] = idx.strides[a];
  for (size_t a = size_t(axis) + 1; a < x.shape.size(); ++a)
    xs[a - 1 + ir] = x.strides[a];
  std::vector<int64_t> shape = out.shape;
  std::vector<std::vector<int64_t>> strides = {out.strides, xs, is};
  collapse(shape, strides);
  int64_t total = out.numElements(), groups = groupsFor(total);
  int64_t n = x.shape[size_t(axis)];
  KernelBuilder kb(gm, gm.kernelName("gather"), kBlock,
                   {{true, "out"}, {true, "x"}, {true, "idx"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::Type *et = bitsType(kb.context(), x.dtype);
  llvm::Type *it = bitsType(kb.context(), idx.dtype);
  bool idxSigned = idx.dtype != DType::U8 && idx.dtype != DType::Bool;
  kb.forEachPoint(total, groups, [&](Value *i) {
    std::vector<Value *> o = pointOffsets(b, i, shape, strides);
    Value *k = b.CreateLoad(it, kb.element(kb.param(2), it, o[2]));
    k = idxSigned ? b.CreateSExt(k, b.getInt64Ty()) : b.CreateZExt(k, b.getInt64Ty());
    if (fromEnd)
      k = b.CreateSelect(b.CreateICmpSLT(k, b.getInt64(0)), b.CreateAdd(k, b.getInt64(uint64_t(n))),
                         k);
    k = b.CreateSelect(b.CreateICmpSLT(k, b.getInt64(0)), b.getInt64(0), k);
    k = b.CreateSelect(b.CreateICmpSGE(k, b.getInt64(uint64_t(n))), b.getInt64(uint64_t(n - 1)), k);
    Value *xo = b.CreateAdd(o[1], b.CreateMul(k, b.getInt64(uint64_t(x.strides[size_t(axis)]))));
    b.CreateStore(b.CreateLoad(et, kb.element(kb.param(1), et, xo)),
                  kb.element(kb.param(0), et, o[0]));
  });
  return launchOf(kb.finish(), groups, {out.ref, x.ref, idx.ref});
}

GpuLaunch emitIndexCheckKernel(GpuModule &gm, const View &idx, int64_t n, bool fromEnd,
                               GpuRef record, uint32_t step) {
  std::vector<int64_t> shape = idx.shape;
  std::vector<std::vector<int64_t>> strides = {idx.strides};
  int64_t total = idx.numElements();
  KernelBuilder kb(gm, gm.kernelName("check_index"), kBlock,
                   {{true, "idx"}, {true, "record"}, {false, "step"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::Type *it = bitsType(kb.context(), idx.dtype), *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty();
  bool idxSigned = idx.dtype != DType::U8 && idx.dtype != DType::Bool;
  Value *none = b.getInt64(uint64_t(std::numeric_limits<int64_t>::max()));
  Value *first = kb.variable(i64), *shared = kb.localArray(i64, kBlock, "first");
  Value *tid = kb.localId();
  auto indexAt = [&](Value *j) {
    Value *off = pointOffsets(b, j, shape, strides)[0];
    Value *k = b.CreateLoad(it, kb.element(kb.param(0), it, off));
    return idxSigned ? b.CreateSExt(k, i64) : b.CreateZExt(k, i64);
  };
  // Each thread's first bad position (its positions rise), then the least
  // of them in a tree.
  b.CreateStore(none, first);
  kb.loop(tid, b.getInt64(uint64_t(total)), b.getInt64(kBlock), [&](Value *j) {
    Value *k = indexAt(j);
    Value *low = b.CreateICmpSLT(k, b.getInt64(fromEnd ? uint64_t(-n) : 0));
    Value *bad = b.CreateOr(low, b.CreateICmpSGE(k, b.getInt64(uint64_t(n))));
    Value *mine = b.CreateLoad(i64, first);
    b.CreateStore(b.CreateSelect(b.CreateAnd(bad, b.CreateICmpEQ(mine, none)), j, mine), first);
  });
  b.CreateStore(b.CreateLoad(i64, first), kb.element(shared, i64, tid));
  kb.barrier();
  for (unsigned s = kBlock / 2; s > 0; s /= 2) {
    kb.ifThen(b.CreateICmpULT(tid, b.getInt64(s)), [&] {
      Value *mine = b.CreateLoad(i64, kb.element(shared, i64, tid));
      Value *other = b.CreateLoad(i64, kb.element(shared, i64, b.CreateAdd(tid, b.getInt64(s))));
      b.CreateStore(b.CreateSelect(b.CreateICmpSLT(other, mine), other, mine),
                    kb.element(shared, i64, tid));
    });
    kb.barrier();
  }
  Value *p = b.CreateLoad(i64, kb.element(shared, i64, b.getInt64(0)));
  Value *rec = kb.param(1);
  Value *stepWord = kb.element(rec, i32, b.getInt64(0));
  // Thread 0 writes; the first error of the run stays (steps run in order).
  kb.ifThen(b.CreateAnd(b.CreateICmpEQ(tid, b.getInt64(0)), b.CreateICmpNE(p, none)), [&] {
    kb.ifThen(b.CreateICmpEQ(b.CreateLoad(i32, stepWord), b.getInt32(0)), [&] {
      b.CreateStore(indexAt(p), kb.element(rec, i64, b.getInt64(1)));
      b.CreateStore(b.CreateAdd(b.CreateTrunc(kb.param(2), i32), b.getInt32(1)), stepWord);
    });
  });
  return launchOf(kb.finish(), 1, {idx.ref, record, {GpuRef::Kind::Int64, 0, int64_t(step)}});
}

GpuLaunch emitArgReduceKernel(GpuModule &gm, OpKind kind, const View &out, const View &x,
                              int inner) {
  size_t rank = x.shape.size(), firstInner = rank - size_t(inner);
  std::vector<int64_t> outer(x.shape.begin(), x.shape.begin() + long(firstInner));
  std::vector<int64_t> innerShape(x.shape.begin() + long(firstInner), x.shape.end());
  std::vector<std::vector<int64_t>> outerStrides = {
      std::vector<int64_t>(x.strides.begin(), x.strides.begin() + long(firstInner)),
      std::vector<int64_t>(cpu::rowMajorStrides(outer))};
  std::vector<std::vector<int64_t>> innerStrides = {
      std::vector<int64_t>(x.strides.begin() + long(firstInner), x.strides.end())};
  int64_t rows = 1, n = 1;
  for (int64_t d : outer)
    rows *= d;
  for (int64_t d : innerShape)
    n *= d;
  int64_t groups = std::min<int64_t>(rows, kMaxGroups);
  bool arg = kind != OpKind::Prod;
  bool isMax = kind == OpKind::Argmax;
  KernelBuilder kb(gm, gm.kernelName(arg ? "argreduce" : "prod"), kBlock,
                   {{true, "out"}, {true, "x"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::LLVMContext &c = kb.context();
  bool fl = isFloat(x.dtype);
  llvm::Type *vt = jit::computeType(c, x.dtype);
  // prod accumulates in double (floats) or a wrapping i64 (integers).
  llvm::Type *at = arg ? vt : fl ? b.getDoubleTy() : b.getInt64Ty();
  llvm::Type *i64 = b.getInt64Ty();
  Value *shV = kb.localArray(at, kBlock, "val");
  Value *shI = arg ? kb.localArray(i64, kBlock, "idx") : nullptr;
  Value *accV = kb.variable(at), *accI = kb.variable(i64);
  Value *none = b.getInt64(uint64_t(std::numeric_limits<int64_t>::max()));
  Value *tid = kb.localId();
  bool unsignedInt = x.dtype == DType::U8;
  auto better = [&](Value *v, Value *best) -> Value * {
    Value *r;
    if (fl) {
      r = isMax ? b.CreateFCmpOGT(v, best) : b.CreateFCmpOLT(v, best);
      r = b.CreateOr(r, b.CreateAnd(b.CreateFCmpUNO(v, v), b.CreateFCmpORD(best, best)));
    } else if (unsignedInt) {
      r = isMax ? b.CreateICmpUGT(v, best) : b.CreateICmpULT(v, best);
    } else {
      r = isMax ? b.CreateICmpSGT(v, best) : b.CreateICmpSLT(v, best);
    }
    return r;
  };
  // Whether (bv, bi) replaces (av, ai): a better value, or an equal one at a
  // lower index; an empty entry (index `none`) never wins.
  auto wins = [&](Value *av, Value *ai, Value *bv, Value *bi) -> Value * {
    Value *beats = b.CreateOr(better(bv, av),
                              b.CreateAnd(b.CreateNot(better(av, bv)), b.CreateICmpSLT(bi, ai)));
    return b.CreateAnd(b.CreateICmpNE(bi, none), b.CreateOr(b.CreateICmpEQ(ai, none), beats));
  };
  auto widen = [&](Value *v) -> Value * {
    if (arg)
      return v;
    if (fl)
      return v->getType() == at ? v : b.CreateFPExt(v, at);
    return unsignedInt ? b.CreateZExt(v, at) : b.CreateSExtOrTrunc(v, at);
  };
  auto one = [&]() -> Value * {
    return fl ? (Value *)llvm::ConstantFP::get(at, 1.0) : llvm::ConstantInt::get(at, 1);
  };
  kb.forEachRow(rows, groups, [&](Value *row) {
    std::vector<Value *> ro = pointOffsets(b, row, outer, outerStrides);
    b.CreateStore(arg ? (Value *)llvm::Constant::getNullValue(at) : one(), accV);
    b.CreateStore(none, accI);
    kb.loop(tid, b.getInt64(uint64_t(n)), b.getInt64(kBlock), [&](Value *j) {
      Value *off = b.CreateAdd(ro[0], pointOffsets(b, j, innerShape, innerStrides)[0]);
      Value *v =
          jit::loadElement(b, x.dtype, kb.element(kb.param(1), jit::storageType(c, x.dtype), off));
      if (arg) {
        Value *w = wins(b.CreateLoad(at, accV), b.CreateLoad(i64, accI), v, j);
        b.CreateStore(b.CreateSelect(w, v, b.CreateLoad(at, accV)), accV);
        b.CreateStore(b.CreateSelect(w, j, b.CreateLoad(i64, accI)), accI);
      } else {
        Value *a = b.CreateLoad(at, accV);
        b.CreateStore(fl ? b.CreateFMul(a, widen(v)) : b.CreateMul(a, widen(v)), accV);
      }
    });
    b.CreateStore(b.CreateLoad(at, accV), kb.element(shV, at, tid));
    if (arg)
      b.CreateStore(b.CreateLoad(i64, accI), kb.element(shI, i64, tid));
    kb.barrier();
    for (unsigned s = kBlock / 2; s > 0; s /= 2) {
      kb.ifThen(b.CreateICmpULT(tid, b.getInt64(s)), [&] {
        Value *other = b.CreateAdd(tid, b.getInt64(s));
        Value *av = b.CreateLoad(at, kb.element(shV, at, tid));
        Value *bv = b.CreateLoad(at, kb.element(shV, at, other));
        if (arg) {
          Value *ai = b.CreateLoad(i64, kb.element(shI, i64, tid));
          Value *bi = b.CreateLoad(i64, kb.element(shI, i64, other));
          Value *w = wins(av, ai, bv, bi);
          b.CreateStore(b.CreateSelect(w, bv, av), kb.element(shV, at, tid));
          b.CreateStore(b.CreateSelect(w, bi, ai), kb.element(shI, i64, tid));
        } else {
          b.CreateStore(fl ? b.CreateFMul(av, bv) : b.CreateMul(av, bv), kb.element(shV, at, tid));
        }
      });
      kb.barrier();
    }
    kb.ifThen(b.CreateICmpEQ(tid, b.getInt64(0)), [&] {
      Value *o = ro[1];
      if (arg) {
        Value *i = b.CreateLoad(i64, kb.element(shI, i64, b.getInt64(0)));
        i = b.CreateSelect(b.CreateICmpEQ(i, none), b.getInt64(0), i);
        b.CreateStore(i, kb.element(kb.param(0), i64, o));
      } else {
        Value *p = b.CreateLoad(at, kb.element(shV, at, b.getInt64(0)));
        llvm::Type *rt = jit::computeType(c, out.dtype);
        p = fl ? b.CreateFPTrunc(p, rt) : b.CreateTrunc(p, rt);
        jit::storeElement(b, out.dtype, p,
                          kb.element(kb.param(0), jit::storageType(c, out.dtype), o));
      }
    });
    kb.barrier();
  });
  return launchOf(kb.finish(), groups, {out.ref, x.ref});
}

} // namespace mdl::backend::hip
