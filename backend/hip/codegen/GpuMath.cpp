// The C math functions in LLVM IR (see GpuMath.h). Each double function is
// branch-free straight-line code (selects for the special cases), so it
// costs the same on every lane of a wavefront:
//   exp   x = k ln2 + r, |r| <= ln2/2 (k = rint(x / ln2), r by two FMAs with
//         ln2 split in two); e^r by its Taylor series to r^13; 2^k applied
//         as two exact powers of two (so subnormal results round once).
//   log   x = 2^e m, m in [sqrt(1/2), sqrt(2)); f = m - 1, s = f / (2 + f),
//         log m = f - s f + 2 s (z/3 + z^2/5 + ... + z^11/23) with z = s^2;
//         e ln2 added in two parts.
//   sin, cos  x = k pi/2 + r (three FMAs with pi/2 in three parts), Taylor
//         series of sin r and cos r to degree 19 and 18, chosen by k mod 4.
//         Accurate while k fits the reduction (|x| below about 2^20).
//   pow   exp(y log|x|) with the product split exactly (FMA), C99's special
//         cases (zeros, infinities, NaN, negative bases with integer or
//         non-integer exponents) by selects.
//   erf   |x| < 2.5: 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (2n+1)!! (positive
//         terms, 40 of them); 2.5 <= |x| < 6: 1 - erfc by its continued
//         fraction (40 levels); beyond: +-1. e^(-x^2) with x^2 split exactly.
//   tanh  t / (t + 2) with t = expm1(2|x|), expm1 by its Taylor series below
//         0.5 and e^y - 1 above; +-1 beyond |x| = 22.
// Float functions evaluate the double ones and round once.
#include "backend/hip/codegen/GpuMath.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <functional>
#include <map>
#include <tuple>

namespace mdl::backend::hip {

namespace {

using llvm::Value;

class MathEmitter {
public:
  MathEmitter(llvm::Module &m, llvm::GlobalValue::LinkageTypes linkage)
      : m_(m), c_(m.getContext()), b_(c_), linkage_(linkage) {
    f64_ = b_.getDoubleTy();
    i64_ = b_.getInt64Ty();
  }

  /// The double implementation `name` ("exp"), defined on first use.
  llvm::Function *f64Function(const std::string &name) {
    std::string sym = "mdl.math." + name;
    if (llvm::Function *f = m_.getFunction(sym); f && !f->isDeclaration())
      return f;
    auto it = bodies().find(name);
    if (it == bodies().end())
      return nullptr;
    unsigned arity = name == "pow" ? 2 : 1;
    llvm::Function *f = llvm::Function::Create(
        llvm::FunctionType::get(f64_, std::vector<llvm::Type *>(arity, f64_), false), linkage_, sym,
        m_);
    f->setDoesNotThrow();
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", f));
    std::vector<Value *> args;
    for (llvm::Argument &a : f->args())
      args.push_back(&a);
    b_.CreateRet((this->*(it->second))(args));
    return f;
  }

  /// The float form `name` ("expf"): the double one, rounded.
  llvm::Function *f32Function(const std::string &name) {
    std::string base = name.substr(0, name.size() - 1);
    llvm::Function *d = f64Function(base);
    if (!d)
      return nullptr;
    std::string sym = "mdl.math." + name;
    if (llvm::Function *f = m_.getFunction(sym); f && !f->isDeclaration())
      return f;
    llvm::Type *f32 = b_.getFloatTy();
    unsigned arity = d->arg_size();
    llvm::Function *f = llvm::Function::Create(
        llvm::FunctionType::get(f32, std::vector<llvm::Type *>(arity, f32), false), linkage_, sym,
        m_);
    f->setDoesNotThrow();
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", f));
    std::vector<Value *> args;
    for (llvm::Argument &a : f->args())
      args.push_back(b_.CreateFPExt(&a, f64_));
    b_.CreateRet(b_.CreateFPTrunc(b_.CreateCall(d, args), f32));
    return f;
  }

private:
  using Body = Value *(MathEmitter::*)(const std::vector<Value *> &);
  static const std::map<std::string, Body> &bodies() {
    static const std::map<std::string, Body> table = {
        {"exp", &MathEmitter::expBody},  {"log", &MathEmitter::logBody},
        {"sin", &MathEmitter::sinBody},  {"cos", &MathEmitter::cosBody},
        {"pow", &MathEmitter::powBody},  {"erf", &MathEmitter::erfBody},
        {"tanh", &MathEmitter::tanhBody}};
    return table;
  }

  // --- small helpers -----------------------------------------------------
  Value *k(double v) { return llvm::ConstantFP::get(f64_, v); }
  Value *ki(int64_t v) { return llvm::ConstantInt::getSigned(i64_, v); }
  Value *fma(Value *a, Value *x, Value *y) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {f64_}, {a, x, y});
  }
  Value *un(llvm::Intrinsic::ID id, Value *x) { return b_.CreateIntrinsic(id, {f64_}, {x}); }
  Value *fabs(Value *x) { return un(llvm::Intrinsic::fabs, x); }
  Value *isNaN(Value *x) { return b_.CreateFCmpUNO(x, x); }
  Value *sel(Value *c, Value *a, Value *b) { return b_.CreateSelect(c, a, b); }
  /// c[0] + x (c[1] + x (c[2] + ...)).
  Value *poly(Value *x, const std::vector<double> &c) {
    Value *p = k(c.back());
    for (size_t i = c.size() - 1; i-- > 0;)
      p = fma(p, x, k(c[i]));
    return p;
  }
  /// 2^n for an i64 n in [-1022, 1023].
  Value *pow2(Value *n) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, ki(1023)), ki(52)), f64_);
  }

  // --- exp ----------------------------------------------------------------
  /// e^(x + tail), with `tail` (much smaller than an ulp of x) added after
  /// the range reduction, where it still counts.
  Value *expCore(Value *x, Value *tail = nullptr) {
    const double ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10;
    Value *xc = b_.CreateIntrinsic(
        llvm::Intrinsic::minnum, {f64_},
        {b_.CreateIntrinsic(llvm::Intrinsic::maxnum, {f64_}, {x, k(-746.0)}), k(710.0)});
    Value *kf = un(llvm::Intrinsic::rint, b_.CreateFMul(xc, k(1.4426950408889634)));
    Value *r = fma(b_.CreateFNeg(kf), k(ln2Hi), xc);
    r = fma(b_.CreateFNeg(kf), k(ln2Lo), r);
    if (tail)
      r = b_.CreateFAdd(r, tail);
    std::vector<double> taylor;
    double f = 1;
    for (int i = 0; i <= 13; ++i) {
      if (i > 0)
        f *= i;
      taylor.push_back(1.0 / f);
    }
    Value *p = poly(r, taylor);
    Value *ki64 = b_.CreateFPToSI(kf, i64_);
    Value *k1 = b_.CreateAShr(ki64, ki(1));
    Value *k2 = b_.CreateSub(ki64, k1);
    Value *y = b_.CreateFMul(b_.CreateFMul(p, pow2(k1)), pow2(k2));
    y = sel(b_.CreateFCmpOGT(x, k(709.782712893383973096)), k(INFINITY), y);
    y = sel(b_.CreateFCmpOLT(x, k(-745.13321910194122)), k(0.0), y);
    return sel(isNaN(x), x, y);
  }
  Value *expBody(const std::vector<Value *> &a) { return expCore(a[0]); }

  // --- log ----------------------------------------------------------------
  /// log x as a double-double hi + lo: e ln2_hi and f = m - 1 are exact,
  /// so they are summed exactly (two-sum) and only the small terms (e ln2_lo,
  /// the series' correction) carry rounding errors.
  std::pair<Value *, Value *> logExt(Value *x) {
    const double ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10;
    auto [ef, f, c] = logParts(x);
    auto [s1, e1] = twoSum(b_.CreateFMul(ef, k(ln2Hi)), f);
    auto [s2, e2] = twoSum(s1, fma(ef, k(ln2Lo), c));
    return {s2, b_.CreateFAdd(e1, e2)};
  }
  /// a + b and its exact rounding error (Knuth's two-sum).
  std::pair<Value *, Value *> twoSum(Value *a, Value *b) {
    Value *s = b_.CreateFAdd(a, b);
    Value *bv = b_.CreateFSub(s, a);
    Value *av = b_.CreateFSub(s, bv);
    return {s, b_.CreateFAdd(b_.CreateFSub(a, av), b_.CreateFSub(b, bv))};
  }

  /// x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)): e (as a double),
  /// f, and c = log(1 + f) - f.
  std::tuple<Value *, Value *, Value *> logParts(Value *x) {
    // Subnormals scaled into the normal range first.
    Value *tiny = b_.CreateFCmpOLT(x, k(2.2250738585072014e-308));
    Value *xs = sel(tiny, b_.CreateFMul(x, k(18014398509481984.0)), x); // 2^54
    Value *eAdj = sel(tiny, ki(-54), ki(0));
    Value *bits = b_.CreateBitCast(xs, i64_);
    Value *e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, ki(52)), ki(0x7ff)), ki(1023));
    Value *mbits =
        b_.CreateOr(b_.CreateAnd(bits, ki((int64_t(1) << 52) - 1)), ki(int64_t(1023) << 52));
    Value *m = b_.CreateBitCast(mbits, f64_);
    Value *big = b_.CreateFCmpOGT(m, k(1.4142135623730951));
    m = sel(big, b_.CreateFMul(m, k(0.5)), m);
    e = b_.CreateAdd(b_.CreateAdd(e, b_.CreateZExt(big, i64_)), eAdj);
    Value *f = b_.CreateFSub(m, k(1.0));
    Value *s = b_.CreateFDiv(f, b_.CreateFAdd(k(2.0), f));
    Value *z = b_.CreateFMul(s, s);
    std::vector<double> t = {0.0};
    for (int n = 1; n <= 11; ++n)
      t.push_back(1.0 / (2 * n + 1));
    Value *tz = poly(z, t); // z/3 + z^2/5 + ...
    Value *c = b_.CreateFSub(b_.CreateFMul(b_.CreateFMul(k(2.0), s), tz), b_.CreateFMul(s, f));
    return {b_.CreateSIToFP(e, f64_), f, c};
  }

  Value *logCore(Value *x) {
    const double ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10;
    auto [ef, f, c] = logParts(x);
    Value *logm = b_.CreateFAdd(f, c);
    Value *y = b_.CreateFAdd(b_.CreateFMul(ef, k(ln2Hi)), fma(ef, k(ln2Lo), logm));
    y = sel(b_.CreateFCmpOEQ(x, k(INFINITY)), x, y);
    y = sel(b_.CreateFCmpOEQ(x, k(0.0)), k(-INFINITY), y);
    return sel(b_.CreateFCmpULT(x, k(0.0)), k(NAN), y); // negative or NaN
  }
  Value *logBody(const std::vector<Value *> &a) { return logCore(a[0]); }

  // --- sin, cos -------------------------------------------------------------
  // r, and k mod 4 as an i64.
  std::pair<Value *, Value *> reduceHalfPi(Value *x) {
    const double p1 = 1.5707963267948966, p2 = 6.123233995736766e-17, p3 = -1.4973849048591698e-33;
    Value *kf = un(llvm::Intrinsic::rint, b_.CreateFMul(x, k(0.63661977236758134)));
    Value *nk = b_.CreateFNeg(kf);
    Value *r = fma(nk, k(p1), x);
    r = fma(nk, k(p2), r);
    r = fma(nk, k(p3), r);
    // k mod 4 from k's low bits (k is below 2^63 wherever the result means
    // anything; fptosi of a larger k gives some value, harmlessly).
    Value *q = b_.CreateAnd(b_.CreateFPToSI(kf, i64_), ki(3));
    return {r, q};
  }
  Value *sinPoly(Value *r) {
    std::vector<double> c; // sin r = r + r z S(z)
    double f = 1;
    for (int n = 1; n <= 9; ++n) {
      f *= double(2 * n) * double(2 * n + 1);
      c.push_back((n % 2 ? -1.0 : 1.0) / f);
    }
    Value *z = b_.CreateFMul(r, r);
    return fma(b_.CreateFMul(r, z), poly(z, c), r);
  }
  Value *cosPoly(Value *r) {
    std::vector<double> c = {1.0}; // cos r = 1 + z C(z)
    double f = 1;
    for (int n = 1; n <= 9; ++n) {
      f *= double(2 * n - 1) * double(2 * n);
      c.push_back((n % 2 ? -1.0 : 1.0) / f);
    }
    Value *z = b_.CreateFMul(r, r);
    return poly(z, c);
  }
  Value *sinCos(Value *x, bool isSin) {
    auto [r, q] = reduceHalfPi(x);
    Value *s = sinPoly(r), *co = cosPoly(r);
    if (!isSin)
      q = b_.CreateAnd(b_.CreateAdd(q, ki(1)), ki(3)); // cos x = sin(x + pi/2)
    Value *v = sel(b_.CreateICmpEQ(b_.CreateAnd(q, ki(1)), ki(0)), s, co);
    v = sel(b_.CreateICmpUGE(q, ki(2)), b_.CreateFNeg(v), v);
    return sel(b_.CreateFCmpUEQ(fabs(x), k(INFINITY)), k(NAN), v);
  }
  Value *sinBody(const std::vector<Value *> &a) { return sinCos(a[0], true); }
  Value *cosBody(const std::vector<Value *> &a) { return sinCos(a[0], false); }

  // --- pow ----------------------------------------------------------------
  Value *powBody(const std::vector<Value *> &a) {
    Value *x = a[0], *y = a[1];
    Value *ax = fabs(x), *ay = fabs(y);
    // y log|x| in double-double (hi + lo) for a positive finite |x|; the
    // plain log (with its zeros, infinities and NaN) otherwise.
    Value *l = logCore(ax);
    auto [lh, ll] = logExt(ax);
    Value *regular = b_.CreateAnd(b_.CreateFCmpOGT(ax, k(0.0)), b_.CreateFCmpONE(ax, k(INFINITY)));
    lh = sel(regular, lh, l);
    ll = sel(regular, ll, k(0.0));
    Value *hi = b_.CreateFMul(y, lh);
    Value *lo = b_.CreateFAdd(fma(y, lh, b_.CreateFNeg(hi)), b_.CreateFMul(y, ll));
    lo = sel(b_.CreateFCmpONE(fabs(hi), k(INFINITY)), lo,
             k(0.0)); // also false for NaN
    Value *r = expCore(hi, lo);
    Value *yInf = b_.CreateFCmpOEQ(ay, k(INFINITY));
    Value *yInt = b_.CreateOr(b_.CreateFCmpOEQ(un(llvm::Intrinsic::floor, y), y), yInf);
    // y odd: an integer below 2^53 whose half is not an integer.
    Value *half = b_.CreateFMul(y, k(0.5));
    Value *yOdd = b_.CreateAnd(b_.CreateAnd(yInt, b_.CreateFCmpOLT(ay, k(9007199254740992.0))),
                               b_.CreateFCmpONE(un(llvm::Intrinsic::floor, half), half));
    Value *neg = b_.CreateFCmpOLT(x, k(0.0));
    Value *negZero = b_.CreateAnd(b_.CreateFCmpOEQ(x, k(0.0)),
                                  b_.CreateICmpSLT(b_.CreateBitCast(x, i64_), ki(0)));
    r = sel(b_.CreateAnd(b_.CreateOr(neg, negZero), yOdd), b_.CreateFNeg(r), r);
    r = sel(b_.CreateAnd(b_.CreateAnd(neg, b_.CreateFCmpONE(ax, k(INFINITY))), b_.CreateNot(yInt)),
            k(NAN), r);
    // |x| = 1 with an infinite y (0 * inf in the formula) gives 1.
    r = sel(b_.CreateAnd(b_.CreateFCmpOEQ(ax, k(1.0)), yInf), k(1.0), r);
    r = sel(b_.CreateOr(isNaN(x), isNaN(y)), k(NAN), r);
    r = sel(b_.CreateFCmpOEQ(x, k(1.0)), k(1.0), r);
    return sel(b_.CreateFCmpOEQ(y, k(0.0)), k(1.0), r);
  }

  // --- erf ----------------------------------------------------------------
  /// e^(-x^2), x^2 split exactly so that its rounding does not count.
  Value *expNegSquare(Value *x) {
    Value *hi = b_.CreateFMul(x, x);
    Value *lo = fma(x, x, b_.CreateFNeg(hi));
    Value *e = expCore(b_.CreateFNeg(hi));
    return fma(b_.CreateFNeg(e), lo, e);
  }
  Value *erfBody(const std::vector<Value *> &a) {
    Value *x = a[0];
    Value *ax = fabs(x);
    const double twoOverSqrtPi = 1.1283791670955126, oneOverSqrtPi = 0.5641895835477563;
    // Series (for ax < 2.5; evaluated on min(ax, 2.5) to stay finite).
    Value *xs = b_.CreateIntrinsic(llvm::Intrinsic::minnum, {f64_}, {ax, k(2.5)});
    Value *twoX2 = b_.CreateFMul(k(2.0), b_.CreateFMul(xs, xs));
    Value *term = xs, *sum = xs;
    for (int n = 0; n < 40; ++n) {
      term = b_.CreateFDiv(b_.CreateFMul(term, twoX2), k(double(2 * n + 3)));
      sum = b_.CreateFAdd(sum, term);
    }
    Value *series = b_.CreateFMul(b_.CreateFMul(k(twoOverSqrtPi), expNegSquare(xs)), sum);
    // Continued fraction of erfc (for 2.5 <= ax < 6; on max(ax, 2.5)).
    Value *xc = b_.CreateIntrinsic(llvm::Intrinsic::maxnum, {f64_}, {ax, k(2.5)});
    Value *t = xc;
    for (int n = 40; n >= 1; --n)
      t = b_.CreateFAdd(xc, b_.CreateFDiv(k(n / 2.0), t));
    Value *erfc = b_.CreateFDiv(b_.CreateFMul(k(oneOverSqrtPi), expNegSquare(xc)), t);
    Value *big = b_.CreateFSub(k(1.0), erfc);
    Value *v = sel(b_.CreateFCmpOLT(ax, k(2.5)), series, big);
    v = sel(b_.CreateFCmpOGE(ax, k(6.0)), k(1.0), v);
    v = b_.CreateIntrinsic(llvm::Intrinsic::copysign, {f64_}, {v, x});
    return sel(isNaN(x), x, v);
  }

  // --- tanh ---------------------------------------------------------------
  Value *expm1Core(Value *y) {
    std::vector<double> c; // y (1 + y/2 + y^2/6 + ...)
    double f = 1;
    for (int i = 1; i <= 17; ++i) {
      f *= i;
      c.push_back(1.0 / f);
    }
    Value *small = b_.CreateFMul(y, poly(y, c));
    Value *large = b_.CreateFSub(expCore(y), k(1.0));
    return sel(b_.CreateFCmpOLT(fabs(y), k(0.5)), small, large);
  }
  Value *tanhBody(const std::vector<Value *> &a) {
    Value *x = a[0];
    Value *ax = fabs(x);
    Value *t = expm1Core(b_.CreateFMul(k(2.0), ax));
    Value *v = b_.CreateFDiv(t, b_.CreateFAdd(t, k(2.0)));
    v = sel(b_.CreateFCmpOGT(ax, k(22.0)), k(1.0), v);
    v = b_.CreateIntrinsic(llvm::Intrinsic::copysign, {f64_}, {v, x});
    return sel(isNaN(x), x, v);
  }

  llvm::Module &m_;
  llvm::LLVMContext &c_;
  llvm::IRBuilder<> b_;
  llvm::GlobalValue::LinkageTypes linkage_;
  llvm::Type *f64_, *i64_;
};

} // namespace

const std::vector<std::string> &gpuMathFunctions() {
  static const std::vector<std::string> names = {"exp",  "expf", "log",  "logf", "sin",
                                                 "sinf", "cos",  "cosf", "pow",  "powf",
                                                 "erf",  "erff", "tanh", "tanhf"};
  return names;
}

bool defineGpuMath(llvm::Module &m, std::string &error, llvm::GlobalValue::LinkageTypes linkage) {
  MathEmitter e(m, linkage);
  std::vector<llvm::Function *> declared;
  for (llvm::Function &f : m)
    if (f.isDeclaration() && !f.isIntrinsic())
      declared.push_back(&f);
  for (llvm::Function *f : declared) {
    std::string name = f->getName().str();
    // OpenCL built-ins (mangled names) stay for the OpenCL compiler.
    if (name.rfind("_Z", 0) == 0)
      continue;
    // "erf" is a double function and "erff" its float form.
    bool known = false, isFloat = false;
    for (const char *base : {"exp", "log", "sin", "cos", "pow", "erf", "tanh"}) {
      if (name == base)
        known = true;
      else if (name == std::string(base) + "f")
        known = isFloat = true;
    }
    if (!known) {
      error = "the GPU code calls '" + name + "', which mdl's GPU math library does not have";
      return false;
    }
    llvm::Function *def = isFloat ? e.f32Function(name) : e.f64Function(name);
    if (!def || def->getFunctionType() != f->getFunctionType()) {
      error = "mdl's GPU '" + name + "' does not match the call's type";
      return false;
    }
    f->replaceAllUsesWith(def);
    f->eraseFromParent();
  }
  return true;
}

} // namespace mdl::backend::hip
