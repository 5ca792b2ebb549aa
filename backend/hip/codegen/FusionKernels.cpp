// GPU kernels of `fusion` operations, from the same fused-loop IR the CPU
// JIT compiles (ir/passes/FusionDomain.h) and with the JIT's per-element
// semantics (backend/jit/ScalarCodegen.cpp, linked, not copied):
// 1. The domain D and its accesses: every input view, dense constant,
//    arange and output is read or written at sum(index[a] * stride[a])
//    (stride 0 along broadcast axes). Axes of size 1 are dropped and
//    neighbours merged where every access allows it, never across the
//    outer / inner boundary (as the JIT's loops do).
// 2. Without reductions: one thread per point of D, in a grid-stride loop.
// 3. With reductions over the inner axes: one work-group per row (point of
//    the outer axes); a few long rows (a sum over a whole large tensor)
//    are cut into pieces, one work-group each, and a second kernel reduces
//    each row's partials (emitSplitRows). Per reduction, in order: each thread accumulates a
//    strided share of the row in a register (f32 sums in double, as the
//    CPU does), the shares meet in a tree in work-group memory (a barrier
//    per level), and every thread reads the result. Then thread 0 stores
//    the row outputs, and the threads store the full outputs over the row.
//    Values are computed where they are needed from the leaves, as in the
//    JIT (cheap ones recomputed per phase).
#include "backend/hip/codegen/GpuKernels.h"
#include "backend/cpu/KernelSupport.h"
#include "backend/jit/Codegen.h"
#include "ir/passes/FusionDomain.h"
#include "stdlib/Registry.h"

#include <llvm/IR/Intrinsics.h>

#include <unordered_map>

namespace mdl::backend::hip {

using namespace ir;
using llvm::Value;
namespace jit = mdl::backend::jit;

namespace {

/// Rows fewer than this are split over many work-groups when long enough
/// (a GPU runs thousands of work-groups at once; one per row would leave
/// it idle), pieces of at least kMinPiece elements (16 per thread).
constexpr int64_t kSplitRowsBelow = 256, kMinPiece = 16 * kBlock;


} // namespace

class FusionEmitter {
  friend class FusionEpilogue;

public:
  FusionEmitter(GpuModule &gm, const Operation &fusion, const std::vector<View> &inputs,
                const std::vector<View> &outputs, const ConstantSink &constants,
                const ScratchSink &scratch)
      : gm_(gm), fusion_(fusion), region_(*fusion.regions[0]), inputs_(inputs), outputs_(outputs),
        constants_(constants), scratch_(scratch) {}

  bool run(std::vector<GpuLaunch> &launches, std::string &error) {
    return prepare(error) && emit(launches, error);
  }

  /// The domain, the accesses, the parameters.
  bool prepare(std::string &error) {
    auto dom = passes::fusionDomain(fusion_);
    if (!dom) {
      error = "the fusion has no valid domain";
      return false;
    }
    dims_ = dom->dims;
    inner_ = dom->innerRank;
    hasRed_ = dom->hasReductions;
    return collectAccesses(*dom, error);
  }

  bool hasReductions() const { return hasRed_; }
  const std::vector<KernelParam> &params() const { return params_; }
  const std::vector<GpuRef> &refs() const { return refs_; }

  /// The fusion's outputs at point `index` of its domain, emitted into
  /// another kernel whose parameters from `first` on are params(); region
  /// argument `replaced` is `value` instead of a load.
  bool emitAt(KernelBuilder &kb, size_t first, Value *index, size_t replaced, Value *value,
              std::string &error) {
    kb_ = &kb;
    paramBase_ = first;
    replacedArg_ = region_.args.at(replaced).get();
    replacedValue_ = value;
    llvm::IRBuilder<> &b = kb.b();
    llvm::FastMathFlags saved = b.getFastMathFlags(), contract;
    contract.setAllowContract(true);
    b.setFastMathFlags(contract);
    bool ok = true;
    const Operation *y = stdlib::terminatorOf(region_);
    Ctx ctx{pointOffsets(b, index, fa_.dims, stridesOver(0, fa_.dims.size())), {}};
    for (size_t k = 0; k < y->operands.size() && ok; ++k)
      store(k, ctx, ok, error);
    b.setFastMathFlags(saved);
    kb_ = nullptr;
    paramBase_ = 0;
    replacedArg_ = nullptr;
    return ok;
  }

private:
  // The kernel's parameters (inputs, dense constants, outputs, from
  // paramBase_ on) and the accesses over the collapsed domain
  // (ir/passes/FusionDomain.h).
  bool collectAccesses(const passes::FusionDomain &dom, std::string &error) {
    const Operation *y = stdlib::terminatorOf(region_);
    if (region_.args.size() != inputs_.size()) {
      error = "a fusion's inputs do not match its region";
      return false;
    }
    if (y->operands.size() != outputs_.size()) {
      error = "a fusion's outputs do not match its region";
      return false;
    }
    std::vector<std::vector<int64_t>> inputStrides;
    for (const View &v : inputs_)
      inputStrides.push_back(v.strides);
    auto fa = passes::FusionAccesses::of(fusion_, dom, inputStrides, error);
    if (!fa)
      return false;
    for (size_t j = 0; j < inputs_.size(); ++j) {
      params_.push_back({true, "in" + std::to_string(j)});
      refs_.push_back(inputs_[j].ref);
    }
    for (auto &op : region_.ops) {
      if (op->kind == OpKind::Constant && op->results[0]->type.numElements() > 1) {
        const DenseData &d = op->attr("value")->asDense();
        constParam_[op.get()] = params_.size();
        params_.push_back({true, "const" + std::to_string(constParam_.size())});
        refs_.push_back(constants_(std::string(d.bytes.begin(), d.bytes.end())));
      }
    }
    for (size_t k = 0; k < outputs_.size(); ++k) {
      outParam_.push_back(params_.size());
      params_.push_back({true, "out" + std::to_string(k)});
      refs_.push_back(outputs_[k].ref);
    }
    fa->collapse();
    fa_ = std::move(*fa);
    return true;
  }

  // The strides of every access over collapsed axes [from, to).
  std::vector<std::vector<int64_t>> stridesOver(size_t from, size_t to) const {
    std::vector<std::vector<int64_t>> s;
    for (const auto &a : fa_.strides)
      s.emplace_back(a.begin() + long(from), a.begin() + long(to));
    return s;
  }
  int64_t extent(size_t from, size_t to) const {
    int64_t n = 1;
    for (size_t i = from; i < to; ++i)
      n *= fa_.dims[i];
    return n;
  }

  struct Ctx {
    std::vector<Value *> offsets;
    std::unordered_map<const ir::Value *, Value *> memo;
  };

  Value *elementPtr(size_t param, DType t, Value *off) {
    llvm::IRBuilder<> &b = kb_->b();
    return b.CreateGEP(jit::storageType(b.getContext(), t), kb_->param(paramBase_ + param), off);
  }

  Value *eval(const ir::Value *v, Ctx &ctx, std::string &error) {
    if (auto it = ctx.memo.find(v); it != ctx.memo.end())
      return it->second;
    llvm::IRBuilder<> &b = kb_->b();
    Value *r = nullptr;
    if (v == replacedArg_) {
      r = replacedValue_;
    } else if (!v->def) {
      unsigned j = v->index;
      r = jit::loadElement(b, v->type.dtype,
                           elementPtr(j, v->type.dtype, ctx.offsets[size_t(fa_.inputs[j])]));
    } else {
      auto leaf = [&](const Operation &l) { return ctx.offsets[size_t(fa_.leaves.at(&l))]; };
      auto data = [&](const Operation &c) { return kb_->param(paramBase_ + constParam_.at(&c)); };
      auto operand = [&](const ir::Value *o, std::string &e) { return eval(o, ctx, e); };
      r = jit::emitFusedOperation(b, *v->def, {leaf, data, operand, reduced_}, error);
      if (!r)
        return nullptr;
    }
    ctx.memo[v] = r;
    return r;
  }

  // --- reductions (the JIT's accumulation semantics) ----------------------
  llvm::Type *accType(const Operation &r) { return jit::accumulatorType(kb_->context(), r); }
  Value *accInit(const Operation &r) {
    return jit::accumulatorInit(kb_->b(), r, jit::NaNPropagation::Select)[0];
  }
  Value *accAdd(const Operation &r, Value *acc, Value *x) {
    return jit::accumulate(kb_->b(), r, {acc}, x, jit::NaNPropagation::Select,
                           /*reassociate=*/false)[0];
  }
  Value *accFinish(const Operation &r, Value *acc) {
    int64_t count = 1;
    for (size_t a = dims_.size() - size_t(inner_); a < dims_.size(); ++a)
      count *= dims_[a];
    return jit::accumulatorResult(kb_->b(), r, {acc}, jit::NaNPropagation::Select, count);
  }

  std::vector<Value *> add(const std::vector<Value *> &a, const std::vector<Value *> &c) {
    std::vector<Value *> out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      out[i] = kb_->b().CreateAdd(a[i], c[i]);
    return out;
  }

  void store(size_t k, Ctx &ctx, bool &ok, std::string &error) {
    const Operation *y = stdlib::terminatorOf(region_);
    ir::Value *v = y->operands[k];
    Value *x = eval(v, ctx, error);
    if (!x) {
      ok = false;
      return;
    }
    jit::storeElement(kb_->b(), v->type.dtype, x,
                      elementPtr(outParam_[k], v->type.dtype, ctx.offsets[size_t(fa_.outputs[k])]));
  }

  // The tree: each thread's `mine` meets the others' in work-group array
  // `sh` (a barrier per level); returns the total, which every thread reads
  // (after a last barrier, so that nobody writes `sh` again before all
  // have read it).
  Value *tree(const Operation &r, Value *mine, Value *sh) {
    llvm::IRBuilder<> &b = kb_->b();
    llvm::Type *at = accType(r);
    Value *tid = kb_->localId();
    b.CreateStore(mine, kb_->element(sh, at, tid));
    kb_->barrier();
    for (unsigned s = kBlock / 2; s > 0; s /= 2) {
      kb_->ifThen(b.CreateICmpULT(tid, b.getInt64(s)), [&] {
        Value *a = b.CreateLoad(at, kb_->element(sh, at, tid));
        Value *o = b.CreateLoad(at, kb_->element(sh, at, b.CreateAdd(tid, b.getInt64(s))));
        b.CreateStore(accAdd(r, a, o), kb_->element(sh, at, tid));
      });
      kb_->barrier();
    }
    Value *total = b.CreateLoad(at, kb_->element(sh, at, b.getInt64(0)));
    kb_->barrier();
    return total;
  }

  // Accumulates x over [from, to) of the row at `rowOffs` (stride kBlock
  // from from + tid) into the thread's accumulator; false on an error.
  bool accumulate(const Operation &r, Value *var, const std::vector<Value *> &rowOffs, Value *from,
                  Value *to, std::string &error) {
    llvm::IRBuilder<> &b = kb_->b();
    std::vector<int64_t> innerShape(fa_.dims.begin() + long(fa_.outer), fa_.dims.end());
    auto innerStrides = stridesOver(fa_.outer, fa_.outer + fa_.inner);
    bool ok = true;
    b.CreateStore(accInit(r), var);
    kb_->loop(b.CreateAdd(from, kb_->localId()), to, b.getInt64(kBlock), [&](Value *j) {
      Ctx ctx{add(rowOffs, pointOffsets(b, j, innerShape, innerStrides)), {}};
      Value *x = eval(r.operands[0], ctx, error);
      if (!x) {
        ok = false;
        return;
      }
      b.CreateStore(accAdd(r, b.CreateLoad(accType(r), var), x), var);
    });
    return ok;
  }

  // Thread 0 stores the row outputs, the threads the full outputs.
  bool storeRowOutputs(const std::vector<Value *> &rowOffs, std::string &error) {
    llvm::IRBuilder<> &b = kb_->b();
    std::vector<int64_t> innerShape(fa_.dims.begin() + long(fa_.outer), fa_.dims.end());
    auto innerStrides = stridesOver(fa_.outer, fa_.outer + fa_.inner);
    int64_t n = extent(fa_.outer, fa_.outer + fa_.inner);
    Value *tid = kb_->localId();
    bool ok = true, anyFull = false, anyRow = false;
    for (size_t k = 0; k < fa_.full.size(); ++k)
      (fa_.full[k] ? anyFull : anyRow) = true;
    if (anyRow)
      kb_->ifThen(b.CreateICmpEQ(tid, b.getInt64(0)), [&] {
        Ctx ctx{rowOffs, {}};
        for (size_t k = 0; k < fa_.full.size() && ok; ++k)
          if (!fa_.full[k])
            store(k, ctx, ok, error);
      });
    if (anyFull && ok)
      kb_->loop(tid, b.getInt64(uint64_t(n)), b.getInt64(kBlock), [&](Value *j) {
        Ctx ctx{add(rowOffs, pointOffsets(b, j, innerShape, innerStrides)), {}};
        for (size_t k = 0; k < fa_.full.size() && ok; ++k)
          if (fa_.full[k])
            store(k, ctx, ok, error);
      });
    return ok;
  }

  bool emit(std::vector<GpuLaunch> &launches, std::string &error) {
    llvm::FastMathFlags contract;
    contract.setAllowContract(true);
    if (!hasRed_)
      return emitPoints(contract, launches, error);
    if (int64_t parts = splitParts())
      return emitSplitRows(parts, contract, launches, error);
    return emitRows(contract, launches, error);
  }

  // Without reductions: one thread per point.
  bool emitPoints(llvm::FastMathFlags fmf, std::vector<GpuLaunch> &launches, std::string &error) {
    KernelBuilder kb(gm_, gm_.kernelName("fusion"), kBlock, params_);
    kb_ = &kb;
    llvm::IRBuilder<> &b = kb.b();
    b.setFastMathFlags(fmf);
    bool ok = true;
    const Operation *y = stdlib::terminatorOf(region_);
    int64_t total = extent(0, fa_.dims.size()), groups = groupsFor(total);
    auto strides = stridesOver(0, fa_.dims.size());
    std::vector<int64_t> shape(fa_.dims.begin(), fa_.dims.end());
    kb.forEachPoint(total, groups, [&](Value *i) {
      Ctx ctx{pointOffsets(b, i, shape, strides), {}};
      for (size_t k = 0; k < y->operands.size() && ok; ++k)
        store(k, ctx, ok, error);
    });
    return finishKernel(kb, groups, refs_, ok, launches);
  }

  // With reductions: one work-group per row.
  bool emitRows(llvm::FastMathFlags fmf, std::vector<GpuLaunch> &launches, std::string &error) {
    KernelBuilder kb(gm_, gm_.kernelName("rows"), kBlock, params_);
    kb_ = &kb;
    llvm::IRBuilder<> &b = kb.b();
    b.setFastMathFlags(fmf);
    bool ok = true;
    int64_t rows = extent(0, fa_.outer), n = extent(fa_.outer, fa_.outer + fa_.inner);
    int64_t groups = std::min<int64_t>(rows, kMaxGroups);
    std::vector<int64_t> outerShape(fa_.dims.begin(), fa_.dims.begin() + long(fa_.outer));
    auto outerStrides = stridesOver(0, fa_.outer);
    // One work-group array and one accumulator per reduction.
    std::unordered_map<const Operation *, Value *> shared, accVar;
    int nRed = 0;
    for (auto &op : region_.ops)
      if (stdlib::isRowReduction(op->kind)) {
        shared[op.get()] = kb.localArray(accType(*op), kBlock, "red" + std::to_string(nRed++));
        accVar[op.get()] = kb.variable(accType(*op));
      }
    kb.forEachRow(rows, groups, [&](Value *row) {
      reduced_.clear();
      std::vector<Value *> rowOffs = pointOffsets(b, row, outerShape, outerStrides);
      for (auto &opPtr : region_.ops) {
        const Operation &r = *opPtr;
        if (!stdlib::isRowReduction(r.kind) || !ok)
          continue;
        ok = accumulate(r, accVar[&r], rowOffs, b.getInt64(0), b.getInt64(uint64_t(n)), error);
        if (ok)
          reduced_[&r] = accFinish(r, tree(r, b.CreateLoad(accType(r), accVar[&r]), shared[&r]));
      }
      if (ok)
        ok = storeRowOutputs(rowOffs, error);
    });
    return finishKernel(kb, groups, refs_, ok, launches);
  }

  // --- reductions of a few long rows, over many work-groups ----------------
  // A row of n elements is cut into `parts` pieces: the first kernel gives
  // each (row, piece) a work-group, which reduces its piece (a tree) into
  // one partial per reduction in scratch; the second gives each row a
  // work-group, which reduces the row's partials (a tree), finishes the
  // reductions and stores the row outputs. Partials keep the accumulators'
  // types (f32 sums in double), and the pieces and their order are fixed by
  // the shape, so results do not depend on timing.

  /// Pieces per row, or 0 when the fusion is not split: rows fewer than a
  /// GPU has work-groups in flight, each long enough for pieces of at least
  /// kMinPiece elements; every reduction reads no other reduction and every
  /// output is a row output (the split computes no full outputs).
  int64_t splitParts() const {
    int64_t rows = extent(0, fa_.outer), n = extent(fa_.outer, fa_.outer + fa_.inner);
    if (rows >= kSplitRowsBelow || n < 2 * kMinPiece)
      return 0;
    for (bool f : fa_.full)
      if (f)
        return 0;
    for (auto &op : region_.ops)
      if (stdlib::isRowReduction(op->kind) && readsReduction(op->operands[0]))
        return 0;
    int64_t piece = std::max<int64_t>(kMinPiece, (n + kBlock - 1) / kBlock);
    return (n + piece - 1) / piece; // at most kBlock: the second tree has a slot each
  }

  bool readsReduction(const ir::Value *v) const {
    if (!v->def || v->def->parent != &region_)
      return false;
    if (stdlib::isRowReduction(v->def->kind))
      return true;
    for (const ir::Value *o : v->def->operands)
      if (readsReduction(o))
        return true;
    return false;
  }

  bool emitSplitRows(int64_t parts, llvm::FastMathFlags fmf, std::vector<GpuLaunch> &launches,
                     std::string &error) {
    int64_t rows = extent(0, fa_.outer), n = extent(fa_.outer, fa_.outer + fa_.inner);
    int64_t piece = (n + parts - 1) / parts;
    std::vector<int64_t> outerShape(fa_.dims.begin(), fa_.dims.begin() + long(fa_.outer));
    auto outerStrides = stridesOver(0, fa_.outer);
    std::vector<const Operation *> reds;
    for (auto &op : region_.ops)
      if (stdlib::isRowReduction(op->kind))
        reds.push_back(op.get());
    // The partials: one array of rows x parts accumulators per reduction,
    // 8 bytes an entry, in one scratch slot.
    uint64_t perRed = uint64_t(rows * parts) * 8;
    GpuRef partials = scratch_(perRed * reds.size());
    std::vector<KernelParam> params = params_;
    std::vector<GpuRef> refs = refs_;
    size_t firstPartial = params.size();
    for (size_t q = 0; q < reds.size(); ++q) {
      params.push_back({true, "part" + std::to_string(q)});
      GpuRef r = partials;
      r.offset += int64_t(q * perRed);
      refs.push_back(r);
    }
    bool ok = true;
    {
      KernelBuilder kb(gm_, gm_.kernelName("rows_part"), kBlock, params);
      kb_ = &kb;
      llvm::IRBuilder<> &b = kb.b();
      b.setFastMathFlags(fmf);
      std::vector<Value *> shared, vars;
      for (size_t q = 0; q < reds.size(); ++q) {
        shared.push_back(kb.localArray(accType(*reds[q]), kBlock, "red" + std::to_string(q)));
        vars.push_back(kb.variable(accType(*reds[q])));
      }
      // Work-group w: row w / parts, piece w % parts (a loop of one trip,
      // as the rows kernel's: PoCL wants barriers inside a loop).
      kb.forEachRow(rows * parts, rows * parts, [&](Value *w) {
        Value *row = b.CreateUDiv(w, b.getInt64(uint64_t(parts)));
        Value *k64n = b.getInt64(uint64_t(n));
        Value *from =
            b.CreateMul(b.CreateURem(w, b.getInt64(uint64_t(parts))), b.getInt64(uint64_t(piece)));
        Value *end = b.CreateAdd(from, b.getInt64(uint64_t(piece)));
        Value *to = b.CreateSelect(b.CreateICmpULT(end, k64n), end, k64n);
        std::vector<Value *> rowOffs = pointOffsets(b, row, outerShape, outerStrides);
        for (size_t q = 0; q < reds.size() && ok; ++q) {
          const Operation &r = *reds[q];
          ok = accumulate(r, vars[q], rowOffs, from, to, error);
          if (!ok)
            break;
          Value *total = tree(r, b.CreateLoad(accType(r), vars[q]), shared[q]);
          kb.ifThen(b.CreateICmpEQ(kb.localId(), b.getInt64(0)), [&] {
            b.CreateStore(total, kb.element(kb.param(firstPartial + q), accType(r), w));
          });
        }
      });
      if (!finishKernel(kb, rows * parts, refs, ok, launches))
        return false;
    }
    KernelBuilder kb(gm_, gm_.kernelName("rows"), kBlock, params);
    kb_ = &kb;
    llvm::IRBuilder<> &b = kb.b();
    b.setFastMathFlags(fmf);
    std::vector<Value *> shared;
    for (size_t q = 0; q < reds.size(); ++q)
      shared.push_back(kb.localArray(accType(*reds[q]), kBlock, "red" + std::to_string(q)));
    Value *tid = kb.localId();
    kb.forEachRow(rows, rows, [&](Value *row) {
      reduced_.clear();
      for (size_t q = 0; q < reds.size(); ++q) {
        const Operation &r = *reds[q];
        llvm::Type *at = accType(r);
        // Thread t takes partial t of the row (parts <= kBlock).
        Value *mine = accInit(r);
        Value *at0 = b.CreateAdd(b.CreateMul(row, b.getInt64(uint64_t(parts))), tid);
        Value *has = b.CreateICmpULT(tid, b.getInt64(uint64_t(parts)));
        Value *safe = b.CreateSelect(has, at0, b.getInt64(0));
        Value *part = b.CreateLoad(at, kb.element(kb.param(firstPartial + q), at, safe));
        mine = b.CreateSelect(has, part, mine);
        reduced_[&r] = accFinish(r, tree(r, mine, shared[q]));
      }
      std::vector<Value *> rowOffs = pointOffsets(b, row, outerShape, outerStrides);
      ok = storeRowOutputs(rowOffs, error);
    });
    return finishKernel(kb, rows, refs, ok, launches);
  }

  bool finishKernel(KernelBuilder &kb, int64_t groups, const std::vector<GpuRef> &refs, bool ok,
                    std::vector<GpuLaunch> &launches) {
    uint32_t index = kb.finish();
    kb_ = nullptr;
    if (!ok)
      return false;
    launches.push_back(launchOf(index, groups, refs));
    return true;
  }

  GpuModule &gm_;
  const Operation &fusion_;
  const Region &region_;
  const std::vector<View> &inputs_, &outputs_;
  const ConstantSink &constants_;
  const ScratchSink &scratch_;
  KernelBuilder *kb_ = nullptr;

  std::vector<int64_t> dims_;
  passes::FusionAccesses fa_; // collapsed: fa_.dims, fa_.strides per access
  int inner_ = 0;
  bool hasRed_ = false;
  std::vector<size_t> outParam_;
  std::unordered_map<const Operation *, size_t> constParam_;
  std::vector<KernelParam> params_;
  std::vector<GpuRef> refs_;
  std::unordered_map<const Operation *, Value *> reduced_;
  // emitAt: the host kernel's first parameter of ours, the region argument
  // replaced and its value.
  size_t paramBase_ = 0;
  const ir::Value *replacedArg_ = nullptr;
  Value *replacedValue_ = nullptr;
};

std::vector<Value *> pointOffsets(llvm::IRBuilder<> &b, Value *index,
                                  const std::vector<int64_t> &shape,
                                  const std::vector<std::vector<int64_t>> &strides) {
  std::vector<Value *> offs(strides.size(), b.getInt64(0));
  Value *rest = index;
  for (size_t d = shape.size(); d-- > 0;) {
    Value *c = d == 0 ? rest : b.CreateURem(rest, b.getInt64(uint64_t(shape[d])));
    if (d > 0)
      rest = b.CreateUDiv(rest, b.getInt64(uint64_t(shape[d])));
    for (size_t a = 0; a < strides.size(); ++a) {
      int64_t s = strides[a][d];
      if (s != 0)
        offs[a] = b.CreateAdd(offs[a], b.CreateMul(c, b.getInt64(uint64_t(s))));
    }
  }
  return offs;
}

int64_t View::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool View::contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect)
      return false;
    expect *= shape[i];
  }
  return true;
}

View View::dense(GpuRef ref, const ir::TensorType &type) {
  View v;
  v.ref = ref;
  v.dtype = type.dtype;
  v.shape = type.sizes();
  v.strides = cpu::rowMajorStrides(v.shape);
  return v;
}

FusionEpilogue::FusionEpilogue(GpuModule &gm, const Operation &fusion,
                               const std::vector<View> &inputs, const std::vector<View> &outputs,
                               const ConstantSink &constants)
    : noScratch_([](uint64_t) { return GpuRef{}; }),
      impl_(std::make_unique<FusionEmitter>(gm, fusion, inputs, outputs, constants, noScratch_)) {}

FusionEpilogue::~FusionEpilogue() = default;

bool FusionEpilogue::prepare(std::string &error) {
  if (!impl_->prepare(error))
    return false;
  if (impl_->hasReductions()) {
    error = "a fusion with reductions is no epilogue";
    return false;
  }
  return true;
}

const std::vector<KernelParam> &FusionEpilogue::params() const { return impl_->params(); }
const std::vector<GpuRef> &FusionEpilogue::refs() const { return impl_->refs(); }

bool FusionEpilogue::emitAt(KernelBuilder &kb, size_t first, Value *index, size_t replaced,
                            Value *value, std::string &error) {
  return impl_->emitAt(kb, first, index, replaced, value, error);
}

bool FusionEpilogue::standalone(std::vector<GpuLaunch> &launches, std::string &error) {
  return impl_->emit(launches, error);
}

bool emitFusionKernel(GpuModule &gm, const Operation &fusion, const std::vector<View> &inputs,
                      const std::vector<View> &outputs, const ConstantSink &constants,
                      const ScratchSink &scratch, std::vector<GpuLaunch> &launches,
                      std::string &error) {
  return FusionEmitter(gm, fusion, inputs, outputs, constants, scratch).run(launches, error);
}

} // namespace mdl::backend::hip
