// Internal to the JIT: LLVM IR generation for one function instance.
//
// HostCodegen.cpp emits the function itself: control flow as branches and
// loops, calls, copies, calls into the runtime (Runtime.h) for kernels,
// matrix products, prints and device segments. LoopCodegen.cpp emits one
// loop nest per `fusion` operation, ScalarCodegen.cpp the per-element
// semantics of each operation (the CPU kernels' semantics, exactly).
//
// Compiled code holds no addresses: it refers to everything that is
// per-run (weights, arenas, operation handles, the runtime context) by the
// external symbols named below, which the loader defines for each run.
#pragma once

#include "backend/jit/BufferPlan.h"
#include "ir/IR.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace mdl::backend::jit {

/// The compiled function `name`: int32 (void **args, void **results).
std::string functionSymbol(const std::string &name);
/// The data of global `name` in memory space `space` (-1: the host).
std::string globalSymbol(const std::string &name, int space);
/// The arena of function `fn` in memory space `space`.
std::string arenaSymbol(const std::string &fn, int space);
/// Handle `n` of function `fn` (FunctionPlan::handles).
std::string handleSymbol(const std::string &fn, int n);
/// The RuntimeContext.
inline const char *const kContextSymbol = "mdl.ctx";
/// The interrupt flag (an i32; backend/runtime/Interrupt.h), read at every
/// loop back-edge.
inline const char *const kInterruptSymbol = "mdl.interrupt";

/// Emits function `f` of `m` (planned as `plan`) into `mod`. Fusions in
/// `shared` call the kernel of that name, compiled in a kernel unit
/// (KernelUnits.h); the others are compiled into `mod`. Returns false with
/// `error` set when some operation could not be compiled (an internal
/// error).
bool emitFunction(llvm::Module &mod, const ir::Module &m, const ir::Function &f,
                  const FunctionPlan &plan,
                  const std::unordered_map<const ir::Operation *, std::string> &shared,
                  std::string &error);

/// What the code of an operation computed inline (InlineOps.h) needs from
/// the function being emitted.
class HostValues {
public:
  virtual ~HostValues() = default;
  /// The address of a value's first element (host memory).
  virtual llvm::Value *address(const ir::Value *v) = 0;
  /// An integer scalar as an i64 (sign-extended; u8 and bool zero-extended).
  virtual llvm::Value *index(const ir::Value *v) = 0;
  /// Copies `src` into `dest`'s buffer, unless the plan put both in one place.
  virtual void copy(const ir::Value *dest, const ir::Value *src) = 0;
  /// Calls the operation's CPU kernel; the function returns if it fails.
  virtual void kernel(const ir::Operation &op) = 0;
};

/// Emits an operation the host program computes itself (inlineOp(op) is
/// not null) at the builder's position (IndexCodegen.cpp).
void emitInlineOp(llvm::IRBuilder<> &b, const ir::Operation &op, HostValues &values);

/// A compiled fusion: kernel(env, begin, end) computes the points
/// [begin, end) of its first loop; env holds the input pointers, then the
/// output pointers.
struct FusionKernel {
  llvm::Function *fn = nullptr;
  int64_t range = 1;     // the extent of the first loop
  bool parallel = false; // worth splitting among threads
};

/// How a kernel is emitted: defined for its own module only, defined for
/// other modules to call (a kernel unit), or only declared (its caller's
/// module, which still learns its range and threading).
enum class KernelLinkage { Internal, Shared, Declaration };

/// Emits the loop nest of `fusion`, whose inputs are read with element
/// strides `inputStrides` (one list per operand, over its shape) and whose
/// outputs are contiguous. Null `fn` with `error` set on failure.
FusionKernel emitFusionKernel(llvm::Module &mod, const ir::Operation &fusion,
                              const std::vector<std::vector<int64_t>> &inputStrides,
                              const std::string &name, std::string &error,
                              KernelLinkage linkage = KernelLinkage::Internal);

/// A value of a fusion that the loop of phase `phase` (the reductions in
/// order, then the outputs) stores in row buffer `index` as it computes it,
/// and later phases load instead of computing it again (RowCache.cpp).
struct RowCacheSlot {
  int phase = 0, index = 0;
};
/// The values of `region` (a fusion over `dims` whose last `innerRank` axes
/// are reduced) worth keeping, with at most `budgetBytes` of row buffers.
std::unordered_map<const ir::Value *, RowCacheSlot>
planRowCache(const ir::Region &region, const std::vector<int64_t> &dims, int innerRank,
             int64_t budgetBytes);

/// The compute type of an element type (bool: i1; bf16 and f16: f32).
llvm::Type *computeType(llvm::LLVMContext &c, ir::DType t);
/// The in-memory type (bool: i8; bf16 and f16: i16).
llvm::Type *storageType(llvm::LLVMContext &c, ir::DType t);
/// Loads/stores one element, converting between storage and compute types
/// (halves are widened on load and rounded to nearest even on store).
llvm::Value *loadElement(llvm::IRBuilder<> &b, ir::DType t, llvm::Value *ptr);
void storeElement(llvm::IRBuilder<> &b, ir::DType t, llvm::Value *v, llvm::Value *ptr);
/// Whether `t` is bf16 or f16 (HalfCodegen.cpp).
bool isHalf(ir::DType t);
/// The f32 value of half bits (an i16 or a vector of them), exactly.
llvm::Value *halfToFloat(llvm::IRBuilder<> &b, ir::DType t, llvm::Value *bits);
/// The half bits (i16) of an f32 value, rounded to nearest even.
llvm::Value *floatToHalf(llvm::IRBuilder<> &b, ir::DType t, llvm::Value *x);
/// An f32 value rounded to the precision of half type `t` (still an f32).
llvm::Value *roundToHalf(llvm::IRBuilder<> &b, ir::DType t, llvm::Value *x);
/// A constant of compute type from element `i` of dense data.
llvm::Value *denseElement(llvm::IRBuilder<> &b, const ir::DenseData &d, int64_t i);
/// The value of a constant-like leaf (zeros, ones, full) as a compute-type
/// constant.
llvm::Value *creationValue(llvm::IRBuilder<> &b, const ir::Operation &op);

/// The element-wise semantics of `op` on compute-type operands `args`, from
/// the code generator registered for its kind. Null (and `error`) for an
/// operation without one.
llvm::Value *emitElementwise(llvm::IRBuilder<> &b, const ir::Operation &op,
                             const std::vector<llvm::Value *> &args, std::string &error);
/// The row reductions the loop emitter generates (sum, mean, max, min).
bool emitsRowReduction(ir::OpKind k);

/// What an emitter of fused loops knows at one point of a fusion's domain,
/// for emitFusedOperation.
struct FusedPoint {
  /// The point's element offset in a leaf's access (a constant's elements,
  /// arange's index).
  llvm::function_ref<llvm::Value *(const ir::Operation &leaf)> leafOffset;
  /// The address of a constant's elements (one of more than one element).
  llvm::function_ref<llvm::Value *(const ir::Operation &constant)> constantData;
  /// An operand's value at the point (the emitter's own evaluation, which
  /// remembers what it computed).
  llvm::function_ref<llvm::Value *(const ir::Value *, std::string &error)> operand;
  /// The row reductions' values, computed by earlier phases.
  const std::unordered_map<const ir::Operation *, llvm::Value *> &reduced;
};
/// The value at a point of an operation of a fused region, as every
/// emitter of fused loops computes it (the CPU's loops, the GPU's kernels):
/// a constant (a scalar inline, else an element loaded), zeros / ones /
/// full, arange, a row reduction computed earlier, or an element-wise
/// operation of its operands. Null with `error` set on failure.
llvm::Value *emitFusedOperation(llvm::IRBuilder<> &b, const ir::Operation &op,
                                const FusedPoint &point, std::string &error);

// How a row reduction accumulates, the same in the CPU's loops
// (LoopCodegen.cpp) and the GPU's kernels (backend/hip/codegen): float sums
// in f64, each reduction's identity, NaN propagation of float max / min
// (the CPU kernels' semantics), the mean's division.

/// How a float max / min lets a NaN through.
enum class NaNPropagation {
  /// A second accumulator (an i1) records whether a NaN was seen, so that
  /// the first can be a plain maxnum / minnum (one vectorizable
  /// instruction, without llvm.maximum's per-element NaN and signed-zero
  /// handling); the result is NaN when the flag is set.
  Flag,
  /// A compare and select per step, one accumulator: what a work-group's
  /// tree combines (llvm.maximum has no lowering in the LLVM 15 behind
  /// PoCL).
  Select,
};
/// The type reduction `r` accumulates in.
llvm::Type *accumulatorType(llvm::LLVMContext &c, const ir::Operation &r);
/// The accumulators' start: the identity (and, under Flag for a float max /
/// min, "no NaN seen").
std::vector<llvm::Value *> accumulatorInit(llvm::IRBuilder<> &b, const ir::Operation &r,
                                           NaNPropagation nans);
/// The accumulators after element `x` (compute type, or an accumulator
/// itself); `reassociate` lets float sums be reordered (vectorized).
std::vector<llvm::Value *> accumulate(llvm::IRBuilder<> &b, const ir::Operation &r,
                                      const std::vector<llvm::Value *> &acc, llvm::Value *x,
                                      NaNPropagation nans, bool reassociate);
/// The reduction's value (compute type) from its accumulators, over `count`
/// elements.
llvm::Value *accumulatorResult(llvm::IRBuilder<> &b, const ir::Operation &r,
                               const std::vector<llvm::Value *> &acc, NaNPropagation nans,
                               int64_t count);
/// The fusible kinds of the operation table that the JIT cannot generate
/// ("" when it can generate every one): an element-wise code generator for
/// each, or the loop emitter's reduction code for a row reduction. The
/// JIT's claim checked against the table.
std::string elementCodegenProblems();

} // namespace mdl::backend::jit
