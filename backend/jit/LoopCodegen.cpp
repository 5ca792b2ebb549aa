// One loop nest per fusion:
// 1. The domain D (FusionDomain.h) and its accesses: every input, dense
//    constant, arange and output is read or written at offset
//    sum(index[a] * stride[a]) (stride 0 along broadcast axes).
// 2. Axes of size 1 are dropped and neighbouring axes merged where every
//    access allows it (never across the outer / inner boundary), so the
//    innermost loop is long and unit-stride and LLVM vectorizes it.
// 3. Code: loops over the outer axes (the first one over [begin, end), the
//    share of one thread); per outer point, one loop over the inner axes
//    per reduction (accumulating in a register), the row outputs, then one
//    loop storing the full outputs. Each value is computed where it is
//    needed from the leaves (recomputing cheap ones per phase instead of
//    storing them), except the costly values a later phase reads again,
//    which the phase that computes them keeps in a row buffer (RowCache.cpp:
//    softmax exponentiates each element once); invariants are left to
//    LLVM's LICM.
// The kernel's pointer arguments are `noalias` (the buffer plan never lets
// an output overlap an input), which is what lets the loops vectorize.
#include "backend/jit/Codegen.h"
#include "stdlib/Registry.h"
#include "ir/passes/FusionDomain.h"

#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <limits>
#include <unordered_map>

namespace mdl::backend::jit {

using namespace ir;
using llvm::Value;

namespace {

bool isReduction(OpKind k) { return stdlib::isRowReduction(k); }

int opCost(const Operation &op) { return stdlib::opInfo(op.kind).cost; }

/// Row buffers per kernel: a few rows of the inner axes, in the L1 cache.
constexpr int64_t kRowCacheBytes = 32 * 1024;

class LoopEmitter {
public:
  LoopEmitter(llvm::Module &mod, const Operation &fusion,
              const std::vector<std::vector<int64_t>> &inputStrides, std::string name,
              KernelLinkage linkage)
      : mod_(mod), c_(mod.getContext()), b_(c_), fusion_(fusion), region_(*fusion.regions[0]),
        inputStrides_(inputStrides), name_(std::move(name)), linkage_(linkage) {}

  FusionKernel run(std::string &error) {
    auto dom = passes::fusionDomain(fusion_);
    if (!dom) {
      error = "the fusion has no valid domain";
      return {};
    }
    dims_ = dom->dims;
    inner_ = dom->innerRank;
    hasRed_ = dom->hasReductions;
    if (hasRed_)
      kept_ = planRowCache(region_, dims_, inner_, kRowCacheBytes);
    if (!collectAccesses(*dom, error))
      return {};
    FusionKernel k;
    k.range = fa_.outer > 0 ? fa_.dims[0] : 1;
    int64_t points = 1, cost = 0;
    for (int64_t d : dims_)
      points *= d;
    for (auto &op : region_.ops)
      cost += opCost(*op);
    // Worth handing to the worker pool only when it takes longer than a
    // hand-off can cost (a sleeping worker wakes in tens of microseconds):
    // 2^18 cost units are about 10 us of a long chain on one core (the
    // 100-operation chain on 1,000 floats, 170,000 units, runs in 7 us);
    // large domains of cheap operations are memory-bound and split from
    // 2^17 points.
    k.parallel = fa_.outer > 0 && k.range >= 2 &&
                 (points * cost >= (int64_t(1) << 18) || points >= (int64_t(1) << 17));
    // A kernel that always runs whole loops over constant bounds: LLVM then
    // knows every trip count (no remainder loops, less code to compile).
    ranged_ = k.parallel;
    if (linkage_ == KernelLinkage::Declaration) {
      auto *ptrTy = llvm::PointerType::getUnqual(c_);
      auto *kTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, b_.getInt64Ty(), b_.getInt64Ty()},
                                          false);
      k.fn = llvm::Function::Create(kTy, llvm::Function::ExternalLinkage, name_, mod_);
      k.fn->addFnAttr(llvm::Attribute::NoUnwind);
      return k;
    }
    k.fn = emit(error);
    return k;
  }

private:
  // The accesses (ir/passes/FusionDomain.h), with the row buffers' when
  // values are kept, over the collapsed domain.
  bool collectAccesses(const passes::FusionDomain &dom, std::string &error) {
    auto fa = passes::FusionAccesses::of(fusion_, dom, inputStrides_, error);
    if (!fa)
      return false;
    size_t rank = dims_.size();
    if (!kept_.empty()) {
      // Row buffers: row-major over the inner axes, the same for every
      // outer point.
      std::vector<int64_t> inner(dims_.begin() + long(rank) - inner_, dims_.end());
      std::vector<int64_t> st(rank - size_t(inner_), 0), rm = rowMajor(inner);
      for (size_t a = 0; a < inner.size(); ++a)
        st.push_back(inner[a] == 1 ? 0 : rm[a]);
      rowAccess_ = fa->add(st);
    }
    fa->collapse();
    fa_ = std::move(*fa);
    return true;
  }

  // --- Emission ------------------------------------------------------------

  struct Ctx {
    std::vector<Value *> offsets;
    std::unordered_map<const ir::Value *, Value *> memo;
  };

  llvm::Function *emit(std::string &error) {
    llvm::Type *ptrTy = llvm::PointerType::getUnqual(c_), *i64 = b_.getInt64Ty();
    size_t nIn = region_.args.size(), nOut = fa_.outputs.size();
    std::vector<llvm::Type *> params(nIn + nOut, ptrTy);
    params.push_back(i64);
    params.push_back(i64);
    auto *bodyTy = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    llvm::Function *body = llvm::Function::Create(bodyTy, llvm::Function::InternalLinkage,
                                                  name_ + ".body", mod_);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < nIn + nOut; ++i) {
      body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
      if (i < nIn)
        body->addParamAttr(unsigned(i), llvm::Attribute::ReadOnly);
      ptrs_.push_back(body->getArg(unsigned(i)));
    }
    begin_ = body->getArg(unsigned(nIn + nOut));
    end_ = body->getArg(unsigned(nIn + nOut + 1));
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", body));
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
    emitConstants();
    emitRowBuffers();
    std::vector<Value *> zero(fa_.strides.size(), b_.getInt64(0));
    bool ok = true;
    if (fa_.outer > 0)
      nest(0, fa_.outer, zero, {},
           [&](const std::vector<Value *> &offs, const std::vector<Value *> &) {
             ok &= row(offs, error);
             return std::vector<Value *>{};
           });
    else
      ok &= row(zero, error);
    b_.CreateRetVoid();
    if (!ok)
      return nullptr;

    // The kernel: unpacks the pointers and calls the body (inlined).
    auto *kTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, i64, i64}, false);
    llvm::Function *k = llvm::Function::Create(kTy,
                                               linkage_ == KernelLinkage::Shared
                                                   ? llvm::Function::ExternalLinkage
                                                   : llvm::Function::InternalLinkage,
                                               name_, mod_);
    k->addFnAttr(llvm::Attribute::NoUnwind);
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", k));
    std::vector<Value *> args;
    for (size_t i = 0; i < nIn + nOut; ++i)
      args.push_back(b_.CreateLoad(ptrTy, b_.CreateConstGEP1_64(ptrTy, k->getArg(0), i)));
    args.push_back(k->getArg(1));
    args.push_back(k->getArg(2));
    b_.CreateCall(body, args);
    b_.CreateRetVoid();
    return k;
  }

  void emitConstants() {
    for (auto &op : region_.ops) {
      if (op->kind != OpKind::Constant || op->results[0]->type.numElements() <= 1)
        continue;
      const DenseData &d = op->attr("value")->asDense();
      llvm::Type *et = storageType(c_, d.type.dtype);
      auto *arrTy = llvm::ArrayType::get(et, uint64_t(d.type.numElements()));
      llvm::Constant *init;
      if (d.type.dtype == DType::Bool) {
        std::vector<uint8_t> v(d.bytes.begin(), d.bytes.end());
        init = llvm::ConstantDataArray::get(c_, v);
      } else {
        init = llvm::ConstantDataArray::getRaw(
            llvm::StringRef(reinterpret_cast<const char *>(d.bytes.data()), d.bytes.size()),
            uint64_t(d.type.numElements()), et);
      }
      constData_[op.get()] = new llvm::GlobalVariable(
          mod_, arrTy, true, llvm::GlobalValue::PrivateLinkage, init, name_ + ".const");
    }
  }

  void emitRowBuffers() {
    int64_t points = 1;
    for (size_t a = dims_.size() - size_t(inner_); a < dims_.size(); ++a)
      points *= dims_[a];
    rowBuf_.assign(kept_.size(), nullptr);
    rowType_.assign(kept_.size(), nullptr);
    for (auto &[v, slot] : kept_) {
      llvm::Type *t = computeType(c_, v->type.dtype);
      auto *buf = b_.CreateAlloca(llvm::ArrayType::get(t, uint64_t(points)));
      buf->setAlignment(llvm::Align(64));
      rowBuf_[size_t(slot.index)] = buf;
      rowType_[size_t(slot.index)] = t;
    }
  }

  using Body = std::function<std::vector<Value *>(const std::vector<Value *> &,
                                                  const std::vector<Value *> &)>;

  // Loops over collapsed axes [d, stop), threading `carried` values (the
  // accumulators) through; returns their values after the loops.
  std::vector<Value *> nest(size_t d, size_t stop, const std::vector<Value *> &offs,
                            const std::vector<Value *> &carried, const Body &fn) {
    llvm::Function *f = b_.GetInsertBlock()->getParent();
    bool ranged = d == 0 && fa_.outer > 0 && ranged_;
    Value *lo = ranged ? begin_ : b_.getInt64(0);
    Value *hi = ranged ? end_ : b_.getInt64(fa_.dims[d]);
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(c_, "loop", f);
    auto *bodyBB = llvm::BasicBlock::Create(c_, "body", f);
    auto *exit = llvm::BasicBlock::Create(c_, "exit", f);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(lo, pre);
    std::vector<llvm::PHINode *> phis;
    for (Value *v : carried) {
      phis.push_back(b_.CreatePHI(v->getType(), 2));
      phis.back()->addIncoming(v, pre);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), bodyBB, exit);
    b_.SetInsertPoint(bodyBB);
    std::vector<Value *> o(offs.size());
    for (size_t k = 0; k < offs.size(); ++k) {
      int64_t s = fa_.strides[k][d];
      o[k] = s == 0 ? offs[k] : b_.CreateAdd(offs[k], b_.CreateMul(i, b_.getInt64(uint64_t(s))));
    }
    std::vector<Value *> cur(phis.begin(), phis.end());
    std::vector<Value *> next = d + 1 < stop ? nest(d + 1, stop, o, cur, fn) : fn(o, cur);
    llvm::BasicBlock *latch = b_.GetInsertBlock();
    i->addIncoming(b_.CreateAdd(i, b_.getInt64(1)), latch);
    for (size_t k = 0; k < phis.size(); ++k)
      phis[k]->addIncoming(next[k], latch);
    llvm::BranchInst *back = b_.CreateBr(header);
    // A long chain of operations per element is latency-bound with one
    // vector in flight: have the vectorizer interleave four, on large
    // domains (64K points) and, from 512 points in the innermost loop, on
    // chains too long for the out-of-order window (64 operations: on 1,000
    // floats the 100-operation chain takes 7 us instead of 13). It makes the
    // loop's code, and its compile time, grow: bench/workloads.py's compile
    // programs (chains of 20 on [16, 64]) took 60% longer to compile when
    // they interleaved.
    int64_t points = 1;
    for (int64_t e : fa_.dims)
      points *= e;
    size_t chain = 0;
    for (auto &op : region_.ops)
      chain += stdlib::hasTrait(op->kind, stdlib::trait::FusionLeaf) ? 0 : 1;
    bool large = points >= (int64_t(1) << 16);
    if (d + 1 == stop && fa_.dims[d] >= 512 && (large ? region_.ops.size() >= 8 : chain >= 64)) {
      llvm::Metadata *ic[] = {llvm::MDString::get(c_, "llvm.loop.interleave.count"),
                              llvm::ConstantAsMetadata::get(b_.getInt32(4))};
      llvm::MDNode *self = llvm::MDNode::getDistinct(c_, {nullptr, llvm::MDNode::get(c_, ic)});
      self->replaceOperandWith(0, self);
      back->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    b_.SetInsertPoint(exit);
    return std::vector<Value *>(phis.begin(), phis.end());
  }

  Value *elementPtr(Value *base, DType t, Value *off) {
    return b_.CreateGEP(storageType(c_, t), base, off);
  }

  Value *eval(const ir::Value *v, Ctx &ctx, std::string &error) {
    if (auto it = ctx.memo.find(v); it != ctx.memo.end())
      return it->second;
    auto kept = kept_.find(v);
    if (kept != kept_.end() && kept->second.phase < phase_) {
      // Computed by an earlier phase: read back from its row buffer.
      size_t k = size_t(kept->second.index);
      Value *r = b_.CreateLoad(rowType_[k], b_.CreateGEP(rowType_[k], rowBuf_[k],
                                                         ctx.offsets[size_t(rowAccess_)]));
      ctx.memo[v] = r;
      return r;
    }
    Value *r = nullptr;
    if (!v->def) {
      unsigned j = v->index;
      r = loadElement(b_, v->type.dtype,
                      elementPtr(ptrs_[j], v->type.dtype, ctx.offsets[size_t(fa_.inputs[j])]));
    } else {
      auto leaf = [&](const Operation &l) { return ctx.offsets[size_t(fa_.leaves.at(&l))]; };
      auto data = [&](const Operation &c) -> Value * { return constData_.at(&c); };
      auto operand = [&](const ir::Value *o, std::string &e) { return eval(o, ctx, e); };
      r = emitFusedOperation(b_, *v->def, {leaf, data, operand, reduced_}, error);
      if (!r)
        return nullptr;
    }
    if (kept != kept_.end() && kept->second.phase == phase_) {
      size_t k = size_t(kept->second.index);
      b_.CreateStore(r, b_.CreateGEP(rowType_[k], rowBuf_[k], ctx.offsets[size_t(rowAccess_)]));
    }
    ctx.memo[v] = r;
    return r;
  }

  // How a reduction accumulates (Codegen.h): with a NaN flag, so that
  // max / min vectorize, and sums the vectorizer may reorder.
  llvm::Type *accType(const Operation &r) { return accumulatorType(c_, r); }
  std::vector<Value *> accInit(const Operation &r) {
    return accumulatorInit(b_, r, NaNPropagation::Flag);
  }
  std::vector<Value *> accAdd(const Operation &r, const std::vector<Value *> &acc, Value *x) {
    return accumulate(b_, r, acc, x, NaNPropagation::Flag, /*reassociate=*/true);
  }
  Value *accFinish(const Operation &r, const std::vector<Value *> &accs) {
    int64_t count = 1;
    for (size_t a = dims_.size() - size_t(inner_); a < dims_.size(); ++a)
      count *= dims_[a];
    return accumulatorResult(b_, r, accs, NaNPropagation::Flag, count);
  }

  // Everything computed per outer point.
  bool row(const std::vector<Value *> &offs, std::string &error) {
    reduced_.clear();
    bool ok = true;
    phase_ = 0;
    for (auto &opPtr : region_.ops) {
      const Operation &r = *opPtr;
      if (!isReduction(r.kind))
        continue;
      std::vector<Value *> init = accInit(r);
      std::vector<Value *> result;
      if (fa_.inner > 0) {
        result = nest(fa_.outer, fa_.outer + fa_.inner, offs, init,
                      [&](const std::vector<Value *> &o, const std::vector<Value *> &cur) {
                        Ctx ctx{o, {}};
                        Value *x = eval(r.operands[0], ctx, error);
                        if (!x) {
                          ok = false;
                          return cur;
                        }
                        return accAdd(r, cur, x);
                      });
      } else {
        Ctx ctx{offs, {}};
        Value *x = eval(r.operands[0], ctx, error);
        if (!x)
          return false;
        result = accAdd(r, init, x);
      }
      if (!ok)
        return false;
      reduced_[&r] = accFinish(r, result);
      ++phase_;
    }
    const Operation *y = stdlib::terminatorOf(region_);
    Ctx rowCtx{offs, {}};
    bool anyFull = false;
    for (size_t k = 0; k < y->operands.size(); ++k) {
      if (fa_.full[k]) {
        anyFull = true;
        continue;
      }
      ir::Value *v = y->operands[k];
      Value *x = eval(v, rowCtx, error);
      if (!x)
        return false;
      storeElement(b_, v->type.dtype, x,
                   elementPtr(ptrs_[region_.args.size() + k], v->type.dtype,
                              offs[size_t(fa_.outputs[k])]));
    }
    if (!anyFull)
      return true;
    auto storeFull = [&](const std::vector<Value *> &o) {
      Ctx ctx{o, {}};
      for (size_t k = 0; k < y->operands.size(); ++k) {
        if (!fa_.full[k])
          continue;
        ir::Value *v = y->operands[k];
        Value *x = eval(v, ctx, error);
        if (!x) {
          ok = false;
          return;
        }
        storeElement(b_, v->type.dtype, x,
                     elementPtr(ptrs_[region_.args.size() + k], v->type.dtype,
                                o[size_t(fa_.outputs[k])]));
      }
    };
    if (fa_.inner > 0)
      nest(fa_.outer, fa_.outer + fa_.inner, offs, {},
           [&](const std::vector<Value *> &o, const std::vector<Value *> &) {
             storeFull(o);
             return std::vector<Value *>{};
           });
    else
      storeFull(offs);
    return ok;
  }

  llvm::Module &mod_;
  llvm::LLVMContext &c_;
  llvm::IRBuilder<> b_;
  const Operation &fusion_;
  const Region &region_;
  const std::vector<std::vector<int64_t>> &inputStrides_;
  std::string name_;
  std::vector<int64_t> dims_;
  passes::FusionAccesses fa_; // collapsed: fa_.dims, fa_.strides per access
  int inner_ = 0;
  bool hasRed_ = false;
  std::unordered_map<const Operation *, llvm::GlobalVariable *> constData_;
  bool ranged_ = true; // the first loop runs over [begin, end)
  std::vector<Value *> ptrs_;
  Value *begin_ = nullptr, *end_ = nullptr;
  std::unordered_map<const Operation *, Value *> reduced_;
  KernelLinkage linkage_;
  // Values kept in row buffers (RowCache.cpp), their buffers and types, the
  // buffers' access, and the phase being emitted (reductions in order,
  // then the outputs).
  std::unordered_map<const ir::Value *, RowCacheSlot> kept_;
  std::vector<llvm::Value *> rowBuf_;
  std::vector<llvm::Type *> rowType_;
  int rowAccess_ = -1;
  int phase_ = 0;
};

} // namespace

FusionKernel emitFusionKernel(llvm::Module &mod, const Operation &fusion,
                              const std::vector<std::vector<int64_t>> &inputStrides,
                              const std::string &name, std::string &error, KernelLinkage linkage) {
  return LoopEmitter(mod, fusion, inputStrides, name, linkage).run(error);
}

} // namespace mdl::backend::jit
