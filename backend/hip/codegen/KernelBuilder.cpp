// The kernel builder and the segment's module (see KernelBuilder.h).
#include "backend/hip/codegen/KernelBuilder.h"
#include "backend/hip/codegen/GpuMath.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace mdl::backend::hip {

GpuModule::GpuModule(const GpuTarget &target)
    : target_(target), context_(std::make_unique<llvm::LLVMContext>()),
      module_(std::make_unique<llvm::Module>("mdl.gpu", *context_)) {
  target_.prepareModule(*module_);
}

GpuModule::~GpuModule() {
  module_.reset();
  context_.reset();
}

std::string GpuModule::kernelName(const std::string &what) {
  std::string clean;
  for (char ch : what)
    clean += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return "mdl_k" + std::to_string(kernels_.size()) + "_" + clean;
}

bool GpuModule::finish(std::string &code, std::string &error) {
  if (!defineGpuMath(*module_, error))
    return false;
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module_, &os)) {
    error = "internal error: the generated GPU module is not valid: " + os.str();
    return false;
  }
  return target_.emit(*module_, code, error);
}

KernelBuilder::KernelBuilder(GpuModule &m, const std::string &name, unsigned blockX,
                             std::vector<KernelParam> params)
    : m_(m), name_(name), blockX_(blockX), params_(std::move(params)), b_(m.context()) {
  const GpuTarget &t = m.target();
  llvm::LLVMContext &c = m.context();
  llvm::Type *ptr = llvm::PointerType::get(c, t.globalSpace());
  std::vector<llvm::Type *> types;
  for (const KernelParam &p : params_) {
    types.push_back(p.buffer ? ptr : b_.getInt64Ty());
    if (p.buffer && t.buffersHaveOffsets())
      types.push_back(b_.getInt64Ty());
  }
  fn_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), types, false),
                               llvm::Function::ExternalLinkage, name_, m.module());
  fn_->setDoesNotThrow();
  entry_ = llvm::BasicBlock::Create(c, "entry", fn_);
  b_.SetInsertPoint(entry_);
  unsigned a = 0;
  for (const KernelParam &p : params_) {
    llvm::Argument *arg = fn_->getArg(a++);
    arg->setName(p.name);
    if (p.buffer && t.buffersHaveOffsets()) {
      llvm::Argument *off = fn_->getArg(a++);
      off->setName(p.name + "_offset");
      values_.push_back(b_.CreateGEP(b_.getInt8Ty(), arg, off));
    } else {
      values_.push_back(arg);
    }
  }
  t.markKernel(*fn_, blockX_, params_);
  localId_ = t.localId(b_);
}

llvm::Value *KernelBuilder::groupId(int dim) {
  if (!groupIds_[dim]) {
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    // After the parameters' address computations and the local id.
    if (auto *li = llvm::dyn_cast<llvm::Instruction>(localId_))
      b_.SetInsertPoint(li->getParent(), std::next(li->getIterator()));
    else
      b_.SetInsertPoint(entry_, entry_->getFirstInsertionPt());
    groupIds_[dim] = m_.target().groupId(b_, dim);
  }
  return groupIds_[dim];
}

llvm::Value *KernelBuilder::variable(llvm::Type *t) {
  llvm::IRBuilder<> at(entry_, entry_->getFirstInsertionPt());
  return at.CreateAlloca(t);
}

void KernelBuilder::barrier() { m_.target().barrier(b_); }

llvm::Value *KernelBuilder::localArray(llvm::Type *elt, uint64_t n, const std::string &var) {
  auto *ty = llvm::ArrayType::get(elt, n);
  auto *g = new llvm::GlobalVariable(m_.module(), ty, false, llvm::GlobalValue::InternalLinkage,
                                     llvm::UndefValue::get(ty),
                                     m_.target().localArrayName(name_, var), nullptr,
                                     llvm::GlobalValue::NotThreadLocal, m_.target().localSpace());
  g->setAlignment(llvm::Align(16));
  const llvm::DataLayout &dl = m_.module().getDataLayout();
  sharedBytes_ = (sharedBytes_ + 15) / 16 * 16 + dl.getTypeAllocSize(ty);
  return g;
}

void KernelBuilder::loop(llvm::Value *begin, llvm::Value *end, llvm::Value *step,
                         const std::function<void(llvm::Value *)> &body) {
  llvm::LLVMContext &c = context();
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(c, "loop", fn_);
  auto *bodyBB = llvm::BasicBlock::Create(c, "body", fn_);
  auto *exit = llvm::BasicBlock::Create(c, "exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  body(i);
  i->addIncoming(b_.CreateAdd(i, step), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

void KernelBuilder::forEachPoint(int64_t total, int64_t groups,
                                 const std::function<void(llvm::Value *)> &body) {
  llvm::Value *start = b_.CreateAdd(b_.CreateMul(groupId(0), b_.getInt64(blockX_)), localId_);
  llvm::Value *end = b_.getInt64(uint64_t(total));
  // One point per thread when the grid covers them all: no loop, which
  // OpenCL's CPU implementations vectorize across work-items.
  if (groups * int64_t(blockX_) >= total)
    ifThen(b_.CreateICmpSLT(start, end), [&] { body(start); });
  else
    loop(start, end, b_.getInt64(uint64_t(groups) * blockX_), body);
}

void KernelBuilder::forEachRow(int64_t rows, int64_t groups,
                               const std::function<void(llvm::Value *)> &body) {
  // Always a loop (of one trip when the grid covers the rows): barriers under
  // a branch, uniform as it would be, crash PoCL's work-group compiler.
  loop(groupId(0), b_.getInt64(uint64_t(rows)), b_.getInt64(uint64_t(groups)), body);
}

void KernelBuilder::ifThen(llvm::Value *cond, const std::function<void()> &body) {
  llvm::LLVMContext &c = context();
  auto *then = llvm::BasicBlock::Create(c, "then", fn_);
  auto *join = llvm::BasicBlock::Create(c, "join", fn_);
  b_.CreateCondBr(cond, then, join);
  b_.SetInsertPoint(then);
  body();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

llvm::Value *KernelBuilder::element(llvm::Value *base, llvm::Type *elt, llvm::Value *index) {
  return b_.CreateGEP(elt, base, index);
}

uint32_t KernelBuilder::finish() {
  b_.CreateRetVoid();
  GpuKernel k;
  k.name = name_;
  k.block[0] = blockX_;
  k.sharedBytes = uint32_t(sharedBytes_);
  m_.kernels().push_back(k);
  return uint32_t(m_.kernels().size() - 1);
}

int64_t groupsFor(int64_t total, unsigned block) {
  return std::clamp<int64_t>((total + block - 1) / block, 1, kMaxGroups);
}

} // namespace mdl::backend::hip
