// Direct kernels for conv2d and the pools, on NCHW views (see GpuKernels.h):
// one thread per output element, in a grid-stride loop.
//   conv2d      y[n, o, oh, ow] = sum over c, kh, kw of
//               x[n, c, oh sh - ph + kh, ow sw - pw + kw] w[o, c, kh, kw],
//               zero outside the input (the CPU kernel's zero padding),
//               accumulated with fused multiply-adds in the compute type
//               (the CPU's BLAS accumulates f32 in f32 too; bf16 and f16
//               are widened to f32 and the result rounded once, as the CPU
//               kernel does);
//   max_pool2d  the window's maximum, NaN propagating (the CPU's rule: a
//               NaN met stays);
//   avg_pool2d  the window's sum divided by its area.
// Pooling windows have no padding (halves: f32 between the loads and the
// rounding store). Inputs are read through their strides.
#include "backend/hip/codegen/GpuKernels.h"
#include "backend/jit/Codegen.h"

#include <llvm/IR/Intrinsics.h>

namespace mdl::backend::hip {

using llvm::Value;
namespace jit = mdl::backend::jit;

GpuLaunch emitConvKernel(GpuModule &gm, const View &out, const View &x, const View &w, int64_t sh,
                         int64_t sw, int64_t ph, int64_t pw) {
  KernelBuilder kb(gm, gm.kernelName("conv2d"), kBlock, {{true, "y"}, {true, "x"}, {true, "w"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::LLVMContext &c = kb.context();
  llvm::Type *t = jit::computeType(c, x.dtype), *st = jit::storageType(c, x.dtype);
  auto k64 = [&](int64_t v) { return b.getInt64(uint64_t(v)); };
  int64_t total = out.numElements(), groups = groupsFor(total);
  int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], KH = w.shape[2], KW = w.shape[3];
  Value *acc = kb.variable(t);
  kb.forEachPoint(total, groups, [&](Value *i) {
    // (n, o, oh, ow) of the output point.
    Value *ow = b.CreateURem(i, k64(out.shape[3]));
    Value *r = b.CreateUDiv(i, k64(out.shape[3]));
    Value *oh = b.CreateURem(r, k64(out.shape[2]));
    r = b.CreateUDiv(r, k64(out.shape[2]));
    Value *o = b.CreateURem(r, k64(out.shape[1]));
    Value *n = b.CreateUDiv(r, k64(out.shape[1]));
    b.CreateStore(llvm::Constant::getNullValue(t), acc);
    Value *xn = b.CreateMul(n, k64(x.strides[0])), *wo = b.CreateMul(o, k64(w.strides[0]));
    Value *ih0 = b.CreateSub(b.CreateMul(oh, k64(sh)), k64(ph));
    Value *iw0 = b.CreateSub(b.CreateMul(ow, k64(sw)), k64(pw));
    kb.loop(k64(0), k64(C), k64(1), [&](Value *ch) {
      Value *xc = b.CreateAdd(xn, b.CreateMul(ch, k64(x.strides[1])));
      Value *wc = b.CreateAdd(wo, b.CreateMul(ch, k64(w.strides[1])));
      kb.loop(k64(0), k64(KH), k64(1), [&](Value *kh) {
        Value *ih = b.CreateAdd(ih0, kh);
        Value *inH = b.CreateAnd(b.CreateICmpSGE(ih, k64(0)), b.CreateICmpSLT(ih, k64(H)));
        kb.loop(k64(0), k64(KW), k64(1), [&](Value *kw) {
          Value *iw = b.CreateAdd(iw0, kw);
          Value *in = b.CreateAnd(
              inH, b.CreateAnd(b.CreateICmpSGE(iw, k64(0)), b.CreateICmpSLT(iw, k64(W))));
          kb.ifThen(in, [&] {
            Value *xo = b.CreateAdd(xc, b.CreateAdd(b.CreateMul(ih, k64(x.strides[2])),
                                                    b.CreateMul(iw, k64(x.strides[3]))));
            Value *wofs = b.CreateAdd(wc, b.CreateAdd(b.CreateMul(kh, k64(w.strides[2])),
                                                      b.CreateMul(kw, k64(w.strides[3]))));
            Value *xv = jit::loadElement(b, x.dtype, kb.element(kb.param(1), st, xo));
            Value *wv = jit::loadElement(b, w.dtype, kb.element(kb.param(2), st, wofs));
            b.CreateStore(
                b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {xv, wv, b.CreateLoad(t, acc)}), acc);
          });
        });
      });
    });
    jit::storeElement(b, out.dtype, b.CreateLoad(t, acc), kb.element(kb.param(0), st, i));
  });
  return launchOf(kb.finish(), groups, {out.ref, x.ref, w.ref});
}

GpuLaunch emitPoolKernel(GpuModule &gm, bool isMax, const View &out, const View &x, int64_t kh,
                         int64_t kw, int64_t sh, int64_t sw) {
  KernelBuilder kb(gm, gm.kernelName(isMax ? "max_pool2d" : "avg_pool2d"), kBlock,
                   {{true, "y"}, {true, "x"}});
  llvm::IRBuilder<> &b = kb.b();
  llvm::LLVMContext &c = kb.context();
  llvm::Type *t = jit::computeType(c, x.dtype), *st = jit::storageType(c, x.dtype);
  auto k64 = [&](int64_t v) { return b.getInt64(uint64_t(v)); };
  int64_t total = out.numElements(), groups = groupsFor(total);
  Value *acc = kb.variable(t);
  kb.forEachPoint(total, groups, [&](Value *i) {
    Value *ow = b.CreateURem(i, k64(out.shape[3]));
    Value *r = b.CreateUDiv(i, k64(out.shape[3]));
    Value *oh = b.CreateURem(r, k64(out.shape[2]));
    r = b.CreateUDiv(r, k64(out.shape[2]));
    Value *ch = b.CreateURem(r, k64(out.shape[1]));
    Value *n = b.CreateUDiv(r, k64(out.shape[1]));
    Value *base = b.CreateAdd(
        b.CreateAdd(b.CreateMul(n, k64(x.strides[0])), b.CreateMul(ch, k64(x.strides[1]))),
        b.CreateAdd(b.CreateMul(b.CreateMul(oh, k64(sh)), k64(x.strides[2])),
                    b.CreateMul(b.CreateMul(ow, k64(sw)), k64(x.strides[3]))));
    b.CreateStore(isMax ? llvm::ConstantFP::getInfinity(t, true) : llvm::ConstantFP::get(t, 0.0),
                  acc);
    kb.loop(k64(0), k64(kh), k64(1), [&](Value *ki) {
      kb.loop(k64(0), k64(kw), k64(1), [&](Value *kj) {
        Value *off = b.CreateAdd(base, b.CreateAdd(b.CreateMul(ki, k64(x.strides[2])),
                                                   b.CreateMul(kj, k64(x.strides[3]))));
        Value *v = jit::loadElement(b, x.dtype, kb.element(kb.param(1), st, off));
        Value *a = b.CreateLoad(t, acc);
        Value *next;
        if (isMax) {
          // A NaN met stays; otherwise the larger value (or a NaN) replaces.
          Value *take = b.CreateOr(b.CreateFCmpOGT(v, a), b.CreateFCmpUNO(v, v));
          next = b.CreateSelect(b.CreateAnd(take, b.CreateFCmpORD(a, a)), v, a);
        } else {
          next = b.CreateFAdd(a, v);
        }
        b.CreateStore(next, acc);
      });
    });
    Value *res = b.CreateLoad(t, acc);
    if (!isMax)
      res = b.CreateFDiv(res, llvm::ConstantFP::get(t, double(kh * kw)));
    jit::storeElement(b, out.dtype, res, kb.element(kb.param(0), st, i));
  });
  return launchOf(kb.finish(), groups, {out.ref, x.ref});
}

} // namespace mdl::backend::hip
