// The worker pool (see WorkerPool.h).
//
// A job is published through one 64-bit ticket: the job's number in the
// high half, the next unclaimed task in the low half. Its fields (task,
// context, count, schedule) are written while the ticket is closed (no task
// can be claimed) and read before a claim that compare-and-swaps the ticket,
// so a claim that succeeds saw the fields of its own job (every access is
// sequentially consistent; the ticket never repeats). The caller waits for
// the job's tasks to be done, not for the workers: a worker that wakes up
// after the caller took every task of a dynamic job finds nothing to claim
// and touches nothing, so a worker whose core is busy elsewhere never holds
// the caller up. Waiting is a short spin, then a condition variable; the
// `sleeping` and `callerSleeping` counters decide who must be notified, so
// a wake-up is never lost and no system call is made while everyone is
// awake.
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

/// The low half of a closed ticket: no task can be claimed.
constexpr uint64_t kClosed = 0xffffffffu;

uint32_t jobOf(uint64_t ticket) { return uint32_t(ticket >> 32); }
uint64_t taskOf(uint64_t ticket) { return ticket & 0xffffffffu; }

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
  std::atomic<uint64_t> ticket{0};
  std::atomic<Task> task{nullptr};
  std::atomic<void *> ctx{nullptr};
  std::atomic<int64_t> tasks{0};
  std::atomic<bool> fixed{false}; // static schedule
  std::atomic<int64_t> finished{0};
  std::atomic<int> sleeping{0};
  std::atomic<bool> callerSleeping{false};
  int threads = 1;
  bool started = false;

  void finish(int64_t n) {
    if (finished.fetch_add(1) + 1 == n && callerSleeping.load()) {
      std::lock_guard<std::mutex> lock(m);
      done.notify_one();
    }
  }

  /// Takes part in the job published as ticket `t`: this thread's tasks of
  /// a static job, or tasks claimed one at a time from a dynamic one.
  void work(int self, uint64_t t) {
    uint32_t job = jobOf(t);
    for (;;) {
      if (taskOf(t) == kClosed)
        return;
      Task f = task.load();
      void *c = ctx.load();
      int64_t n = tasks.load();
      if (fixed.load()) {
        // A static job waits for this thread's tasks, so it stays published
        // while they run; the fields read are its own if the ticket has not
        // changed since.
        if (self >= n || ticket.load() != t)
          return;
        for (int64_t i = self; i < n; i += threads) {
          f(c, i);
          finish(n);
        }
        return;
      }
      if (int64_t(taskOf(t)) >= n)
        return;
      if (ticket.compare_exchange_strong(t, t + 1)) {
        f(c, int64_t(taskOf(t)));
        finish(n);
        ++t;
        continue;
      }
      // `t` is now the current ticket: another thread claimed the task, or
      // the job is over (closed, or another one published, which the
      // worker's loop picks up).
      if (jobOf(t) != job)
        return;
    }
  }

  void worker(int self) {
    omp_set_num_threads(1);
    inTask = true;
    uint32_t seen = 0;
    auto published = [&] { return jobOf(ticket.load()) != seen; };
    for (;;) {
      if (!spinFor(published)) {
        std::unique_lock<std::mutex> lock(m);
        sleeping.fetch_add(1);
        wake.wait(lock, published);
        sleeping.fetch_sub(1);
      }
      uint64_t t = ticket.load();
      seen = jobOf(t);
      work(self, t);
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
  if (threads_ <= 1 || tasks == 1 || inTask || uint64_t(tasks) >= kClosed) {
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
  // Close the previous job (every task of it is done), set the fields,
  // publish.
  uint32_t job = jobOf(s.ticket.load());
  s.ticket.store(uint64_t(job) << 32 | kClosed);
  s.task.store(task);
  s.ctx.store(ctx);
  s.tasks.store(tasks);
  s.fixed.store(schedule == Schedule::Static);
  s.finished.store(0);
  if (++job == 0) // a worker that has seen nothing yet waits for job 0 to end
    job = 1;
  uint64_t published = uint64_t(job) << 32;
  s.ticket.store(published);
  if (s.sleeping.load() > 0) {
    std::lock_guard<std::mutex> lock(s.m);
    s.wake.notify_all();
  }
  {
    SingleThreadedOpenMP one;
    inTask = true;
    s.work(0, published);
    inTask = false;
  }
  auto over = [&] { return s.finished.load() == tasks; };
  if (!spinFor(over)) {
    std::unique_lock<std::mutex> lock(s.m);
    s.callerSleeping.store(true);
    s.done.wait(lock, over);
    s.callerSleeping.store(false);
  }
}

} // namespace mdl::backend::jit
