// The run-time support of JIT-compiled code (see Runtime.h).
//
// Threads: everything runs on one OpenMP (libgomp) team. oneDNN's sgemm
// threads through the same OpenMP runtime and runs single-threaded when
// called inside a parallel region; OpenBLAS is told to use one thread, and
// its products are split among the OpenMP threads here, so two thread pools
// never compete for the cores (the trap BENCHMARKING.md describes).
#include "backend/jit/Runtime.h"
#include "backend/cpu/KernelSupport.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

extern "C" void openblas_set_num_threads(int);

namespace mdl::backend::jit {

using namespace ir;

int32_t RuntimeContext::fail(const std::string &code, const Location &loc,
                             const std::string &msg) {
  diags->error(code, loc, msg);
  return 1;
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

void singleThreadedBlas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

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

// A product using the OpenMP threads: oneDNN threads itself; OpenBLAS (and
// a single row) is split along the longer side of C here.
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
  bool selfThreaded = std::is_same_v<T, float> && M > 1 && gemmChoice() != "openblas";
  int threads = omp_in_parallel() || M * N * K < kGemmParallel ? 1 : omp_get_max_threads();
  if (selfThreaded || threads <= 1) {
    gemmOne(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  bool byRows = M >= N;
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t len = byRows ? M : N, lo = len * t / nt, hi = len * (t + 1) / nt;
    if (hi > lo) {
      if (byRows)
        gemmOne(ta, tb, hi - lo, N, K, A + lo * (ta ? 1 : lda), lda, B, ldb, C + lo * ldc, ldc);
      else
        gemmOne(ta, tb, M, hi - lo, K, A, lda, B + lo * (tb ? ldb : 1), ldb, C + lo, ldc);
    }
  }
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
  // Many products: one per thread at a time; few: each one threaded.
  bool perProduct = count >= 2 * omp_get_max_threads() && !omp_in_parallel() &&
                    count * M * N * K >= kGemmParallel;
#pragma omp parallel for if (perProduct) schedule(static)
  for (int64_t n = 0; n < count; ++n)
    gemm(ta, tb, M, N, K, a + at[size_t(n)][0], lda, b + at[size_t(n)][1], ldb,
         c + at[size_t(n)][2], ldc);
}

// "LINE:COL: message" from a device, located in the segment's file.
Location errorLocation(const std::string &msg, const Location &fallback, std::string &rest) {
  unsigned line = 0, col = 0;
  int used = 0;
  if (std::sscanf(msg.c_str(), "%u:%u: %n", &line, &col, &used) == 2 && used > 0) {
    rest = msg.substr(size_t(used));
    Location l = fallback;
    l.line = line;
    l.col = col;
    l.len = 1;
    return l;
  }
  rest = msg;
  return fallback;
}

Tensor wrap(const TensorType &t, void *p) {
  return Tensor(t, std::make_shared<Buffer>(p, size_t(t.byteSize()), nullptr));
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

void startGemmWarmup() {
  if (gemmChoice() != "dnnl")
    return;
  static std::once_flag once;
  std::call_once(once, [] {
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

void setGemmLibrary(const std::string &name) { gemmChoice() = name; }
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

int32_t mdl_rt_matmul(RuntimeContext *, const int64_t *desc, const void *a, const void *b,
                      void *c) {
  mdl::backend::jit::waitForWarmup();
  mdl::backend::jit::singleThreadedBlas();
  if (desc[0] == 0)
    mdl::backend::jit::matmul(desc, static_cast<const float *>(a), static_cast<const float *>(b),
                              static_cast<float *>(c));
  else
    mdl::backend::jit::matmul(desc, static_cast<const double *>(a),
                              static_cast<const double *>(b), static_cast<double *>(c));
  return 0;
}

void mdl_rt_parallel_for(mdl_rt_body body, void *env, int64_t n) {
  int threads = omp_get_max_threads();
  if (threads <= 1 || n <= 1 || omp_in_parallel()) {
    body(env, 0, n);
    return;
  }
  if (n < threads)
    threads = int(n);
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    if (hi > lo)
      body(env, lo, hi);
  }
}

int32_t mdl_rt_copy(RuntimeContext *ctx, int32_t dstSpace, void *dst, int32_t srcSpace,
                    const void *src, int64_t bytes) {
  if (bytes <= 0 || dst == src)
    return 0;
  bool dstHost = ctx->hostSpace(dstSpace), srcHost = ctx->hostSpace(srcSpace);
  auto name = [&](int d) { return ctx->module->devices[size_t(d)].name; };
  if (dstHost && srcHost) {
    mdl::backend::cpu::copyBytes(dst, src, size_t(bytes));
    return 0;
  }
  if (dstHost) {
    auto &rt = ctx->devices->runtime(srcSpace);
    if (rt.iface->copy_out(rt.dev, dst, src, uint64_t(bytes)) != 0)
      return ctx->fail("E0403", {}, "reading from '" + name(srcSpace) +
                                        "' failed: " + rt.iface->last_error(rt.dev));
    return 0;
  }
  auto &to = ctx->devices->runtime(dstSpace);
  std::unique_ptr<char[]> staging;
  if (!srcHost) {
    auto &from = ctx->devices->runtime(srcSpace);
    staging.reset(new (std::nothrow) char[size_t(bytes)]);
    if (!staging)
      return ctx->fail("E0404", {}, "out of host memory staging a copy between devices");
    if (from.iface->copy_out(from.dev, staging.get(), src, uint64_t(bytes)) != 0)
      return ctx->fail("E0403", {}, "reading from '" + name(srcSpace) +
                                        "' failed: " + from.iface->last_error(from.dev));
    src = staging.get();
  }
  if (to.iface->copy_in(to.dev, dst, src, uint64_t(bytes)) != 0)
    return ctx->fail("E0403", {}, "copying to '" + name(dstSpace) +
                                      "' failed: " + to.iface->last_error(to.dev));
  return 0;
}

void mdl_rt_strided_copy(const int64_t *desc, void *dst, const void *src) {
  int64_t elem = desc[0], rank = desc[1];
  std::vector<int64_t> dims(desc + 2, desc + 2 + rank), strides(desc + 2 + rank,
                                                                  desc + 2 + 2 * rank);
  mdl::backend::cpu::stridedCopy(size_t(elem), dims, dst,
                                 mdl::backend::cpu::rowMajorStrides(dims), 0, src, strides, 0);
}

int32_t mdl_rt_segment(RuntimeContext *ctx, SegmentHandle *seg, void *const *ins,
                       void *const *outs) {
  auto &rt = ctx->devices->runtime(seg->device);
  if (rt.iface->run(rt.dev, seg->segment, ins, outs) != 0) {
    std::string rest;
    mdl::ir::Location at =
        mdl::backend::jit::errorLocation(rt.iface->last_error(rt.dev), seg->op->loc, rest);
    return ctx->fail("E0405", at, rest);
  }
  return 0;
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
      if (mdl_rt_copy(ctx, -1, h.raw(), v->device, values[i], int64_t(h.byteSize())) != 0)
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
