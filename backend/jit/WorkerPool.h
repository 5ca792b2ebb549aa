// Internal to the JIT: the threads that run fused loops and matrix products.
//
// One process-wide pool of worker threads (as many as OpenMP would use, the
// caller included). A parallel job is a number of tasks taken in turn by the
// caller and the workers; the caller waits for the tasks, never for a
// worker that has not taken one (a worker whose core is busy with another
// process arrives late and finds the job done). Idle workers spin briefly (about 50 us, enough
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
  /// done. Dynamic: each thread takes the next task when it is free (for
  /// many small tasks; the caller may end up running them all); static:
  /// thread t runs tasks t, t + size(), ... (for one large task per thread,
  /// which a thread still waking up must not leave to the others: the
  /// caller waits for it). A job started from inside a task runs on the
  /// calling thread.
  using Task = void (*)(void *ctx, int64_t i);
  enum class Schedule { Dynamic, Static };
  void run(int64_t tasks, Task task, void *ctx, Schedule schedule = Schedule::Dynamic);

  struct State;

private:
  explicit WorkerPool(int threads);
  int threads_;
  State *state_;
};

} // namespace mdl::backend::jit
