// mdl's own matrix-product kernel, the fallback of every Gemm step (a
// runtime with rocBLAS or cuBLAS may run the step there instead). It runs
// everywhere, PoCL included.
//
// Tiling: a work-group of 256 threads (16 x 16) computes a 64 x 64 tile of
// C, each thread a 4 x 4 block of it, rows ty + 16 i and columns tx + 16 j
// (interleaved, so that neighbouring threads read neighbouring words of
// work-group memory). K advances 16 at a time: the threads copy the 64 x 16
// slice of A and the 16 x 64 slice of B into work-group memory (4 elements
// each; zeros past the matrix edges), wait at a barrier, accumulate 16
// products per output from work-group memory, and wait again before the
// next slice overwrites it. A is stored k-major in work-group memory so
// both reads are conflict-free. Transposed operands are read in place
// (their strides), batches run along the grid's z axis with the
// descriptor's batch strides. Floats accumulate with fused multiply-adds in
// their compute type (bf16 and f16: widened to f32 as they are copied into
// work-group memory, rounded to nearest even once, when C is stored, as the
// JIT's and oneDNN's half products do); integers wrap.
//
// With an epilogue (a bias add and an activation after the product: a
// fusion whose only product input is C), each thread computes the fusion at
// its outputs' points from the accumulators and stores the fusion's
// results; C itself is never written. One kernel instead of two, and C
// never goes through memory.
#include "backend/hip/codegen/GpuKernels.h"
#include "backend/jit/Codegen.h"

#include <llvm/IR/Intrinsics.h>

namespace mdl::backend::hip {

using llvm::Value;
namespace jit = mdl::backend::jit;

namespace {
constexpr int64_t kTile = 64, kSlice = 16, kThreads = 16, kPer = 4;
} // namespace

bool emitGemmKernel(GpuModule &gm, const GpuGemm &g, ir::DType dtype, GpuLaunch &launch,
                    std::string &error, FusionEpilogue *epilogue, size_t replaced) {
  std::vector<KernelParam> params = {{true, "a"}, {true, "b"}, {true, "c"}};
  if (epilogue)
    params.insert(params.end(), epilogue->params().begin(), epilogue->params().end());
  KernelBuilder kb(gm, gm.kernelName(epilogue ? "gemm_epilogue" : "gemm"), kThreads * kThreads,
                   params);
  llvm::IRBuilder<> &b = kb.b();
  llvm::LLVMContext &c = kb.context();
  llvm::Type *t = jit::computeType(c, dtype);
  bool fl = ir::isFloat(dtype);
  auto k64 = [&](int64_t v) { return b.getInt64(uint64_t(v)); };
  int64_t tilesN = (g.n + kTile - 1) / kTile, tilesM = (g.m + kTile - 1) / kTile;
  Value *as = kb.localArray(t, uint64_t(kTile * kSlice), "a");
  Value *bs = kb.localArray(t, uint64_t(kTile * kSlice), "b");
  Value *acc[kPer][kPer];
  for (auto &row : acc)
    for (Value *&v : row)
      v = kb.variable(t);
  Value *zero = llvm::Constant::getNullValue(t);
  Value *tid = kb.localId();
  Value *tx = b.CreateURem(tid, k64(kThreads)), *ty = b.CreateUDiv(tid, k64(kThreads));
  // One work-group per (batch, tile) at a time, in a grid-stride loop: a
  // batch of any size fits the grid (CUDA's z axis stops at 65535).
  int64_t tiles = tilesN * tilesM, work = tiles * g.batch;
  bool ok = true;
  kb.forEachRow(work, std::min(work, kMaxGroups), [&](Value *w) {
    Value *tile = b.CreateURem(w, k64(tiles)), *batch = b.CreateUDiv(w, k64(tiles));
    Value *m0 = b.CreateMul(b.CreateUDiv(tile, k64(tilesN)), k64(kTile));
    Value *n0 = b.CreateMul(b.CreateURem(tile, k64(tilesN)), k64(kTile));
    Value *a0 = b.CreateMul(batch, k64(g.strideA)), *b0 = b.CreateMul(batch, k64(g.strideB)),
          *c0 = b.CreateMul(batch, k64(g.strideC));
    // Element strides of A (m, k) and B (k, n) as stored.
    int64_t sam = g.transA ? 1 : g.lda, sak = g.transA ? g.lda : 1;
    int64_t sbk = g.transB ? 1 : g.ldb, sbn = g.transB ? g.ldb : 1;
    for (auto &row : acc)
      for (Value *v : row)
        b.CreateStore(zero, v);
    llvm::Type *st = jit::storageType(c, dtype);
    auto loadOrZero = [&](Value *base, Value *off, Value *inside) -> Value * {
      // The address is formed only where it is inside the matrix.
      Value *safe = b.CreateSelect(inside, off, k64(0));
      Value *v = jit::loadElement(b, dtype, kb.element(base, st, safe));
      return b.CreateSelect(inside, v, zero);
    };
    kb.loop(k64(0), k64(g.k), k64(kSlice), [&](Value *k0) {
      for (int64_t r = 0; r < kTile * kSlice / (kThreads * kThreads); ++r) {
        Value *e = b.CreateAdd(tid, k64(r * kThreads * kThreads));
        // A: element (mm, kk) of the slice, stored at kk * 64 + mm.
        Value *kk = b.CreateURem(e, k64(kSlice)), *mm = b.CreateUDiv(e, k64(kSlice));
        Value *m = b.CreateAdd(m0, mm), *k = b.CreateAdd(k0, kk);
        Value *in = b.CreateAnd(b.CreateICmpSLT(m, k64(g.m)), b.CreateICmpSLT(k, k64(g.k)));
        Value *off =
            b.CreateAdd(a0, b.CreateAdd(b.CreateMul(m, k64(sam)), b.CreateMul(k, k64(sak))));
        b.CreateStore(loadOrZero(kb.param(0), off, in),
                      kb.element(as, t, b.CreateAdd(b.CreateMul(kk, k64(kTile)), mm)));
        // B: element (kk, nn), stored at kk * 64 + nn.
        Value *nn = b.CreateURem(e, k64(kTile)), *kb2 = b.CreateUDiv(e, k64(kTile));
        Value *n = b.CreateAdd(n0, nn), *kB = b.CreateAdd(k0, kb2);
        Value *inB = b.CreateAnd(b.CreateICmpSLT(n, k64(g.n)), b.CreateICmpSLT(kB, k64(g.k)));
        Value *offB =
            b.CreateAdd(b0, b.CreateAdd(b.CreateMul(kB, k64(sbk)), b.CreateMul(n, k64(sbn))));
        b.CreateStore(loadOrZero(kb.param(1), offB, inB),
                      kb.element(bs, t, b.CreateAdd(b.CreateMul(kb2, k64(kTile)), nn)));
      }
      kb.barrier();
      Value *sum[kPer][kPer];
      for (int i = 0; i < kPer; ++i)
        for (int j = 0; j < kPer; ++j)
          sum[i][j] = b.CreateLoad(t, acc[i][j]);
      for (int64_t kk = 0; kk < kSlice; ++kk) {
        Value *av[kPer], *bv[kPer];
        for (int i = 0; i < kPer; ++i) {
          av[i] =
              b.CreateLoad(t, kb.element(as, t, b.CreateAdd(k64(kk * kTile + i * kThreads), ty)));
          bv[i] =
              b.CreateLoad(t, kb.element(bs, t, b.CreateAdd(k64(kk * kTile + i * kThreads), tx)));
        }
        for (int i = 0; i < kPer; ++i)
          for (int j = 0; j < kPer; ++j)
            sum[i][j] = fl ? b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {av[i], bv[j], sum[i][j]})
                           : b.CreateAdd(b.CreateMul(av[i], bv[j]), sum[i][j]);
      }
      for (int i = 0; i < kPer; ++i)
        for (int j = 0; j < kPer; ++j)
          b.CreateStore(sum[i][j], acc[i][j]);
      kb.barrier();
    });
    for (int i = 0; i < kPer; ++i)
      for (int j = 0; j < kPer; ++j) {
        Value *m = b.CreateAdd(m0, b.CreateAdd(ty, k64(i * kThreads)));
        Value *n = b.CreateAdd(n0, b.CreateAdd(tx, k64(j * kThreads)));
        Value *in = b.CreateAnd(b.CreateICmpSLT(m, k64(g.m)), b.CreateICmpSLT(n, k64(g.n)));
        kb.ifThen(in, [&] {
          Value *off = b.CreateAdd(c0, b.CreateAdd(b.CreateMul(m, k64(g.ldc)), n));
          Value *v = b.CreateLoad(t, acc[i][j]);
          if (!epilogue) {
            jit::storeElement(b, dtype, v, kb.element(kb.param(2), st, off));
            return;
          }
          // C is dense (ldc = n, batches m n apart): its offset is the
          // epilogue's point. The value is C's as stored (a half rounded).
          if (jit::isHalf(dtype))
            v = jit::roundToHalf(b, dtype, v);
          ok = ok && epilogue->emitAt(kb, 3, off, replaced, v, error);
        });
      }
  });
  launch = launchOf(kb.finish(), std::min(work, kMaxGroups), {g.a, g.b, g.c});
  if (epilogue)
    launch.args.insert(launch.args.end(), epilogue->refs().begin(), epilogue->refs().end());
  return ok;
}

} // namespace mdl::backend::hip
