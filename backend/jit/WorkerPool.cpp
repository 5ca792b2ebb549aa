// The worker pool (see WorkerPool.h).
//
// A job is published by bumping `generation` (after its fields are set);
// every worker takes part in every job, so the caller can reuse the fields
// once `running` drops to zero. Waiting is a short spin, then a condition
// variable; the sequentially consistent counters (`sleeping`,
// `callerSleeping`) decide who must be notified, so a wake-up is never lost
// and no system call is made while everyone is awake.
#include "backend/jit/WorkerPool.h"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <immintrin.h>
#include <mutex>
#include <thread>
#include <vector>

namespace mdl::backend::jit {

namespace {

/// How long an idle thread spins before it sleeps.
constexpr std::chrono::microseconds kSpin(50);

thread_local bool inTask = false;

/// Runs a scope with OpenMP (the GEMM library, CPU kernels) on one thread.
class SingleThreadedOpenMP {
public:
  SingleThreadedOpenMP() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreadedOpenMP() { omp_set_num_threads(saved_); }

private:
  int saved_;
};

/// Spins until pred() holds or kSpin passes; false if it never held.
template <typename Pred> bool spinFor(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred())
      return true;
    _mm_pause();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline)
      return false;
  }
}

} // namespace

struct WorkerPool::State {
  std::mutex m;
  std::condition_variable wake, done;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> sleeping{0};
  std::atomic<bool> callerSleeping{false};
  std::atomic<int> running{0};
  std::atomic<int64_t> next{0};
  Task task = nullptr;
  void *ctx = nullptr;
  int64_t tasks = 0;
  bool fixed = false; // static schedule
  int threads = 1;
  bool started = false;

  void work(int self) {
    if (fixed) {
      for (int64_t i = self; i < tasks; i += threads)
        task(ctx, i);
      return;
    }
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < tasks;)
      task(ctx, i);
  }

  void worker(int self) {
    omp_set_num_threads(1);
    inTask = true;
    uint64_t seen = 0;
    for (;;) {
      if (!spinFor([&] { return generation.load() != seen; })) {
        std::unique_lock<std::mutex> lock(m);
        sleeping.fetch_add(1);
        wake.wait(lock, [&] { return generation.load() != seen; });
        sleeping.fetch_sub(1);
      }
      seen = generation.load();
      work(self);
      if (running.fetch_sub(1) == 1 && callerSleeping.load()) {
        std::lock_guard<std::mutex> lock(m);
        done.notify_one();
      }
    }
  }
};

WorkerPool::WorkerPool(int threads) : threads_(threads), state_(new State) {}

WorkerPool &WorkerPool::get() {
  // Never destroyed: the workers sleep on its state until the process ends.
  static WorkerPool *pool = new WorkerPool(std::max(1, omp_get_max_threads()));
  return *pool;
}

void WorkerPool::run(int64_t tasks, Task task, void *ctx, Schedule schedule) {
  if (tasks <= 0)
    return;
  if (threads_ <= 1 || tasks == 1 || inTask) {
    SingleThreadedOpenMP one;
    for (int64_t i = 0; i < tasks; ++i)
      task(ctx, i);
    return;
  }
  State &s = *state_;
  if (!s.started) {
    s.started = true;
    s.threads = threads_;
    for (int t = 1; t < threads_; ++t)
      std::thread([&s, t] { s.worker(t); }).detach();
  }
  s.task = task;
  s.ctx = ctx;
  s.tasks = tasks;
  s.fixed = schedule == Schedule::Static;
  s.next.store(0, std::memory_order_relaxed);
  s.running.store(threads_ - 1);
  s.generation.fetch_add(1);
  if (s.sleeping.load() > 0) {
    std::lock_guard<std::mutex> lock(s.m);
    s.wake.notify_all();
  }
  {
    SingleThreadedOpenMP one;
    inTask = true;
    s.work(0);
    inTask = false;
  }
  if (!spinFor([&] { return s.running.load() == 0; })) {
    std::unique_lock<std::mutex> lock(s.m);
    s.callerSleeping.store(true);
    s.done.wait(lock, [&] { return s.running.load() == 0; });
    s.callerSleeping.store(false);
  }
}

} // namespace mdl::backend::jit
