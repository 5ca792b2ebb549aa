// The host program of one function instance as an LLVM function
//   i32 @"mdl.fn.NAME"(ptr args, ptr results)
// (args and results are arrays of data pointers; the caller allocates the
// results; 0 means success, 1 that a diagnostic was reported).
//
// `if`, `for` and `while` become branches and loops with the index in a
// register, each back-edge checking the interrupt flag (Ctrl-C in the REPL:
// one load and a branch per iteration); segments on host-memory devices are
// compiled inline, fusions become calls to their loop kernels (through the
// worker pool when large), matrix products calls to the GEMM library,
// dynamic slices, updates and indexing inline copies (IndexCodegen.cpp);
// segments on other devices, transfers to them and every other operation go
// through the runtime (Runtime.h). Loop-carried values, `if` results and returned
// values are copied where the buffer plan could not compute them in place.
#include "backend/jit/Codegen.h"
#include "backend/jit/InlineOps.h"
#include "backend/jit/KernelUnits.h"
#include "backend/jit/Runtime.h"
#include "stdlib/Registry.h"
#include "backend/jit/BufferPlan.h"

#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>

namespace mdl::backend::jit {

using namespace ir;
using llvm::Value;

std::string functionSymbol(const std::string &name) { return "mdl.fn." + name; }
std::string globalSymbol(const std::string &name, int space) {
  return space < 0 ? "mdl.g." + name : "mdl.gd." + std::to_string(space) + "." + name;
}
std::string arenaSymbol(const std::string &fn, int space) {
  return "mdl.arena." + std::to_string(space) + "." + fn;
}
std::string handleSymbol(const std::string &fn, int n) {
  return "mdl.h." + std::to_string(n) + "." + fn;
}

namespace {

/// Copies of at most this many bytes between host buffers are inline memcpys.
constexpr int64_t kInlineCopy = 1 << 16;

class HostEmitter : public HostValues {
public:
  HostEmitter(llvm::Module &mod, const Module &m, const Function &f, const FunctionPlan &plan,
              const std::unordered_map<const Operation *, std::string> &shared)
      : mod_(mod), c_(mod.getContext()), b_(c_), eb_(c_), m_(m), f_(f), plan_(plan),
        shared_(shared) {
    ptr_ = llvm::PointerType::getUnqual(c_);
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
  }

  bool run(std::string &error) {
    auto *ty = llvm::FunctionType::get(i32_, {ptr_, ptr_}, false);
    fn_ = llvm::Function::Create(ty, llvm::Function::ExternalLinkage, functionSymbol(f_.name), mod_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    auto *entry = llvm::BasicBlock::Create(c_, "entry", fn_);
    auto *start = llvm::BasicBlock::Create(c_, "start", fn_);
    eb_.SetInsertPoint(entry);
    b_.SetInsertPoint(start);
    if (!emitRegion(*f_.body, error))
      return false;
    eb_.CreateBr(start);
    if (llvm::verifyFunction(*fn_, &llvm::errs())) {
      error = "generated code for '" + f_.name + "' does not verify";
      return false;
    }
    return true;
  }

private:
  // --- Addresses -------------------------------------------------------------

  llvm::GlobalVariable *external(const std::string &name) {
    if (auto *g = mod_.getGlobalVariable(name, true))
      return g;
    return new llvm::GlobalVariable(mod_, b_.getInt8Ty(), false, llvm::GlobalValue::ExternalLinkage,
                                    nullptr, name);
  }

  Value *rootBase(int root) {
    root = plan_.rep(root);
    if (auto it = bases_.find(root); it != bases_.end())
      return it->second;
    const Root &r = plan_.roots[size_t(root)];
    Value *p = nullptr;
    switch (r.kind) {
    case Root::Kind::Arena:
      p = eb_.CreateConstGEP1_64(eb_.getInt8Ty(), external(arenaSymbol(f_.name, r.space)),
                                 uint64_t(r.offset));
      break;
    case Root::Kind::Arg:
      p = eb_.CreateLoad(ptr_, eb_.CreateConstGEP1_64(ptr_, fn_->getArg(0), uint64_t(r.index)));
      break;
    case Root::Kind::Result:
      p = eb_.CreateLoad(ptr_, eb_.CreateConstGEP1_64(ptr_, fn_->getArg(1), uint64_t(r.index)));
      break;
    case Root::Kind::Global:
      p = external(globalSymbol(r.source->stringAttr("name"), r.space));
      break;
    case Root::Kind::Constant: {
      const DenseData &d = r.source->attr("value")->asDense();
      llvm::Constant *init = llvm::ConstantDataArray::getRaw(
          llvm::StringRef(reinterpret_cast<const char *>(d.bytes.data()), d.bytes.size()),
          uint64_t(d.bytes.size()), eb_.getInt8Ty());
      auto *g = new llvm::GlobalVariable(mod_, init->getType(), true,
                                         llvm::GlobalValue::PrivateLinkage, init, "const");
      g->setAlignment(llvm::Align(64));
      p = g;
      break;
    }
    }
    bases_[root] = p;
    return p;
  }

  Value *addressOf(const ValueLoc &l, DType t) {
    Value *base = rootBase(l.root);
    if (l.offset == 0)
      return base;
    return b_.CreateConstGEP1_64(b_.getInt8Ty(), base, uint64_t(l.offset * int64_t(dtypeSize(t))));
  }
  Value *addressOf(const ir::Value *v) { return addressOf(plan_.loc(v), v->type.dtype); }

  int spaceOf(const ValueLoc &l) const { return plan_.roots[size_t(plan_.rep(l.root))].space; }

  Value *context() { return external(kContextSymbol); }
  Value *handle(const Operation &op) {
    return external(handleSymbol(f_.name, plan_.handleOf.at(&op)));
  }

  llvm::FunctionCallee runtime(const char *name, llvm::Type *ret, std::vector<llvm::Type *> params) {
    return mod_.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  }

  Value *pointerArray(const std::vector<Value *> &ptrs) {
    auto *arr = eb_.CreateAlloca(llvm::ArrayType::get(ptr_, std::max<size_t>(ptrs.size(), 1)));
    for (size_t i = 0; i < ptrs.size(); ++i)
      b_.CreateStore(ptrs[i], b_.CreateConstGEP1_64(ptr_, arr, i));
    return arr;
  }

  Value *i64Array(const std::vector<int64_t> &v) {
    auto *init = llvm::ConstantDataArray::get(c_, llvm::ArrayRef<uint64_t>(
                                                      reinterpret_cast<const uint64_t *>(v.data()),
                                                      v.size()));
    return new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                    init, "desc");
  }

  /// mdl_rt_copy's descriptor of `t`, a constant of the module.
  Value *typeOf(const TensorType &t) { return i64Array(typeDescriptor(t)); }

  // Returns on a non-zero status.
  void check(Value *rc) {
    if (!errorBlock_) {
      errorBlock_ = llvm::BasicBlock::Create(c_, "error", fn_);
      llvm::IRBuilder<> eb(errorBlock_);
      eb.CreateRet(eb.getInt32(1));
    }
    auto *ok = llvm::BasicBlock::Create(c_, "ok", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(rc, b_.getInt32(0)), errorBlock_, ok);
    b_.SetInsertPoint(ok);
  }

  // --- Copies ----------------------------------------------------------------

  /// Copies the value at `src` (of type `t`) into the contiguous buffer at
  /// `dst` in memory space `dstSpace`.
  void copyTo(Value *dst, int dstSpace, const ValueLoc &src, const TensorType &t) {
    int64_t bytes = t.byteSize();
    if (bytes == 0)
      return;
    Value *from = addressOf(src, t.dtype);
    int srcSpace = spaceOf(src);
    if (!src.contiguous) {
      std::vector<int64_t> desc = {int64_t(dtypeSize(t.dtype)), int64_t(t.rank())};
      for (int64_t d : t.sizes())
        desc.push_back(d);
      desc.insert(desc.end(), src.strides.begin(), src.strides.end());
      b_.CreateCall(runtime("mdl_rt_strided_copy", b_.getVoidTy(), {ptr_, ptr_, ptr_}),
                    {i64Array(desc), dst, from});
      return;
    }
    if (dstSpace < 0 && srcSpace < 0 && bytes <= kInlineCopy) {
      b_.CreateMemCpy(dst, llvm::MaybeAlign(), from, llvm::MaybeAlign(), uint64_t(bytes));
      return;
    }
    Value *rc = b_.CreateCall(runtime("mdl_rt_copy", i32_, {ptr_, i32_, ptr_, i32_, ptr_, ptr_}),
                              {context(), b_.getInt32(uint32_t(dstSpace)), dst,
                               b_.getInt32(uint32_t(srcSpace)), from, typeOf(t)});
    check(rc);
  }

  /// Copies `v` into the location of `dest` unless it is already there.
  void copyInto(const ir::Value *dest, const ValueLoc &src, const ir::Value *v) {
    const ValueLoc &d = plan_.loc(dest);
    if (plan_.rep(d.root) == plan_.rep(src.root) && d.offset == src.offset && src.contiguous)
      return;
    copyTo(addressOf(dest), spaceOf(d), src, v->type);
  }

  // --- Scalars read by the host program --------------------------------------

  Value *readScalar(const ir::Value *v, llvm::Type *t) {
    const ValueLoc &l = plan_.loc(v);
    Value *p = addressOf(v);
    int sp = spaceOf(l);
    if (sp >= 0) {
      auto *tmp = eb_.CreateAlloca(b_.getInt64Ty());
      Value *rc = b_.CreateCall(runtime("mdl_rt_copy", i32_, {ptr_, i32_, ptr_, i32_, ptr_, ptr_}),
                                {context(), b_.getInt32(uint32_t(-1)), tmp, b_.getInt32(uint32_t(sp)),
                                 p, typeOf(v->type)});
      check(rc);
      p = tmp;
    }
    return b_.CreateLoad(t, p);
  }

  Value *readBool(const ir::Value *v) {
    return b_.CreateICmpNE(readScalar(v, b_.getInt8Ty()), b_.getInt8(0));
  }

  Value *readIndex(const ir::Value *v) {
    // Bounds are i64 (the verifier checks it).
    return readScalar(v, i64_);
  }

  // --- Operations --------------------------------------------------------------

  bool emitRegion(const Region &r, std::string &error) {
    for (auto &op : r.ops) {
      if (op->kind == OpKind::Yield)
        return true;
      if (!emitOp(*op, error))
        return false;
    }
    return true;
  }

  std::vector<Value *> addresses(const std::vector<ir::Value *> &vs) {
    std::vector<Value *> out;
    for (const ir::Value *v : vs)
      out.push_back(addressOf(v));
    return out;
  }
  std::vector<Value *> resultAddresses(const Operation &op) {
    std::vector<Value *> out;
    for (auto &r : op.results)
      out.push_back(addressOf(r.get()));
    return out;
  }

  bool emitOp(const Operation &op, std::string &error) {
    switch (op.kind) {
    case OpKind::Segment:
      if (plan_.handleOf.count(&op)) {
        Value *rc = b_.CreateCall(runtime("mdl_rt_segment", i32_, {ptr_, ptr_, ptr_, ptr_}),
                                  {context(), handle(op), pointerArray(addresses(op.operands)),
                                   pointerArray(resultAddresses(op))});
        check(rc);
        return true;
      }
      return emitRegion(*op.regions[0], error);
    case OpKind::Fusion:
      return emitFusion(op, error);
    case OpKind::Constant: case OpKind::Global:
      return true;
    case OpKind::Transfer: case OpKind::To: case OpKind::Reveal:
      copyInto(op.results[0].get(), plan_.loc(op.operands[0]), op.operands[0]);
      return true;
    case OpKind::Call: {
      llvm::FunctionCallee callee =
          runtime(functionSymbol(op.stringAttr("callee")).c_str(), i32_, {ptr_, ptr_});
      Value *rc = b_.CreateCall(callee, {pointerArray(addresses(op.operands)),
                                         pointerArray(resultAddresses(op))});
      check(rc);
      return true;
    }
    case OpKind::Print: {
      Value *rc = b_.CreateCall(runtime("mdl_rt_print", i32_, {ptr_, ptr_, ptr_}),
                                {context(), handle(op), pointerArray(addresses(op.operands))});
      check(rc);
      return true;
    }
    case OpKind::If:
      return emitIf(op, error);
    case OpKind::For:
      return emitFor(op, error);
    case OpKind::While:
      return emitWhile(op, error);
    case OpKind::Return: {
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const ir::Value *v = op.operands[i];
        const ValueLoc &l = plan_.loc(v);
        const Root &r = plan_.roots[size_t(plan_.rep(l.root))];
        if (r.kind == Root::Kind::Result && r.index == int(i))
          continue;
        Value *dst = b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(ptr_, fn_->getArg(1), i));
        int want = i < f_.resultDevices.size() ? f_.resultDevices[i] : -1;
        copyTo(dst, plan_.deviceSpace(want), l, v->type);
      }
      b_.CreateRet(b_.getInt32(0));
      // Anything after a return is unreachable; keep the builder valid.
      b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "dead", fn_));
      b_.CreateUnreachable();
      return true;
    }
    default:
      break;
    }
    if (plan_.inlined.count(&op)) {
      emitInlineOp(b_, op, *this);
      return true;
    }
    if (plan_.handleOf.count(&op)) {
      kernel(op);
      return true;
    }
    if (op.kind == OpKind::Matmul || op.kind == OpKind::DotGeneral)
      return emitMatmul(op);
    // A view: copied only where the plan materializes it.
    for (auto &res : op.results)
      if (auto it = plan_.copyFrom.find(res.get()); it != plan_.copyFrom.end())
        copyTo(addressOf(res.get()), -1, it->second, res->type);
    return true;
  }

  // --- HostValues: what operations computed inline use ----------------------

  Value *address(const ir::Value *v) override { return addressOf(v); }

  Value *index(const ir::Value *v) override {
    DType t = v->type.dtype;
    Value *raw = readScalar(v, storageType(c_, t));
    return b_.CreateIntCast(raw, i64_, !(t == DType::U8 || t == DType::Bool));
  }

  void copy(const ir::Value *dest, const ir::Value *src) override {
    copyInto(dest, plan_.loc(src), src);
  }

  void kernel(const Operation &op) override {
    // Convolutions have a oneDNN primitive of their own (ConvPrimitive.h),
    // pooling runs on the worker pool (Pooling.h).
    const char *fn = op.kind == OpKind::FusedConvolution ? "mdl_rt_conv"
                     : op.kind == OpKind::ReduceWindow   ? "mdl_rt_window"
                                                         : "mdl_rt_kernel";
    Value *rc = b_.CreateCall(runtime(fn, i32_, {ptr_, ptr_, ptr_, ptr_}),
                              {context(), handle(op), pointerArray(addresses(op.operands)),
                               pointerArray(resultAddresses(op))});
    check(rc);
  }

  bool emitIf(const Operation &op, std::string &error) {
    Value *c = readBool(op.operands[0]);
    auto *thenBB = llvm::BasicBlock::Create(c_, "then", fn_);
    auto *elseBB = llvm::BasicBlock::Create(c_, "else", fn_);
    auto *merge = llvm::BasicBlock::Create(c_, "endif", fn_);
    b_.CreateCondBr(c, thenBB, elseBB);
    for (int k = 0; k < 2; ++k) {
      b_.SetInsertPoint(k == 0 ? thenBB : elseBB);
      const Region &r = *op.regions[size_t(k)];
      if (!emitRegion(r, error))
        return false;
      const Operation *y = stdlib::terminatorOf(r);
      for (size_t i = 0; i < op.results.size(); ++i)
        copyInto(op.results[i].get(), plan_.loc(y->operands[i]), y->operands[i]);
      b_.CreateBr(merge);
    }
    b_.SetInsertPoint(merge);
    return true;
  }

  void yieldInto(const Operation &loop, const Operation &y) {
    std::vector<int> temps;
    if (auto it = plan_.yieldTemps.find(&y); it != plan_.yieldTemps.end())
      temps = it->second;
    std::vector<ValueLoc> srcs;
    for (size_t k = 0; k < loop.results.size(); ++k) {
      const ir::Value *v = y.operands[k];
      ValueLoc src = plan_.loc(v);
      if (k < temps.size() && temps[k] >= 0) {
        ValueLoc t{temps[k], 0, rowMajor(v->type.sizes()), true};
        copyTo(addressOf(t, v->type.dtype), spaceOf(t), src, v->type);
        src = t;
      }
      srcs.push_back(src);
    }
    for (size_t k = 0; k < loop.results.size(); ++k)
      copyInto(loop.results[k].get(), srcs[k], y.operands[k]);
  }

  bool emitFor(const Operation &op, std::string &error) {
    Value *lo = readIndex(op.operands[0]), *hi = readIndex(op.operands[1]);
    for (size_t k = 0; k < op.results.size(); ++k)
      copyInto(op.results[k].get(), plan_.loc(op.operands[2 + k]), op.operands[2 + k]);
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(c_, "for", fn_);
    auto *body = llvm::BasicBlock::Create(c_, "for.body", fn_);
    auto *exit = llvm::BasicBlock::Create(c_, "for.end", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *i = b_.CreatePHI(i64_, 2);
    i->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), body, exit);
    b_.SetInsertPoint(body);
    const Region &r = *op.regions[0];
    b_.CreateStore(i, addressOf(r.args[0].get()));
    if (!emitRegion(r, error))
      return false;
    yieldInto(op, *stdlib::terminatorOf(r));
    checkInterrupt(op);
    i->addIncoming(b_.CreateAdd(i, b_.getInt64(1)), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    return true;
  }

  bool emitWhile(const Operation &op, std::string &error) {
    for (size_t k = 0; k < op.results.size(); ++k)
      copyInto(op.results[k].get(), plan_.loc(op.operands[k]), op.operands[k]);
    auto *header = llvm::BasicBlock::Create(c_, "while", fn_);
    auto *body = llvm::BasicBlock::Create(c_, "while.body", fn_);
    auto *exit = llvm::BasicBlock::Create(c_, "while.end", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    const Region &cond = *op.regions[0];
    if (!emitRegion(cond, error))
      return false;
    b_.CreateCondBr(readBool(stdlib::terminatorOf(cond)->operands[0]), body, exit);
    b_.SetInsertPoint(body);
    const Region &r = *op.regions[1];
    if (!emitRegion(r, error))
      return false;
    yieldInto(op, *stdlib::terminatorOf(r));
    checkInterrupt(op);
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    return true;
  }

  /// At a loop's back-edge: one volatile load of the interrupt flag and a
  /// branch; when it is set, the runtime reports E0409 at the loop and the
  /// function returns 1.
  void checkInterrupt(const Operation &loop) {
    Value *flag = b_.CreateLoad(i32_, external(kInterruptSymbol), /*isVolatile=*/true);
    auto *stop = llvm::BasicBlock::Create(c_, "interrupted", fn_);
    auto *cont = llvm::BasicBlock::Create(c_, "continue", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(flag, b_.getInt32(0)), stop, cont,
                    llvm::MDBuilder(c_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(stop);
    Value *rc = b_.CreateCall(runtime("mdl_rt_interrupted", i32_, {ptr_, ptr_}),
                              {context(), handle(loop)});
    check(rc);
    b_.CreateBr(cont); // not reached: the runtime reports and returns 1
    b_.SetInsertPoint(cont);
  }

  bool emitFusion(const Operation &op, std::string &error) {
    std::vector<std::vector<int64_t>> strides = fusionStrides(op, plan_);
    FusionKernel k;
    if (auto it = shared_.find(&op); it != shared_.end()) {
      // Compiled in a kernel unit: declared here, once per module.
      if (!declared_.count(it->second))
        declared_[it->second] =
            emitFusionKernel(mod_, op, strides, it->second, error, KernelLinkage::Declaration);
      k = declared_[it->second];
    } else {
      k = emitFusionKernel(mod_, op, strides, "mdl.k" + std::to_string(kernels_++), error);
    }
    if (!k.fn)
      return false;
    std::vector<Value *> ptrs = addresses(op.operands);
    for (Value *p : resultAddresses(op))
      ptrs.push_back(p);
    Value *env = pointerArray(ptrs);
    if (k.parallel)
      b_.CreateCall(runtime("mdl_rt_parallel_for", b_.getVoidTy(), {ptr_, ptr_, i64_}),
                    {k.fn, env, b_.getInt64(uint64_t(k.range))});
    else
      b_.CreateCall(k.fn, {env, b_.getInt64(0), b_.getInt64(uint64_t(k.range))});
    return true;
  }

  bool emitMatmul(const Operation &op) {
    const ir::Value *a = op.operands[0], *bv = op.operands[1];
    const ValueLoc &la = plan_.loc(a), &lb = plan_.loc(bv);
    std::vector<int64_t> as = a->type.sizes(), bs = bv->type.sizes();
    int64_t M, K, N, rsA, csA, rsB, csB;
    std::vector<int64_t> aBatch, aBatchStr, bBatch, bBatchStr;
    if (as.size() == 1) {
      M = 1, K = as[0], rsA = 0, csA = la.strides[0];
    } else {
      M = as[as.size() - 2], K = as.back();
      rsA = la.strides[as.size() - 2], csA = la.strides.back();
      aBatch.assign(as.begin(), as.end() - 2);
      aBatchStr.assign(la.strides.begin(), la.strides.end() - 2);
    }
    if (bs.size() == 1) {
      N = 1, rsB = lb.strides[0], csB = 0;
    } else {
      N = bs.back();
      rsB = lb.strides[bs.size() - 2], csB = lb.strides.back();
      bBatch.assign(bs.begin(), bs.end() - 2);
      bBatchStr.assign(lb.strides.begin(), lb.strides.end() - 2);
    }
    size_t rank = std::max(aBatch.size(), bBatch.size());
    std::vector<int64_t> batch(rank, 1), aStr(rank, 0), bStr(rank, 0), cStr(rank, 0);
    for (size_t i = 0; i < aBatch.size(); ++i) {
      size_t d = rank - aBatch.size() + i;
      batch[d] = std::max(batch[d], aBatch[i]);
      aStr[d] = aBatch[i] == 1 ? 0 : aBatchStr[i];
    }
    for (size_t i = 0; i < bBatch.size(); ++i) {
      size_t d = rank - bBatch.size() + i;
      batch[d] = std::max(batch[d], bBatch[i]);
      bStr[d] = bBatch[i] == 1 ? 0 : bBatchStr[i];
    }
    int64_t acc = M * N;
    for (size_t i = rank; i-- > 0;) {
      cStr[i] = acc;
      acc *= batch[i];
    }
    auto layA = matrixLayout(M, K, rsA, csA), layB = matrixLayout(K, N, rsB, csB);
    std::vector<int64_t> desc = {matmulCode(a->type.dtype, op.results[0]->type.dtype),
                                 int64_t(rank), layA->trans, layB->trans, M, N, K, layA->ld,
                                 layB->ld, N};
    desc.insert(desc.end(), batch.begin(), batch.end());
    desc.insert(desc.end(), aStr.begin(), aStr.end());
    desc.insert(desc.end(), bStr.begin(), bStr.end());
    desc.insert(desc.end(), cStr.begin(), cStr.end());
    Value *rc = b_.CreateCall(runtime("mdl_rt_matmul", i32_, {ptr_, ptr_, ptr_, ptr_, ptr_}),
                              {context(), i64Array(desc), addressOf(a), addressOf(bv),
                               addressOf(op.results[0].get())});
    check(rc);
    return true;
  }

  llvm::Module &mod_;
  llvm::LLVMContext &c_;
  llvm::IRBuilder<> b_, eb_;
  const Module &m_;
  const Function &f_;
  const FunctionPlan &plan_;
  llvm::Function *fn_ = nullptr;
  llvm::PointerType *ptr_;
  llvm::IntegerType *i32_, *i64_;
  llvm::BasicBlock *errorBlock_ = nullptr;
  const std::unordered_map<const Operation *, std::string> &shared_;
  std::unordered_map<std::string, FusionKernel> declared_;
  std::unordered_map<int, Value *> bases_;
  int kernels_ = 0;
};

} // namespace

bool emitFunction(llvm::Module &mod, const Module &m, const Function &f, const FunctionPlan &plan,
                  const std::unordered_map<const Operation *, std::string> &shared,
                  std::string &error) {
  return HostEmitter(mod, m, f, plan, shared).run(error);
}

} // namespace mdl::backend::jit
