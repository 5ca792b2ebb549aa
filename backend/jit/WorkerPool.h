// Internal to the JIT: the threads that run fused loops and matrix products.
//
// One process-wide pool of worker threads (as many as OpenMP would use, the
// caller included). A parallel job is a number of tasks taken in turn by the
// caller and the workers. Idle workers spin briefly (about 30 us, enough
// for the next kernel of the same call) and then sleep: on a shared machine
// a thread that spins on takes the core its partner needs, which is what
// libgomp's default waiting does (see docs/jit.md). Inside a task, OpenMP
// code (the GEMM library, a CPU kernel) runs on one thread.
#pragma once

#include <cstdint>

namespace mdl::backend::jit {

class WorkerPool {
public:
  /// The pool, created on first use with omp_get_max_threads() threads.
  static WorkerPool &get();

  /// Threads that run tasks, the caller included.
  int size() const { return threads_; }

  /// Runs task(ctx, i) for every i in [0, tasks) and returns when all are
  /// done. A job started from inside a task runs on the calling thread.
  using Task = void (*)(void *ctx, int64_t i);
  void run(int64_t tasks, Task task, void *ctx);

  struct State;

private:
  explicit WorkerPool(int threads);
  int threads_;
  State *state_;
};

} // namespace mdl::backend::jit
