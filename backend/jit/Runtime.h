// The run-time support that JIT-compiled code calls: a C ABI, resolved by
// ORC to these functions' addresses when the compiled objects are linked.
//
// Generated code keeps control flow, loops, scalars and fused element-wise
// loops to itself; it calls in here for what needs the rest of mdl: an
// operation it does not generate (through the CPU kernels), a matrix
// product (through the GEMM library), copies to and from devices, segments
// launched on devices, `print`, and running a loop body on OpenMP threads.
// Functions returning int32_t return 0 on success; on failure they have
// reported a diagnostic, and the generated code returns at once.
//
// Descriptors are arrays of int64 that generated code embeds as constants
// (so compiled objects hold no addresses and can be cached on disk):
//   matmul: dtype (MatmulCode), batchRank, transA, transB, M, N, K, lda,
//           ldb, ldc, then batch[batchRank], aStride[..], bStride[..],
//           cStride[..] (element strides of each batch axis; 0 broadcasts)
//   strided copy: elemBytes, rank, dims[rank], srcStrides[rank] (elements;
//           the destination is contiguous)
#pragma once

#include "backend/runtime/Devices.h"
#include "backend/runtime/Tensor.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mdl::backend::jit {

/// The element types of a matrix product (the first word of its
/// descriptor): operands, then result.
enum MatmulCode : int64_t {
  kMatmulF32 = 0,     // f32 x f32 -> f32
  kMatmulF64 = 1,     // f64 x f64 -> f64
  kMatmulBf16 = 2,    // bf16 x bf16 -> bf16 (f32 accumulation)
  kMatmulBf16F32 = 3, // bf16 x bf16 -> f32
  kMatmulF16 = 4,     // f16 x f16 -> f16 (f32 accumulation)
  kMatmulF16F32 = 5,  // f16 x f16 -> f32
};

/// The code of a product of `operand` matrices into `result`, or -1 when
/// the runtime has none (the CPU kernel runs it).
inline int64_t matmulCode(ir::DType operand, ir::DType result) {
  using ir::DType;
  if (operand == DType::F32 && result == DType::F32)
    return kMatmulF32;
  if (operand == DType::F64 && result == DType::F64)
    return kMatmulF64;
  if (operand == DType::BF16 && (result == DType::BF16 || result == DType::F32))
    return result == DType::BF16 ? kMatmulBf16 : kMatmulBf16F32;
  if (operand == DType::F16 && (result == DType::F16 || result == DType::F32))
    return result == DType::F16 ? kMatmulF16 : kMatmulF16F32;
  return -1;
}

struct RuntimeContext;
/// The products on halves (codes 2 to 5), on the worker pool (HalfGemm.cpp).
void halfMatmul(RuntimeContext *ctx, const int64_t *desc, const void *a, const void *b, void *c);
/// Constant rhs operands in a product library's own layout, made on first
/// use and kept for the run (HalfGemm.cpp).
struct PackedOperands;
std::shared_ptr<PackedOperands> makePackedOperands();

/// The descriptor mdl_rt_copy takes for a static type: {dtype (mdl_dtype),
/// rank, dims...}.
inline std::vector<int64_t> typeDescriptor(const ir::TensorType &t) {
  std::vector<int64_t> d = {int64_t(abiDType(t.dtype)), int64_t(t.rank())};
  for (int64_t n : t.sizes())
    d.push_back(n);
  return d;
}

/// What the run-time functions reach: one per JitRunner.
struct RuntimeContext {
  const ir::Module *module = nullptr;
  DeviceSet *devices = nullptr;
  ir::DiagnosticEngine *diags = nullptr;
  std::ostream *out = nullptr;
  /// Calls a compiled function on host tensors (the reducer of an HLO
  /// `reduce`, a comparator); an error message, or nullopt.
  std::function<std::optional<std::string>(const std::string &, const std::vector<Tensor> &,
                                           std::vector<Tensor> &)>
      call;

  /// Where the globals' bytes are (sorted [begin, end) ranges of host
  /// memory): they never change during a run, so a product whose operand
  /// lies there may keep it in its library's layout, in `packed` (freed
  /// with the context).
  std::vector<std::pair<const char *, const char *>> globalRanges;
  std::shared_ptr<PackedOperands> packed;
  /// Whether `p` points into a global.
  bool inGlobal(const void *p) const;

  /// Reports an error and returns 1 (what the run-time functions return).
  int32_t fail(const std::string &code, const ir::Location &loc, const std::string &msg);
  /// Whether data in memory space `space` (-1: the host) is host memory.
  bool hostSpace(int space) const;
};

/// A loop kernel split in chunks over the worker pool.
struct LoopJob {
  void (*body)(void *env, int64_t begin, int64_t end);
  void *env;
  int64_t n, chunk;
};
void loopPart(void *job, int64_t chunk);

/// A segment its device runs (one whose segments are not host code):
/// compiled by the device's compile-time half from `source` (the segment
/// without the JIT's fusions, which the artifact may point into) and loaded
/// on the device.
struct SegmentHandle {
  const ir::Operation *op = nullptr;
  std::unique_ptr<ir::Operation> source;
  LoadedSegment loaded;
};

/// Selects the GEMM library of mdl_rt_matmul: "dnnl" (the default) or
/// "openblas"; $MDL_GEMM overrides it (for benchmarks).
void setGemmLibrary(const std::string &name);
const std::string &gemmLibrary();
/// Has the GEMM library prepare its kernels on a background thread (the
/// first matrix product waits for it); once per process.
void startGemmWarmup();
/// Waits for the warm-up, if one is running (before the process may exit).
void finishGemmWarmup();

/// A tensor over `p`, which the caller owns (a kernel's operand or result).
Tensor wrap(const ir::TensorType &t, void *p);

} // namespace mdl::backend::jit

extern "C" {
using mdl_rt_body = void (*)(void *env, int64_t begin, int64_t end);

/// Runs the CPU kernel of operation `op` on contiguous buffers.
int32_t mdl_rt_kernel(mdl::backend::jit::RuntimeContext *ctx, const mdl::ir::Operation *op,
                      void *const *ins, void *const *outs);
/// c = a @ b as described by `desc` (see above).
int32_t mdl_rt_matmul(mdl::backend::jit::RuntimeContext *ctx, const int64_t *desc, const void *a,
                      const void *b, void *c);
/// Calls body(env, begin, end) over [0, n), split among the OpenMP threads.
void mdl_rt_parallel_for(mdl_rt_body body, void *env, int64_t n);
/// Copies a contiguous tensor between memory spaces (-1: the host; d:
/// device d). `type` is {dtype, rank, dims...}: devices take typed buffers
/// (a secret-sharing device encodes by element type). Within one device
/// that is not host memory the device copies it itself, never through the
/// host. A null `src` from the host is a value this process does not hold
/// (another party of a multi-process device gives it).
int32_t mdl_rt_copy(mdl::backend::jit::RuntimeContext *ctx, int32_t dstSpace, void *dst,
                    int32_t srcSpace, const void *src, const int64_t *type);
/// Copies a strided host view into a contiguous host buffer.
void mdl_rt_strided_copy(const int64_t *desc, void *dst, const void *src);
/// Runs a segment on its device.
int32_t mdl_rt_segment(mdl::backend::jit::RuntimeContext *ctx,
                       mdl::backend::jit::SegmentHandle *seg, void *const *ins,
                       void *const *outs);
/// Reports E0409 at `loop` (a `for` or `while` whose back-edge found the
/// interrupt flag set) and returns 1.
int32_t mdl_rt_interrupted(mdl::backend::jit::RuntimeContext *ctx, const mdl::ir::Operation *loop);
/// `print` of the operation's operands (contiguous, in their spaces).
int32_t mdl_rt_print(mdl::backend::jit::RuntimeContext *ctx, const mdl::ir::Operation *op,
                     void *const *values);
}
