// Pooling on the worker pool (see Pooling.h).
#include "backend/jit/Pooling.h"
#include "backend/cpu/Kernels.h"
#include "backend/jit/WorkerPool.h"

#include <algorithm>

using mdl::backend::Tensor;
using mdl::backend::jit::RuntimeContext;

namespace {

/// Output rows below which the pooling stays on the calling thread.
constexpr int64_t kParallelRows = 256;

struct Job {
  const mdl::ir::Operation *op;
  std::vector<Tensor> in, out;
  int64_t rows, chunk;
  std::vector<std::optional<std::string>> errors;
};

void part(void *p, int64_t k) {
  Job &j = *static_cast<Job *>(p);
  int64_t begin = k * j.chunk, end = std::min(j.rows, begin + j.chunk);
  j.errors[size_t(k)] = mdl::backend::cpu::reduceWindowRowRange(*j.op, j.in, j.out, begin, end);
}

} // namespace

int32_t mdl_rt_window(RuntimeContext *ctx, const mdl::ir::Operation *op, void *const *ins,
                      void *const *outs) {
  Job j{op, {}, {}, 0, 0, {}};
  for (size_t i = 0; i < op->operands.size(); ++i)
    j.in.push_back(mdl::backend::jit::wrap(op->operands[i]->type, ins[i]));
  for (size_t i = 0; i < op->results.size(); ++i)
    j.out.push_back(mdl::backend::jit::wrap(op->results[i]->type, outs[i]));
  j.rows = mdl::backend::cpu::reduceWindowRows(*op, j.in, j.out);
  mdl::backend::jit::WorkerPool &pool = mdl::backend::jit::WorkerPool::get();
  if (j.rows < kParallelRows || pool.size() <= 1)
    return mdl_rt_kernel(ctx, op, ins, outs);
  // Four chunks per thread, taken in turn (a thread that loses its core
  // leaves its chunks to the others).
  int64_t parts = int64_t(pool.size()) * 4;
  j.chunk = (j.rows + parts - 1) / parts;
  parts = (j.rows + j.chunk - 1) / j.chunk;
  j.errors.resize(size_t(parts));
  pool.run(parts, part, &j);
  for (auto &e : j.errors)
    if (e)
      return ctx->fail("E0405", op->loc, *e);
  return 0;
}
