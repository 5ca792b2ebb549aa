// The run-time support of JIT-compiled code (see Runtime.h).
//
// Threads: fused loops and matrix products run on the JIT's worker pool
// (WorkerPool.h). The GEMM libraries run single-threaded inside its tasks
// (OpenMP set to one thread there, OpenBLAS told to use one thread), and
// products are split among the workers here, so no two thread pools
// compete for the cores (the trap BENCHMARKING.md describes) and no thread
// spins for long on a shared machine.
#include "backend/jit/Runtime.h"
#include "backend/runtime/Interrupt.h"
#include "backend/cpu/KernelSupport.h"
#include "backend/cpu/Kernels.h"
#include "backend/jit/WorkerPool.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace mdl::backend::jit {

using namespace ir;

int32_t RuntimeContext::fail(const std::string &code, const Location &loc,
                             const std::string &msg) {
  diags->error(code, loc, msg);
  return 1;
}

bool RuntimeContext::inGlobal(const void *p) const {
  const char *c = static_cast<const char *>(p);
  auto it = std::upper_bound(globalRanges.begin(), globalRanges.end(), c,
                             [](const char *x, const auto &r) { return x < r.first; });
  return it != globalRanges.begin() && c < std::prev(it)->second;
}

bool RuntimeContext::hostSpace(int space) const {
  return space < 0 || !devices || !devices->isOpen(space) ||
         devices->runtime(space).iface->host_memory;
}

namespace {

std::string &gemmChoice() {
  static std::string choice = [] {
    const char *env = std::getenv("MDL_GEMM");
    return std::string(env && *env ? env : "dnnl");
  }();
  return choice;
}

/// Multiply-adds below which a product stays on one thread.
constexpr int64_t kGemmParallel = int64_t(1) << 17;

// One row-major product C[M,N] = op(A) op(B), on the calling thread (or on
// oneDNN's threads when `threaded` and the library is oneDNN).
void gemmOne(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc) {
  if (M == 1) {
    // A single row: y = x op(B), a matrix-vector product (OpenBLAS's and
    // oneDNN's one-row gemm are several times slower).
    if (!tb)
      cblas_sgemv(CblasRowMajor, CblasTrans, int(K), int(N), 1.f, B, int(ldb), A,
                  ta ? int(lda) : 1, 0.f, C, 1);
    else
      cblas_sgemv(CblasRowMajor, CblasNoTrans, int(N), int(K), 1.f, B, int(ldb), A,
                  ta ? int(lda) : 1, 0.f, C, 1);
    return;
  }
  if (gemmChoice() == "openblas") {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                int(M), int(N), int(K), 1.f, A, int(lda), B, int(ldb), 0.f, C, int(ldc));
    return;
  }
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
}

void gemmOne(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double *A, int64_t lda,
             const double *B, int64_t ldb, double *C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              int(M), int(N), int(K), 1.0, A, int(lda), B, int(ldb), 0.0, C, int(ldc));
}

// A product on the worker pool: C is cut into one block per thread along
// its longer side (columns in multiples of 64; a single row, a
// matrix-vector product, by columns), each block one single-threaded
// library call. Blocks are taken in turn:
// when a worker is late (its core busy with another process), the caller
// computes its block too instead of waiting for it.
template <typename T> struct GemmJob {
  bool ta, tb, byRows;
  int64_t M, N, K, lda, ldb, ldc, parts;
  const T *A, *B;
  T *C;
};

template <typename T> void gemmPart(void *p, int64_t t) {
  const GemmJob<T> &j = *static_cast<const GemmJob<T> *>(p);
  int64_t len = j.byRows ? j.M : j.N, align = j.byRows ? 1 : 64;
  auto cut = [&](int64_t k) {
    return k == j.parts ? len : std::min(len, (len * k / j.parts + align - 1) / align * align);
  };
  int64_t lo = cut(t), hi = cut(t + 1);
  if (hi <= lo)
    return;
  if (j.byRows)
    gemmOne(j.ta, j.tb, hi - lo, j.N, j.K, j.A + lo * (j.ta ? 1 : j.lda), j.lda, j.B, j.ldb,
            j.C + lo * j.ldc, j.ldc);
  else
    gemmOne(j.ta, j.tb, j.M, hi - lo, j.K, j.A, j.lda, j.B + lo * (j.tb ? j.ldb : 1), j.ldb,
            j.C + lo, j.ldc);
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T *A, int64_t lda,
          const T *B, int64_t ldb, T *C, int64_t ldc) {
  if (M == 0 || N == 0)
    return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      std::memset(C + i * ldc, 0, size_t(N) * sizeof(T));
    return;
  }
  WorkerPool &pool = WorkerPool::get();
  GemmJob<T> job{ta, tb, M > 1 && M >= N, M, N, K, lda, ldb, ldc, 1, A, B, C};
  if (M * N * K >= kGemmParallel)
    job.parts = pool.size();
  pool.run(job.parts, gemmPart<T>, &job);
}

template <typename T> struct BatchJob {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  const T *a, *b;
  T *c;
  const std::vector<std::array<int64_t, 3>> *at;
};

template <typename T> void batchPart(void *p, int64_t n) {
  const BatchJob<T> &j = *static_cast<const BatchJob<T> *>(p);
  const std::array<int64_t, 3> &o = (*j.at)[size_t(n)];
  gemmOne(j.ta, j.tb, j.M, j.N, j.K, j.a + o[0], j.lda, j.b + o[1], j.ldb, j.c + o[2], j.ldc);
}

template <typename T> void matmul(const int64_t *d, const T *a, const T *b, T *c) {
  int64_t rank = d[1];
  bool ta = d[2], tb = d[3];
  int64_t M = d[4], N = d[5], K = d[6], lda = d[7], ldb = d[8], ldc = d[9];
  const int64_t *batch = d + 10, *as = batch + rank, *bs = as + rank, *cs = bs + rank;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= batch[i];
  if (count == 0)
    return;
  // A stack of lhs row blocks times one rhs: a single taller product.
  bool fold = !ta && count > 1;
  int64_t expect = M * lda;
  for (int64_t i = rank; fold && i-- > 0;) {
    if (batch[i] == 1)
      continue;
    fold = bs[i] == 0 && as[i] == expect && cs[i] == M * N * (expect / (M * lda));
    expect *= batch[i];
  }
  if (fold || count == 1) {
    gemm(ta, tb, M * count, N, K, a, lda, b, ldb, c, ldc);
    return;
  }
  std::vector<std::array<int64_t, 3>> at(size_t(count), {0, 0, 0});
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t ao = 0, bo = 0, co = 0;
    for (int64_t i = 0; i < rank; ++i) {
      ao += idx[size_t(i)] * as[i];
      bo += idx[size_t(i)] * bs[i];
      co += idx[size_t(i)] * cs[i];
    }
    at[size_t(n)] = {ao, bo, co};
    for (int64_t i = rank; i-- > 0;) {
      if (++idx[size_t(i)] < batch[i])
        break;
      idx[size_t(i)] = 0;
    }
  }
  // Many products: one per thread at a time; few: each one split.
  WorkerPool &pool = WorkerPool::get();
  if (count >= pool.size() && count * M * N * K >= kGemmParallel) {
    BatchJob<T> job{ta, tb, M, N, K, lda, ldb, ldc, a, b, c, &at};
    pool.run(count, batchPart<T>, &job);
    return;
  }
  for (int64_t n = 0; n < count; ++n)
    gemm(ta, tb, M, N, K, a + at[size_t(n)][0], lda, b + at[size_t(n)][1], ldb,
         c + at[size_t(n)][2], ldc);
}

// oneDNN generates its GEMM kernels on first use (tens of milliseconds):
// a background thread does that while LLVM compiles, and the first matrix
// product waits for it.
std::mutex warmMutex;
std::condition_variable warmDone;
bool warmRunning = false;
std::atomic<bool> warmPending{false};

void waitForWarmup() {
  if (!warmPending.load(std::memory_order_acquire))
    return;
  std::unique_lock<std::mutex> lock(warmMutex);
  warmDone.wait(lock, [] { return !warmRunning; });
  warmPending.store(false, std::memory_order_release);
}

} // namespace

Tensor wrap(const TensorType &t, void *p) {
  return Tensor(t, std::make_shared<Buffer>(p, size_t(t.byteSize()), nullptr));
}

void startGemmWarmup() {
  if (gemmChoice() != "dnnl")
    return;
  static std::once_flag once;
  std::call_once(once, [] {
    // oneDNN marks every call for Intel's tracing tools (ITT) unless told
    // not to: measurable on small products. It reads this on first use.
    setenv("DNNL_ITT_TASK_LEVEL", "0", 0);
    {
      std::lock_guard<std::mutex> lock(warmMutex);
      warmRunning = true;
    }
    warmPending.store(true, std::memory_order_release);
    std::thread([] {
      omp_set_num_threads(1); // no second OpenMP team for this thread
      std::vector<float> a(64 * 64, 1.f), c(64 * 64);
      for (char ta : {'N', 'T'})
        for (char tb : {'N', 'T'})
          dnnl_sgemm(ta, tb, 64, 64, 64, 1.f, a.data(), 64, a.data(), 64, 0.f, c.data(), 64);
      std::lock_guard<std::mutex> lock(warmMutex);
      warmRunning = false;
      warmDone.notify_all();
    }).detach();
  });
}

void finishGemmWarmup() { waitForWarmup(); }

void setGemmLibrary(const std::string &name) { gemmChoice() = name; }

void loopPart(void *p, int64_t i) {
  const LoopJob &j = *static_cast<const LoopJob *>(p);
  j.body(j.env, i * j.chunk, std::min(j.n, (i + 1) * j.chunk));
}
const std::string &gemmLibrary() { return gemmChoice(); }

} // namespace mdl::backend::jit

using mdl::backend::Tensor;
using mdl::backend::jit::RuntimeContext;
using mdl::backend::jit::SegmentHandle;

extern "C" {

int32_t mdl_rt_kernel(RuntimeContext *ctx, const mdl::ir::Operation *op, void *const *ins,
                      void *const *outs) {
  std::vector<Tensor> in, out;
  in.reserve(op->operands.size());
  for (size_t i = 0; i < op->operands.size(); ++i)
    in.push_back(mdl::backend::jit::wrap(op->operands[i]->type, ins[i]));
  for (size_t i = 0; i < op->results.size(); ++i)
    out.push_back(mdl::backend::jit::wrap(op->results[i]->type, outs[i]));
  mdl::backend::cpu::FunctionCaller caller = ctx->call;
  if (auto err = mdl::backend::cpu::runKernel(*op, in, out, &caller))
    return ctx->fail("E0405", op->loc, *err);
  return 0;
}

int32_t mdl_rt_matmul(RuntimeContext *ctx, const int64_t *desc, const void *a, const void *b,
                      void *c) {
  mdl::backend::jit::waitForWarmup();
  mdl::backend::cpu::keepBlasOnCallingThread();
  if (desc[0] == mdl::backend::jit::kMatmulF32)
    mdl::backend::jit::matmul(desc, static_cast<const float *>(a), static_cast<const float *>(b),
                              static_cast<float *>(c));
  else if (desc[0] == mdl::backend::jit::kMatmulF64)
    mdl::backend::jit::matmul(desc, static_cast<const double *>(a),
                              static_cast<const double *>(b), static_cast<double *>(c));
  else
    mdl::backend::jit::halfMatmul(ctx, desc, a, b, c);
  return 0;
}

void mdl_rt_parallel_for(mdl_rt_body body, void *env, int64_t n) {
  mdl::backend::jit::WorkerPool &pool = mdl::backend::jit::WorkerPool::get();
  if (pool.size() <= 1 || n <= 1) {
    body(env, 0, n);
    return;
  }
  // Chunks taken in turn rather than one share per thread: on a shared
  // machine a thread can lose its core for a while, and the others then
  // take over its work instead of waiting for it.
  int64_t parts = int64_t(pool.size()) * 4;
  int64_t chunk = std::max<int64_t>(1, (n + parts - 1) / parts);
  mdl::backend::jit::LoopJob job{body, env, n, chunk};
  pool.run((n + chunk - 1) / chunk, mdl::backend::jit::loopPart, &job);
}

namespace {
/// The typed buffer at `p` of type descriptor {dtype, rank, dims...}.
mdl_buffer typedBuffer(void *p, const int64_t *type) {
  return {p, int32_t(type[0]), int32_t(type[1]), type + 2, nullptr};
}

/// Bytes of the descriptor's tensor, without allocating (every copy of the
/// generated code passes here).
int64_t byteSizeOf(const int64_t *type) {
  int64_t n = int64_t(mdl::ir::dtypeSize(mdl::backend::dtypeOfAbi(int32_t(type[0]))));
  for (int64_t i = 0; i < type[1]; ++i)
    n *= type[2 + i];
  return n;
}
} // namespace

int32_t mdl_rt_copy(RuntimeContext *ctx, int32_t dstSpace, void *dst, int32_t srcSpace,
                    const void *src, const int64_t *type) {
  int64_t bytes = byteSizeOf(type);
  if (bytes <= 0 || (dst == src && dstSpace == srcSpace))
    return 0;
  bool dstHost = ctx->hostSpace(dstSpace), srcHost = ctx->hostSpace(srcSpace);
  auto name = [&](int d) { return ctx->module->devices[size_t(d)].name; };
  if (dstHost && srcHost) {
    struct Job {
      char *dst;
      const char *src;
      int64_t bytes, parts;
    } job{static_cast<char *>(dst), static_cast<const char *>(src), bytes, 1};
    mdl::backend::jit::WorkerPool &pool = mdl::backend::jit::WorkerPool::get();
    if (bytes >= (int64_t(1) << 20))
      job.parts = pool.size();
    pool.run(job.parts, [](void *p, int64_t t) {
      const Job &j = *static_cast<const Job *>(p);
      int64_t lo = j.bytes * t / j.parts, hi = j.bytes * (t + 1) / j.parts;
      std::memcpy(j.dst + lo, j.src + lo, size_t(hi - lo));
    }, &job);
    return 0;
  }
  if (dstHost) {
    auto &rt = ctx->devices->runtime(srcSpace);
    mdl_buffer from = typedBuffer(const_cast<void *>(src), type);
    if (rt.iface->copy_out(rt.dev, dst, &from) != 0)
      return ctx->fail("E0403", {}, "reading from '" + name(srcSpace) +
                                        "' failed: " + rt.iface->last_error(rt.dev));
    return 0;
  }
  auto &to = ctx->devices->runtime(dstSpace);
  mdl_buffer out = typedBuffer(dst, type);
  if (!srcHost && &ctx->devices->runtime(srcSpace) == &to) {
    mdl_buffer in = typedBuffer(const_cast<void *>(src), type);
    if (to.iface->copy(to.dev, &out, &in) != 0)
      return ctx->fail("E0403", {}, "copying within '" + name(dstSpace) +
                                        "' failed: " + to.iface->last_error(to.dev));
    return 0;
  }
  if (!srcHost && ctx->devices->runtime(srcSpace).iface == to.iface && to.iface->copy_peer) {
    // Two devices of one runtime (two GPUs): a peer copy, not through the host.
    auto &from = ctx->devices->runtime(srcSpace);
    mdl_buffer in = typedBuffer(const_cast<void *>(src), type);
    if (to.iface->copy_peer(to.dev, &out, from.dev, &in) != 0)
      return ctx->fail("E0403", {}, "copying from '" + name(srcSpace) + "' to '" +
                                        name(dstSpace) + "' failed: " + to.iface->last_error(to.dev));
    return 0;
  }
  std::unique_ptr<char[]> staging;
  if (!srcHost) {
    auto &from = ctx->devices->runtime(srcSpace);
    staging.reset(new (std::nothrow) char[size_t(bytes)]);
    if (!staging)
      return ctx->fail("E0404", {}, "out of host memory staging a copy between devices");
    mdl_buffer in = typedBuffer(const_cast<void *>(src), type);
    if (from.iface->copy_out(from.dev, staging.get(), &in) != 0)
      return ctx->fail("E0403", {}, "reading from '" + name(srcSpace) +
                                        "' failed: " + from.iface->last_error(from.dev));
    src = staging.get();
  }
  if (to.iface->copy_in(to.dev, &out, src) != 0)
    return ctx->fail("E0403", {}, "copying to '" + name(dstSpace) +
                                      "' failed: " + to.iface->last_error(to.dev));
  return 0;
}

void mdl_rt_strided_copy(const int64_t *desc, void *dst, const void *src) {
  using namespace mdl::backend;
  struct Job {
    int64_t elem;
    std::vector<int64_t> dims, dstStrides, srcStrides;
    int64_t parts;
    void *dst;
    const void *src;
  } job{desc[0], std::vector<int64_t>(desc + 2, desc + 2 + desc[1]), {},
        std::vector<int64_t>(desc + 2 + desc[1], desc + 2 + 2 * desc[1]), 1, dst, src};
  job.dstStrides = cpu::rowMajorStrides(job.dims);
  int64_t total = cpu::product(job.dims);
  jit::WorkerPool &pool = jit::WorkerPool::get();
  if (!job.dims.empty() && total >= (int64_t(1) << 15))
    job.parts = std::min<int64_t>(job.dims[0], pool.size() * 4);
  // Slabs of the first axis, one per task.
  pool.run(job.parts, [](void *p, int64_t t) {
    const Job &j = *static_cast<const Job *>(p);
    std::vector<int64_t> dims = j.dims;
    int64_t lo = 0, hi = 1;
    if (!dims.empty()) {
      lo = dims[0] * t / j.parts;
      hi = dims[0] * (t + 1) / j.parts;
      dims[0] = hi - lo;
    }
    if (hi > lo)
      cpu::stridedCopy(size_t(j.elem), dims, j.dst, j.dstStrides,
                       j.dims.empty() ? 0 : lo * j.dstStrides[0], j.src, j.srcStrides,
                       j.dims.empty() ? 0 : lo * j.srcStrides[0]);
  }, &job);
}

int32_t mdl_rt_segment(RuntimeContext *ctx, SegmentHandle *seg, void *const *ins,
                       void *const *outs) {
  mdl::backend::BufferList in, out;
  for (size_t i = 0; i < seg->op->operands.size(); ++i)
    in.add(ins[i], seg->op->operands[i]->type);
  for (size_t i = 0; i < seg->op->results.size(); ++i)
    out.add(outs[i], seg->op->results[i]->type);
  return seg->loaded.run(in, out, seg->op->loc, *ctx->diags) ? 0 : 1;
}

int32_t mdl_rt_interrupted(RuntimeContext *ctx, const mdl::ir::Operation *loop) {
  mdl::backend::reportInterrupted(*ctx->diags, loop->loc);
  return 1;
}

int32_t mdl_rt_print(RuntimeContext *ctx, const mdl::ir::Operation *op, void *const *values) {
  std::ostream &os = *ctx->out;
  for (size_t i = 0; i < op->operands.size(); ++i) {
    const mdl::ir::Value *v = op->operands[i];
    Tensor t = mdl::backend::jit::wrap(v->type, values[i]);
    if (!ctx->hostSpace(v->device)) {
      Tensor h = Tensor::empty(v->type);
      if (!h.valid())
        return ctx->fail("E0404", op->loc, "out of host memory reading " + v->type.str());
      std::vector<int64_t> type = mdl::backend::jit::typeDescriptor(v->type);
      if (mdl_rt_copy(ctx, -1, h.raw(), v->device, values[i], type.data()) != 0)
        return 1;
      t = h;
    }
    os << (i ? " " : "") << mdl::backend::formatTensor(t);
  }
  os << "\n";
  os.flush();
  return 0;
}

} // extern "C"
