// SGEMM throughput of the two libraries the JIT could call, on the shapes
// mdl's benchmarks use: square sizes 256..2048, the MLP layers (batch 64 and
// batch 1) and the transformer layer's projections and attention products.
//
// Three contenders per shape, registered one after another so that they
// interleave (run with --benchmark_enable_random_interleaving=true and
// repetitions, as bench/run_all.py does):
//   openblas     OpenBLAS with its own threads (2)
//   openblas_omp OpenBLAS told to use 1 thread, the rows split among the
//                OpenMP threads (what the interpreter's kernels do)
//   dnnl         oneDNN's dnnl_sgemm (threads from OpenMP)
// A single-row product (M == 1) also tries OpenBLAS's sgemv, which
// BENCHMARKING.md says is much faster than its one-row sgemm.
// Counters: GFLOP/s (2 M N K per call).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace {

struct Shape {
  const char *name;
  int64_t batch, M, N, K;
};

const Shape kShapes[] = {
    {"sq256", 1, 256, 256, 256},        {"sq512", 1, 512, 512, 512},
    {"sq1024", 1, 1024, 1024, 1024},    {"sq2048", 1, 2048, 2048, 2048},
    {"mlp64_l1", 1, 64, 1024, 784},     {"mlp64_l2", 1, 64, 1024, 1024},
    {"mlp64_l3", 1, 64, 10, 1024},      {"mlp1_l1", 1, 1, 1024, 784},
    {"mlp1_l2", 1, 1, 1024, 1024},      {"tf_qkv", 1, 1024, 768, 256},
    {"tf_out", 1, 1024, 256, 256},      {"tf_ffn1", 1, 1024, 1024, 256},
    {"tf_ffn2", 1, 1024, 256, 1024},    {"tf_scores", 32, 128, 128, 64},
    {"tf_context", 32, 128, 64, 128},
};

std::vector<float> randomMatrix(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = 12345;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1 << 24) - 0.5f;
  }
  return v;
}

enum class Lib { OpenBlas, OpenBlasOmp, Dnnl, OpenBlasGemv };

void oneProduct(Lib lib, const Shape &s, const float *A, const float *B, float *C) {
  int M = int(s.M), N = int(s.N), K = int(s.K);
  switch (lib) {
  case Lib::OpenBlas:
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, A, K, B, N, 0.f,
                C, N);
    break;
  case Lib::OpenBlasGemv:
    cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.f, B, N, A, 1, 0.f, C, 1);
    break;
  case Lib::Dnnl:
    dnnl_sgemm('N', 'N', M, N, K, 1.f, A, K, B, N, 0.f, C, N);
    break;
  case Lib::OpenBlasOmp: {
    bool byRows = M >= N;
#pragma omp parallel
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
      int len = byRows ? M : N, lo = len * t / nt, hi = len * (t + 1) / nt;
      if (hi > lo) {
        if (byRows)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, hi - lo, N, K, 1.f,
                      A + int64_t(lo) * K, K, B, N, 0.f, C + int64_t(lo) * N, N);
        else
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, hi - lo, K, 1.f, A, K,
                      B + lo, N, 0.f, C + lo, N);
      }
    }
    break;
  }
  }
}

void runShape(benchmark::State &st, Lib lib, Shape s) {
  openblas_set_num_threads(lib == Lib::OpenBlas || lib == Lib::OpenBlasGemv ? 2 : 1);
  std::vector<float> A = randomMatrix(s.batch * s.M * s.K), B = randomMatrix(s.batch * s.K * s.N),
                     C(size_t(s.batch * s.M * s.N));
  for (auto _ : st) {
    if (s.batch == 1) {
      oneProduct(lib, s, A.data(), B.data(), C.data());
    } else if (lib == Lib::OpenBlas) {
      for (int64_t b = 0; b < s.batch; ++b)
        oneProduct(lib, s, A.data() + b * s.M * s.K, B.data() + b * s.K * s.N,
                   C.data() + b * s.M * s.N);
    } else {
      // Batched: one product per thread at a time, each single-threaded.
      Lib inner = lib == Lib::OpenBlasOmp ? Lib::OpenBlas : lib;
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < s.batch; ++b)
        oneProduct(inner, s, A.data() + b * s.M * s.K, B.data() + b * s.K * s.N,
                   C.data() + b * s.M * s.N);
    }
    benchmark::ClobberMemory();
  }
  double flops = 2.0 * double(s.batch * s.M * s.N * s.K);
  st.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

int registerAll() {
  for (const Shape &s : kShapes) {
    std::string n = s.name;
    benchmark::RegisterBenchmark(("openblas/" + n).c_str(), runShape, Lib::OpenBlas, s)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("openblas_omp/" + n).c_str(), runShape, Lib::OpenBlasOmp, s)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("dnnl/" + n).c_str(), runShape, Lib::Dnnl, s)->UseRealTime();
    if (s.M == 1)
      benchmark::RegisterBenchmark(("openblas_gemv/" + n).c_str(), runShape, Lib::OpenBlasGemv,
                                   s)
          ->UseRealTime();
  }
  return 0;
}

const int kRegistered = registerAll();

} // namespace

BENCHMARK_MAIN();
