// The machine's bf16 matrix-product rate, as oneDNN reaches it: the limit
// the real-model benchmarks (bench/real_models_vit.py) divide counted FLOPs
// by.
//
//   bf16_rate [N]     (default 2048)
//
// One N x N x N product of bf16 matrices into bf16 with f32 accumulation,
// the weights in oneDNN's own blocked layout (reordered once), on all of
// OpenMP's threads, timed for about half a second after a warm-up, the best
// of three runs. Prints one JSON line:
// {"gflops": ..., "threads": ..., "n": ..., "impl": ...}.
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

double rate(int64_t n, int threads, std::string &impl) {
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  dnnl::memory::desc a({n, n}, dt::bf16, tag::ab), bPlain({n, n}, dt::bf16, tag::ab),
      bAny({n, n}, dt::bf16, tag::any), c({n, n}, dt::bf16, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, bAny, c), eng);
  impl = pd.impl_info_str();
  dnnl::matmul prim(pd);
  dnnl::memory am(a, eng), bp(bPlain, eng), bm(pd.weights_desc(), eng), cm(c, eng);
  // bf16 1.0 and 0.5: values do not change the time, NaNs would not either.
  std::memset(am.get_data_handle(), 0x3f, a.get_size());
  std::memset(bp.get_data_handle(), 0x3f, bPlain.get_size());
  dnnl::reorder(bp, bm).execute(s, bp, bm);
  s.wait();
  auto run = [&] {
    prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
  };
  for (int i = 0; i < 3; ++i)
    run();
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    int calls = 0;
    double sec = 0;
    while (sec < 0.5 || calls < 3) {
      run();
      ++calls;
      sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    best = std::max(best, 2.0 * double(n) * double(n) * double(n) * calls / sec / 1e9);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  if (n <= 0 || n > 16384) {
    std::fprintf(stderr, "bf16_rate: N must be in 1..16384\n");
    return 2;
  }
  int threads = omp_get_max_threads();
  std::string impl;
  try {
    double all = rate(n, threads, impl);
    std::printf("{\"gflops\": %.1f, \"threads\": %d, \"n\": %lld, \"impl\": \"%s\"}\n", all,
                threads, (long long)n, impl.c_str());
  } catch (const dnnl::error &e) {
    std::fprintf(stderr, "bf16_rate: oneDNN has no bf16 product here: %s\n", e.what());
    return 1;
  }
  return 0;
}
