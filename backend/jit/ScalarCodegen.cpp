// Per-element semantics of the fused operations, as LLVM IR. Each case
// mirrors the CPU kernel it replaces (backend/cpu/ElementwiseKernels.cpp,
// CastKernels.cpp): integer arithmetic wraps, `/` and `%` on integers are
// floor division and its remainder with a zero divisor giving 0, float `%`
// takes the divisor's sign, maximum / minimum / clip propagate NaN, casts
// from float to integer truncate and saturate (NaN gives 0). bf16 and f16
// compute in f32 between a load and a store (HalfCodegen.cpp); a cast to a
// half rounds there, as the kernel's store does.
#include "backend/cpu/KernelSupport.h"
#include "backend/jit/Codegen.h"
#include "stdlib/OpAttrs.h"
#include "stdlib/Registry.h"

#include <llvm/IR/Intrinsics.h>

#include <cstring>

namespace mdl::backend::jit {

using namespace ir;
using llvm::Value;

llvm::Type *computeType(llvm::LLVMContext &c, DType t) {
  switch (t) {
  case DType::Bool: return llvm::Type::getInt1Ty(c);
  case DType::I8: case DType::U8: return llvm::Type::getInt8Ty(c);
  case DType::I32: return llvm::Type::getInt32Ty(c);
  case DType::I64: return llvm::Type::getInt64Ty(c);
  case DType::F64: return llvm::Type::getDoubleTy(c);
  case DType::F16: case DType::BF16: case DType::F32: return llvm::Type::getFloatTy(c);
  }
  return llvm::Type::getFloatTy(c);
}

llvm::Type *storageType(llvm::LLVMContext &c, DType t) {
  if (isHalf(t))
    return llvm::Type::getInt16Ty(c);
  return t == DType::Bool ? llvm::Type::getInt8Ty(c) : computeType(c, t);
}

Value *loadElement(llvm::IRBuilder<> &b, DType t, Value *ptr) {
  Value *v = b.CreateLoad(storageType(b.getContext(), t), ptr);
  if (isHalf(t))
    return halfToFloat(b, t, v);
  return t == DType::Bool ? b.CreateICmpNE(v, b.getInt8(0)) : v;
}

void storeElement(llvm::IRBuilder<> &b, DType t, Value *v, Value *ptr) {
  if (t == DType::Bool)
    v = b.CreateZExt(v, b.getInt8Ty());
  else if (isHalf(t))
    v = floatToHalf(b, t, v);
  b.CreateStore(v, ptr);
}

namespace {

bool isUnsigned(DType t) { return t == DType::U8 || t == DType::Bool; }

Value *constantOf(llvm::IRBuilder<> &b, DType t, const void *bytes) {
  llvm::LLVMContext &c = b.getContext();
  switch (t) {
  case DType::Bool: return b.getInt1(*static_cast<const uint8_t *>(bytes) != 0);
  case DType::I8: case DType::U8: return b.getInt8(*static_cast<const uint8_t *>(bytes));
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, bytes, 4);
    return b.getInt32(uint32_t(v));
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, bytes, 8);
    return b.getInt64(uint64_t(v));
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, bytes, 8);
    return llvm::ConstantFP::get(llvm::Type::getDoubleTy(c), v);
  }
  case DType::BF16: case DType::F16: {
    uint16_t h;
    std::memcpy(&h, bytes, 2);
    float v = t == DType::BF16 ? ir::bf16ToFloat(h) : ir::halfToFloat(h);
    return llvm::ConstantFP::get(llvm::Type::getFloatTy(c), v);
  }
  default: {
    float v;
    std::memcpy(&v, bytes, 4);
    return llvm::ConstantFP::get(llvm::Type::getFloatTy(c), v);
  }
  }
}

// A C math function of one or two arguments, known to have no side effects
// (so it can be vectorized through the libmvec mappings of Compiler.cpp).
Value *callMath(llvm::IRBuilder<> &b, const char *f32Name, const char *f64Name,
                std::vector<Value *> args) {
  llvm::Type *t = args[0]->getType();
  const char *name = t->isFloatTy() ? f32Name : f64Name;
  llvm::Module *m = b.GetInsertBlock()->getModule();
  llvm::FunctionType *ft =
      llvm::FunctionType::get(t, std::vector<llvm::Type *>(args.size(), t), false);
  llvm::FunctionCallee callee = m->getOrInsertFunction(name, ft);
  if (auto *f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotFreeMemory();
    f->setNoSync();
    f->setMemoryEffects(llvm::MemoryEffects::none());
  }
  llvm::CallInst *call = b.CreateCall(callee, args);
  call->setDoesNotThrow();
  call->setMemoryEffects(llvm::MemoryEffects::none());
  return call;
}

/// a ** b on integers, as the CPU kernel computes it: square-and-multiply
/// over the exponent's bits (wrapping); a negative exponent gives 1 / a
/// truncated (1 for a = 1, +-1 for a = -1, else 0). The operation table
/// fuses integer powers on no CPU loop (a loop of 32 or 64 steps per
/// element); a GPU segment computes every operation in kernels.
Value *integerPower(llvm::IRBuilder<> &b, DType t, Value *a, Value *e) {
  llvm::Type *ty = a->getType();
  unsigned bits = ty->getIntegerBitWidth();
  Value *one = llvm::ConstantInt::get(ty, 1), *r = one, *base = a;
  for (unsigned i = 0; i < bits; ++i) {
    Value *bit =
        b.CreateICmpNE(b.CreateAnd(b.CreateLShr(e, i), one), llvm::ConstantInt::get(ty, 0));
    r = b.CreateSelect(bit, b.CreateMul(r, base), r);
    base = b.CreateMul(base, base);
  }
  if (isUnsigned(t))
    return r;
  Value *minusOne = llvm::ConstantInt::getSigned(ty, -1), *zero = llvm::ConstantInt::get(ty, 0);
  Value *odd = b.CreateICmpNE(b.CreateAnd(e, one), zero);
  Value *negExp = b.CreateSelect(
      b.CreateICmpEQ(a, one), one,
      b.CreateSelect(b.CreateICmpEQ(a, minusOne), b.CreateSelect(odd, minusOne, one), zero));
  return b.CreateSelect(b.CreateICmpSLT(e, zero), negExp, r);
}

Value *intrinsic(llvm::IRBuilder<> &b, llvm::Intrinsic::ID id, std::vector<Value *> args) {
  return b.CreateIntrinsic(id, {args[0]->getType()}, args);
}


Value *fconst(llvm::IRBuilder<> &b, llvm::Type *t, double v) { return llvm::ConstantFP::get(t, v); }

/// Horner's rule with fused multiply-adds: c[0] + t (c[1] + t (c[2] + ...)).
Value *horner(llvm::IRBuilder<> &b, Value *t, const double *c, int n) {
  llvm::Type *ty = t->getType();
  Value *p = fconst(b, ty, c[n - 1]);
  for (int i = n - 1; i-- > 0;)
    p = b.CreateIntrinsic(llvm::Intrinsic::fma, {ty}, {p, t, fconst(b, ty, c[i])});
  return p;
}

/// tanh of f32 without a call: x P(x^2) / Q(x^2) on [-9, 9] (beyond it
/// tanh rounds to +-1), a rational fit made for mdl (iterated weighted
/// least squares on relative error, bench/notes in docs/jit.md); within 7
/// ulp of tanh. A call to the vector library costs three times as much in
/// a fused loop (every vector register is spilled around it).
Value *tanhF32(llvm::IRBuilder<> &b, Value *x) {
  static const double p[] = {9.9999999258e-01, 1.3385019857e-01, 3.5002003243e-03,
                             2.0679632964e-05, 1.3442355149e-08};
  static const double q[] = {1.0, 4.6718341035e-01, 2.5894870867e-02, 3.2929472900e-04,
                             7.8145767666e-07};
  llvm::Type *ty = x->getType();
  // NaN passes both comparisons and comes out NaN.
  Value *xc = b.CreateSelect(b.CreateFCmpOGT(x, fconst(b, ty, 9.0)), fconst(b, ty, 9.0),
                             b.CreateSelect(b.CreateFCmpOLT(x, fconst(b, ty, -9.0)),
                                            fconst(b, ty, -9.0), x));
  Value *t = b.CreateFMul(xc, xc);
  return b.CreateFDiv(b.CreateFMul(xc, horner(b, t, p, 5)), horner(b, t, q, 5));
}

Value *maxNaN(llvm::IRBuilder<> &b, DType t, Value *x, Value *y, bool isMax) {
  if (isFloat(t)) {
    Value *better = isMax ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y);
    return b.CreateSelect(b.CreateOr(better, b.CreateFCmpUNO(x, x)), x, y);
  }
  Value *better = isUnsigned(t) ? (isMax ? b.CreateICmpUGT(x, y) : b.CreateICmpULT(x, y))
                                : (isMax ? b.CreateICmpSGT(x, y) : b.CreateICmpSLT(x, y));
  return b.CreateSelect(better, x, y);
}

Value *floorDiv(llvm::IRBuilder<> &b, DType t, Value *x, Value *y) {
  llvm::Type *ty = x->getType();
  Value *zero = llvm::ConstantInt::get(ty, 0), *one = llvm::ConstantInt::get(ty, 1);
  Value *bz = b.CreateICmpEQ(y, zero);
  if (isUnsigned(t))
    return b.CreateSelect(bz, zero, b.CreateUDiv(x, b.CreateSelect(bz, one, y)));
  Value *bm1 = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(ty, -1));
  Value *safe = b.CreateSelect(b.CreateOr(bz, bm1), one, y);
  Value *q = b.CreateSDiv(x, safe), *r = b.CreateSRem(x, safe);
  Value *adj = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(x, y), zero));
  q = b.CreateSub(q, b.CreateZExt(adj, ty));
  return b.CreateSelect(bz, zero, b.CreateSelect(bm1, b.CreateSub(zero, x), q));
}

Value *floorMod(llvm::IRBuilder<> &b, DType t, Value *x, Value *y) {
  llvm::Type *ty = x->getType();
  if (isFloat(t)) {
    Value *zero = fconst(b, ty, 0);
    Value *r = b.CreateFRem(x, y);
    Value *flip = b.CreateICmpNE(b.CreateFCmpOLT(r, zero), b.CreateFCmpOLT(y, zero));
    Value *adjusted = b.CreateSelect(flip, b.CreateFAdd(r, y), r);
    Value *signedZero = intrinsic(b, llvm::Intrinsic::copysign, {zero, y});
    return b.CreateSelect(b.CreateFCmpUNE(r, zero), adjusted, signedZero);
  }
  Value *zero = llvm::ConstantInt::get(ty, 0), *one = llvm::ConstantInt::get(ty, 1);
  Value *bz = b.CreateICmpEQ(y, zero);
  if (isUnsigned(t))
    return b.CreateSelect(bz, zero, b.CreateURem(x, b.CreateSelect(bz, one, y)));
  Value *bm1 = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(ty, -1));
  Value *r = b.CreateSRem(x, b.CreateSelect(b.CreateOr(bz, bm1), one, y));
  Value *flip = b.CreateAnd(b.CreateICmpNE(r, zero),
                            b.CreateICmpNE(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(y, zero)));
  r = b.CreateSelect(flip, b.CreateAdd(r, y), r);
  return b.CreateSelect(b.CreateOr(bz, bm1), zero, r);
}

Value *compare(llvm::IRBuilder<> &b, OpKind k, DType t, Value *x, Value *y) {
  using P = llvm::CmpInst::Predicate;
  if (isFloat(t)) {
    P p = k == OpKind::Eq ? P::FCMP_OEQ : k == OpKind::Ne ? P::FCMP_UNE : k == OpKind::Lt ? P::FCMP_OLT
          : k == OpKind::Le ? P::FCMP_OLE : k == OpKind::Gt ? P::FCMP_OGT : P::FCMP_OGE;
    return b.CreateFCmp(p, x, y);
  }
  bool u = isUnsigned(t);
  P p = k == OpKind::Eq ? P::ICMP_EQ : k == OpKind::Ne ? P::ICMP_NE
        : k == OpKind::Lt ? (u ? P::ICMP_ULT : P::ICMP_SLT)
        : k == OpKind::Le ? (u ? P::ICMP_ULE : P::ICMP_SLE)
        : k == OpKind::Gt ? (u ? P::ICMP_UGT : P::ICMP_SGT)
                          : (u ? P::ICMP_UGE : P::ICMP_SGE);
  return b.CreateICmp(p, x, y);
}

Value *cast(llvm::IRBuilder<> &b, DType from, DType to, Value *x) {
  llvm::LLVMContext &c = b.getContext();
  llvm::Type *tt = computeType(c, to);
  if (from == to)
    return x;
  // To a half: to f32 as for an f32 target, then rounded to the half's
  // precision (the kernel converts to f32, then stores).
  if (isHalf(to))
    return roundToHalf(b, to, cast(b, from, DType::F32, x));
  if (to == DType::Bool)
    return isFloat(from) ? b.CreateFCmpUNE(x, fconst(b, x->getType(), 0))
                         : b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from == DType::Bool)
    return isFloat(to) ? b.CreateUIToFP(x, tt) : b.CreateZExt(x, tt);
  if (isFloat(from) && isFloat(to))
    return b.CreateFPCast(x, tt);
  if (isFloat(from))
    return b.CreateIntrinsic(isUnsigned(to) ? llvm::Intrinsic::fptoui_sat
                                            : llvm::Intrinsic::fptosi_sat,
                             {tt, x->getType()}, {x});
  if (isFloat(to))
    return isUnsigned(from) ? b.CreateUIToFP(x, tt) : b.CreateSIToFP(x, tt);
  return b.CreateIntCast(x, tt, !isUnsigned(from));
}

} // namespace

Value *denseElement(llvm::IRBuilder<> &b, const DenseData &d, int64_t i) {
  size_t sz = dtypeSize(d.type.dtype);
  return constantOf(b, d.type.dtype, d.bytes.data() + size_t(i) * sz);
}

Value *creationValue(llvm::IRBuilder<> &b, const Operation &op) {
  DType t = op.results[0]->type.dtype;
  uint64_t bytes = 0;
  switch (op.kind) {
  case OpKind::Zeros:
    break;
  case OpKind::Ones:
    cpu::fillInt(t, &bytes, 1, 1);
    break;
  default: { // full
    const Attribute *v = op.attr("value");
    if (v && v->kind() == Attribute::Kind::Int)
      cpu::fillInt(t, &bytes, 1, v->asInt());
    else
      cpu::fillValue(t, &bytes, 1, op.floatAttr("value", 0));
    break;
  }
  }
  return constantOf(b, t, &bytes);
}

namespace {

/// What a code generator gets: the builder, the operation, its operands as
/// compute-type values, and (for convenience) the operand and result
/// element types, the operand's LLVM type, and whether it is floating.
struct ElementArgs {
  llvm::IRBuilder<> &b;
  const Operation &op;
  const std::vector<Value *> &a;
  DType t, rt;
  llvm::Type *ty;
  bool fl;
};
#define MDL_ELEMENT_ARGS(e) [[maybe_unused]] auto &[b, op, a, t, rt, ty, fl] = e

using ElementFn = Value *(*)(const ElementArgs &e);

/// The element-wise code generators, by kind.
class ElementCodegenTable {
public:
  ElementCodegenTable() : fns_(size_t(ir::kNumOpKinds), nullptr) {}
  void add(OpKind k, ElementFn f) { fns_[size_t(k)] = f; }
  void add(std::initializer_list<OpKind> ks, ElementFn f) {
    for (OpKind k : ks)
      add(k, f);
  }
  ElementFn find(OpKind k) const { return fns_[size_t(k)]; }

private:
  std::vector<ElementFn> fns_;
};

void registerElementCodegen(ElementCodegenTable &t) {
  t.add(OpKind::Add, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? b.CreateFAdd(a[0], a[1]) : b.CreateAdd(a[0], a[1]);
  });
  t.add(OpKind::Sub, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? b.CreateFSub(a[0], a[1]) : b.CreateSub(a[0], a[1]);
  });
  t.add(OpKind::Mul, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? b.CreateFMul(a[0], a[1]) : b.CreateMul(a[0], a[1]);
  });
  t.add(OpKind::Div, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    if (!fl)
      return floorDiv(b, t, a[0], a[1]);
    Value *q = b.CreateFDiv(a[0], a[1]);
    // A half result keeps 8 or 11 bits: x * (1 / y), which LICM makes of a
    // division by a loop-invariant y (softmax's row sum), rounds to the
    // same half but near ties, and a multiply is ten times cheaper.
    if (isHalf(rt))
      llvm::cast<llvm::Instruction>(q)->setHasAllowReciprocal(true);
    return q;
  });
  t.add(OpKind::Mod, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return floorMod(b, t, a[0], a[1]);
  });
  t.add(OpKind::Pow, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    if (!ir::isFloat(t))
      return integerPower(b, t, a[0], a[1]);
    return callMath(b, "powf", "pow", {a[0], a[1]});
  });
  t.add(OpKind::Maximum, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return maxNaN(b, t, a[0], a[1], true);
  });
  t.add(OpKind::Minimum, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return maxNaN(b, t, a[0], a[1], false);
  });
  t.add(
      {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge},
      [](const ElementArgs &args) -> Value * {
        MDL_ELEMENT_ARGS(args);
        return compare(b, op.kind, t, a[0], a[1]);
      });
  t.add(OpKind::And, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateAnd(a[0], a[1]);
  });
  t.add(OpKind::Or, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateOr(a[0], a[1]);
  });
  t.add(OpKind::Not, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateNot(a[0]);
  });
  t.add(OpKind::Neg, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? b.CreateFNeg(a[0])
              : b.CreateSub(llvm::ConstantInt::get(ty, 0), a[0]);
  });
  t.add(OpKind::Abs, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    if (fl)
      return intrinsic(b, llvm::Intrinsic::fabs, {a[0]});
    if (isUnsigned(t))
      return a[0];
    return b.CreateSelect(b.CreateICmpSLT(a[0], llvm::ConstantInt::get(ty, 0)),
                          b.CreateSub(llvm::ConstantInt::get(ty, 0), a[0]),
                          a[0]);
  });
  t.add(OpKind::Relu, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    if (fl)
      return b.CreateSelect(b.CreateFCmpOLT(a[0], fconst(b, ty, 0)),
                            fconst(b, ty, 0), a[0]);
    if (isUnsigned(t))
      return a[0];
    return b.CreateSelect(b.CreateICmpSLT(a[0], llvm::ConstantInt::get(ty, 0)),
                          llvm::ConstantInt::get(ty, 0), a[0]);
  });
  t.add(OpKind::Floor, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? intrinsic(b, llvm::Intrinsic::floor, {a[0]}) : a[0];
  });
  t.add(OpKind::Ceil, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? intrinsic(b, llvm::Intrinsic::ceil, {a[0]}) : a[0];
  });
  t.add(OpKind::Sign, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    if (fl) {
      Value *s = b.CreateSelect(
          b.CreateFCmpOGT(a[0], fconst(b, ty, 0)), fconst(b, ty, 1),
          b.CreateSelect(b.CreateFCmpOLT(a[0], fconst(b, ty, 0)),
                         fconst(b, ty, -1), fconst(b, ty, 0)));
      return b.CreateSelect(b.CreateFCmpUNO(a[0], a[0]), a[0], s);
    }
    Value *zero = llvm::ConstantInt::get(ty, 0);
    if (isUnsigned(t))
      return b.CreateZExt(b.CreateICmpUGT(a[0], zero), ty);
    return b.CreateSelect(
        b.CreateICmpSGT(a[0], zero), llvm::ConstantInt::get(ty, 1),
        b.CreateSelect(b.CreateICmpSLT(a[0], zero),
                       llvm::ConstantInt::getSigned(ty, -1), zero));
  });
  t.add(OpKind::Exp, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return callMath(b, "expf", "exp", {a[0]});
  });
  t.add(OpKind::Log, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return callMath(b, "logf", "log", {a[0]});
  });
  t.add(OpKind::Sqrt, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return intrinsic(b, llvm::Intrinsic::sqrt, {a[0]});
  });
  t.add(OpKind::Rsqrt, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateFDiv(fconst(b, ty, 1),
                        intrinsic(b, llvm::Intrinsic::sqrt, {a[0]}));
  });
  t.add(OpKind::Tanh, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return ty->isFloatTy() ? tanhF32(b, a[0])
                           : callMath(b, "tanhf", "tanh", {a[0]});
  });
  t.add(OpKind::Sin, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return callMath(b, "sinf", "sin", {a[0]});
  });
  t.add(OpKind::Cos, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return callMath(b, "cosf", "cos", {a[0]});
  });
  t.add(OpKind::Sigmoid, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    // One exponential of -|x| serves both branches of the kernel.
    Value *e =
        callMath(b, "expf", "exp",
                 {b.CreateFNeg(intrinsic(b, llvm::Intrinsic::fabs, {a[0]}))});
    Value *den = b.CreateFAdd(fconst(b, ty, 1), e);
    return b.CreateSelect(b.CreateFCmpOGE(a[0], fconst(b, ty, 0)),
                          b.CreateFDiv(fconst(b, ty, 1), den),
                          b.CreateFDiv(e, den));
  });
  t.add(OpKind::Gelu, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    Value *x = a[0], *half = b.CreateFMul(fconst(b, ty, 0.5), x);
    if (stdlib::attrs::Gelu::of(op).approximate) {
      Value *x3 = b.CreateFMul(
          b.CreateFMul(b.CreateFMul(fconst(b, ty, 0.044715), x), x), x);
      Value *inner =
          b.CreateFMul(fconst(b, ty, 0.7978845608028654), b.CreateFAdd(x, x3));
      return b.CreateFMul(half,
                          b.CreateFAdd(fconst(b, ty, 1),
                                       callMath(b, "tanhf", "tanh", {inner})));
    }
    Value *erf = callMath(b, "erff", "erf",
                          {b.CreateFMul(x, fconst(b, ty, 0.7071067811865476))});
    return b.CreateFMul(half, b.CreateFAdd(fconst(b, ty, 1), erf));
  });
  t.add(OpKind::Clip, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    DType ct = op.operands[0]->type.dtype;
    return maxNaN(b, ct, maxNaN(b, ct, a[0], a[1], true), a[2], false);
  });
  t.add(OpKind::Select, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateSelect(a[0], a[1], a[2]);
  });
  t.add(OpKind::Cast, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return cast(b, t, rt, a[0]);
  });
}

// The bit and integer operations of the HLO dialect, as the CPU kernels
// compute them (backend/cpu/HloKernelsElementwise.cpp): shifts by the
// width or more give 0 (or the sign), truncating division by zero gives
// -1 (all ones unsigned) and remainder the dividend, x / -1 wraps. JAX's
// random numbers and index arithmetic are made of these.
Value *truncDivRem(llvm::IRBuilder<> &b, const Operation &op, DType t, Value *x, Value *y,
                   bool rem) {
  llvm::Type *ty = x->getType();
  Value *zero = llvm::ConstantInt::get(ty, 0), *one = llvm::ConstantInt::get(ty, 1);
  Value *bz = b.CreateICmpEQ(y, zero);
  if (op.boolAttr("is_unsigned", false) || isUnsigned(t)) {
    Value *safe = b.CreateSelect(bz, one, y);
    return rem ? b.CreateSelect(bz, x, b.CreateURem(x, safe))
               : b.CreateSelect(bz, llvm::ConstantInt::getSigned(ty, -1), b.CreateUDiv(x, safe));
  }
  Value *bm1 = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(ty, -1));
  Value *safe = b.CreateSelect(b.CreateOr(bz, bm1), one, y);
  if (rem)
    return b.CreateSelect(bz, x, b.CreateSelect(bm1, zero, b.CreateSRem(x, safe)));
  return b.CreateSelect(bz, llvm::ConstantInt::getSigned(ty, -1),
                        b.CreateSelect(bm1, b.CreateSub(zero, x), b.CreateSDiv(x, safe)));
}

void registerHloIntegerCodegen(ElementCodegenTable &t) {
  t.add(OpKind::BitAnd, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateAnd(a[0], a[1]);
  });
  t.add(OpKind::BitOr, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateOr(a[0], a[1]);
  });
  t.add(OpKind::BitXor, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateXor(a[0], a[1]);
  });
  t.add(OpKind::BitNot, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateNot(a[0]);
  });
  t.add(OpKind::Popcnt, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return intrinsic(b, llvm::Intrinsic::ctpop, {a[0]});
  });
  t.add(OpKind::Clz, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a[0], b.getFalse());
  });
  t.add({OpKind::ShiftLeft, OpKind::ShiftRightLogical}, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    unsigned width = ty->getIntegerBitWidth();
    Value *over = b.CreateICmpUGE(a[1], llvm::ConstantInt::get(ty, width));
    Value *amount = b.CreateAnd(a[1], llvm::ConstantInt::get(ty, width - 1));
    Value *r = op.kind == OpKind::ShiftLeft ? b.CreateShl(a[0], amount) : b.CreateLShr(a[0], amount);
    return b.CreateSelect(over, llvm::ConstantInt::get(ty, 0), r);
  });
  t.add(OpKind::ShiftRightArith, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    unsigned width = ty->getIntegerBitWidth();
    Value *amount = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, a[1],
                                            llvm::ConstantInt::get(ty, width - 1));
    return b.CreateAShr(a[0], amount);
  });
  t.add(OpKind::DivTrunc, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return truncDivRem(b, op, t, a[0], a[1], false);
  });
  t.add(OpKind::Rem, [](const ElementArgs &args) -> Value * {
    MDL_ELEMENT_ARGS(args);
    return fl ? b.CreateFRem(a[0], a[1]) : truncDivRem(b, op, t, a[0], a[1], true);
  });
}

const ElementCodegenTable &elementCodegen() {
  static const ElementCodegenTable table = [] {
    ElementCodegenTable t;
    registerElementCodegen(t);
    registerHloIntegerCodegen(t);
    return t;
  }();
  return table;
}

} // namespace

// The reductions a fused loop accumulates (LoopCodegen.cpp, and the GPU
// generator's row kernels): defined beside the element-wise table so that
// this library alone answers what the JIT generates.
bool emitsRowReduction(OpKind k) {
  return k == OpKind::Sum || k == OpKind::Mean || k == OpKind::ReduceMax ||
         k == OpKind::ReduceMin;
}

namespace {
bool isSumLike(const Operation &r) { return r.kind == OpKind::Sum || r.kind == OpKind::Mean; }
bool isFloatMaxMin(const Operation &r) {
  return (r.kind == OpKind::ReduceMax || r.kind == OpKind::ReduceMin) &&
         ir::isFloat(r.results[0]->type.dtype);
}
} // namespace

llvm::Type *accumulatorType(llvm::LLVMContext &c, const Operation &r) {
  DType t = r.results[0]->type.dtype;
  if (isSumLike(r) && ir::isFloat(t))
    return llvm::Type::getDoubleTy(c);
  return computeType(c, t);
}

std::vector<Value *> accumulatorInit(llvm::IRBuilder<> &b, const Operation &r,
                                     NaNPropagation nans) {
  DType t = r.results[0]->type.dtype;
  llvm::Type *at = accumulatorType(b.getContext(), r);
  if (isSumLike(r))
    return {ir::isFloat(t) ? (Value *)llvm::ConstantFP::get(at, 0.0)
                           : llvm::ConstantInt::get(at, 0)};
  bool isMax = r.kind == OpKind::ReduceMax;
  if (ir::isFloat(t)) {
    Value *identity = llvm::ConstantFP::getInfinity(at, isMax);
    if (nans == NaNPropagation::Flag)
      return {identity, b.getFalse()};
    return {identity};
  }
  unsigned bits = at->getIntegerBitWidth();
  if (t == DType::U8)
    return {isMax ? llvm::ConstantInt::get(at, 0)
                  : llvm::ConstantInt::get(at, llvm::APInt::getMaxValue(bits))};
  return {llvm::ConstantInt::get(at, isMax ? llvm::APInt::getSignedMinValue(bits)
                                           : llvm::APInt::getSignedMaxValue(bits))};
}

std::vector<Value *> accumulate(llvm::IRBuilder<> &b, const Operation &r,
                                const std::vector<Value *> &acc, Value *x, NaNPropagation nans,
                                bool reassociate) {
  DType t = r.results[0]->type.dtype;
  if (isSumLike(r)) {
    if (!ir::isFloat(t))
      return {b.CreateAdd(acc[0], x)};
    if (x->getType() != acc[0]->getType())
      x = b.CreateFPExt(x, acc[0]->getType());
    Value *s = b.CreateFAdd(acc[0], x);
    if (reassociate)
      if (auto *i = llvm::dyn_cast<llvm::Instruction>(s))
        i->setHasAllowReassoc(true);
    return {s};
  }
  bool isMax = r.kind == OpKind::ReduceMax;
  if (isFloatMaxMin(r)) {
    if (nans == NaNPropagation::Select) {
      Value *better = isMax ? b.CreateFCmpOGT(x, acc[0]) : b.CreateFCmpOLT(x, acc[0]);
      return {b.CreateSelect(b.CreateOr(better, b.CreateFCmpUNO(x, x)), x, acc[0])};
    }
    // A NaN input makes the maxnum poison; accumulatorResult never selects
    // it then.
    Value *m = b.CreateIntrinsic(isMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum,
                                 {acc[0]->getType()}, {acc[0], x});
    if (auto *mi = llvm::dyn_cast<llvm::Instruction>(m)) {
      mi->setHasNoNaNs(true);
      mi->setHasNoSignedZeros(true);
    }
    return {m, b.CreateOr(acc[1], b.CreateFCmpUNO(x, x))};
  }
  llvm::Intrinsic::ID id = t == DType::U8 ? (isMax ? llvm::Intrinsic::umax : llvm::Intrinsic::umin)
                                          : (isMax ? llvm::Intrinsic::smax : llvm::Intrinsic::smin);
  return {b.CreateIntrinsic(id, {acc[0]->getType()}, {acc[0], x})};
}

Value *accumulatorResult(llvm::IRBuilder<> &b, const Operation &r, const std::vector<Value *> &acc,
                         NaNPropagation nans, int64_t count) {
  DType t = r.results[0]->type.dtype;
  Value *v = acc[0];
  if (nans == NaNPropagation::Flag && isFloatMaxMin(r))
    v = b.CreateSelect(acc[1], llvm::ConstantFP::getNaN(v->getType()), v);
  if (r.kind == OpKind::Mean)
    v = b.CreateFDiv(v, llvm::ConstantFP::get(v->getType(), double(count)));
  llvm::Type *ct = computeType(b.getContext(), t);
  if (ir::isFloat(t) && v->getType() != ct)
    v = b.CreateFPTrunc(v, ct);
  return v;
}

std::string elementCodegenProblems() {
  std::string missing;
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    OpKind kind = OpKind(k);
    if (stdlib::opInfo(kind).fusion == stdlib::FusionKind::None)
      continue;
    bool generated = stdlib::isRowReduction(kind) ? emitsRowReduction(kind)
                                                  : elementCodegen().find(kind) != nullptr;
    if (!generated)
      missing += std::string(missing.empty() ? "" : ", ") + opName(kind);
  }
  return missing.empty() ? "" : "no element-wise code for the fusible operations: " + missing;
}

Value *emitElementwise(llvm::IRBuilder<> &b, const Operation &op, const std::vector<Value *> &a,
                       std::string &error) {
  ElementFn fn = elementCodegen().find(op.kind);
  if (!fn) {
    error = std::string("no element-wise code for '") + opName(op.kind) + "'";
    return nullptr;
  }
  DType t = op.operands[0]->type.dtype, rt = op.results[0]->type.dtype;
  return fn({b, op, a, t, rt, a[0]->getType(), isFloat(t)});
}

Value *emitFusedOperation(llvm::IRBuilder<> &b, const Operation &op, const FusedPoint &point,
                          std::string &error) {
  switch (op.kind) {
  case OpKind::Constant: {
    const DenseData &d = op.attr("value")->asDense();
    if (d.type.numElements() <= 1)
      return denseElement(b, d, 0);
    Value *p = b.CreateGEP(storageType(b.getContext(), d.type.dtype), point.constantData(op),
                           point.leafOffset(op));
    return loadElement(b, d.type.dtype, p);
  }
  case OpKind::Zeros:
  case OpKind::Ones:
  case OpKind::Full:
    return creationValue(b, op);
  case OpKind::Arange:
    return point.leafOffset(op);
  default:
    break;
  }
  if (stdlib::isRowReduction(op.kind)) {
    auto it = point.reduced.find(&op);
    if (it == point.reduced.end()) {
      error = "a reduction is read before it is computed";
      return nullptr;
    }
    return it->second;
  }
  std::vector<Value *> args;
  for (ir::Value *o : op.operands) {
    Value *a = point.operand(o, error);
    if (!a)
      return nullptr;
    args.push_back(a);
  }
  return emitElementwise(b, op, args, error);
}

} // namespace mdl::backend::jit
