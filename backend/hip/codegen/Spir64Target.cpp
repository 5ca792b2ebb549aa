// spir64 (OpenCL, PoCL on the CPU): the hooks of GpuTarget.h for
// clCreateProgramWithBinary. LLVM 19 has no SPIR-V back end, so the code is
// LLVM bitcode of the spir64 triple, which PoCL 3.1 reads with its LLVM 15:
//   - kernels have the spir_kernel calling convention and OpenCL's
//     kernel_arg_* metadata; a buffer arrives as a global pointer followed
//     by its i64 byte offset;
//   - ids and barriers are OpenCL built-ins by their Itanium-mangled names
//     (get_local_id(uint), get_group_id(uint), barrier(CLK_LOCAL_MEM_FENCE));
//   - work-group arrays are named `<kernel>.<var>`;
//   - the module is not optimized (PoCL optimizes it), and what LLVM 15
//     cannot read is removed: instruction flags added since (`or disjoint`,
//     `zext nneg`, `trunc nuw/nsw`, GEP no-wrap flags beyond inbounds) and
//     attributes (`memory(...)` and the like; only nounwind, convergent,
//     alwaysinline and noinline are kept).
#include "backend/hip/codegen/GpuTarget.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Operator.h>

namespace mdl::backend::hip {

namespace {

constexpr const char *kTriple = "spir64-unknown-unknown";
constexpr const char *kLayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"
                                "v512:512-v1024:1024-n8:16:32:64";
constexpr unsigned kClkLocalMemFence = 1;

llvm::FunctionCallee builtin(llvm::IRBuilder<> &b, const char *name, llvm::Type *ret,
                             llvm::ArrayRef<llvm::Type *> params, bool convergent) {
  llvm::Module *m = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee f =
      m->getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setCallingConv(llvm::CallingConv::SPIR_FUNC);
    fn->setDoesNotThrow();
    if (convergent)
      fn->setConvergent();
  }
  return f;
}

llvm::CallInst *callBuiltin(llvm::IRBuilder<> &b, llvm::FunctionCallee f,
                            llvm::ArrayRef<llvm::Value *> args) {
  llvm::CallInst *c = b.CreateCall(f, args);
  c->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  return c;
}

// Removes what an LLVM 15 bitcode reader would refuse or misread.
void legalizeForLlvm15(llvm::Module &m) {
  for (llvm::Function &f : m) {
    bool convergent = f.isConvergent(), inl = f.hasFnAttribute(llvm::Attribute::AlwaysInline),
         noinl = f.hasFnAttribute(llvm::Attribute::NoInline);
    f.setAttributes(llvm::AttributeList());
    f.setDoesNotThrow();
    if (convergent)
      f.setConvergent();
    if (inl)
      f.addFnAttr(llvm::Attribute::AlwaysInline);
    if (noinl)
      f.addFnAttr(llvm::Attribute::NoInline);
    for (llvm::Instruction &i : llvm::instructions(f)) {
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(&i))
        call->setAttributes(llvm::AttributeList());
      if (auto *d = llvm::dyn_cast<llvm::PossiblyDisjointInst>(&i))
        d->setIsDisjoint(false);
      if (auto *nn = llvm::dyn_cast<llvm::PossiblyNonNegInst>(&i))
        nn->setNonNeg(false);
      if (auto *t = llvm::dyn_cast<llvm::TruncInst>(&i)) {
        t->setHasNoUnsignedWrap(false);
        t->setHasNoSignedWrap(false);
      }
      if (auto *g = llvm::dyn_cast<llvm::GetElementPtrInst>(&i))
        g->setNoWrapFlags(g->isInBounds() ? llvm::GEPNoWrapFlags::inBounds()
                                          : llvm::GEPNoWrapFlags::none());
    }
  }
}

class Spir64Target : public GpuTarget {
public:
  Spir64Target() : GpuTarget("spir64", GpuCodeFormat::Spir64Bitcode) {}

  void prepareModule(llvm::Module &m) const override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(kLayout);
  }
  bool buffersHaveOffsets() const override { return true; }

  llvm::Value *localId(llvm::IRBuilder<> &b) const override {
    auto f = builtin(b, "_Z12get_local_idj", b.getInt64Ty(), {b.getInt32Ty()}, false);
    return callBuiltin(b, f, {b.getInt32(0)});
  }
  llvm::Value *groupId(llvm::IRBuilder<> &b, int dim) const override {
    auto f = builtin(b, "_Z12get_group_idj", b.getInt64Ty(), {b.getInt32Ty()}, false);
    return callBuiltin(b, f, {b.getInt32(uint32_t(dim))});
  }
  void barrier(llvm::IRBuilder<> &b) const override {
    auto f = builtin(b, "_Z7barrierj", b.getVoidTy(), {b.getInt32Ty()}, true);
    callBuiltin(b, f, {b.getInt32(kClkLocalMemFence)});
  }

  void markKernel(llvm::Function &f, unsigned blockX,
                  const std::vector<KernelParamInfo> &params) const override {
    f.setCallingConv(llvm::CallingConv::SPIR_KERNEL);
    llvm::LLVMContext &c = f.getContext();
    auto i32 = [&](unsigned v) {
      return llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), v));
    };
    std::vector<llvm::Metadata *> space, access, type, qual, names;
    // Every buffer is a `char *` (the kernel computes element addresses
    // itself) followed by its `long` byte offset; scalars are `long`.
    for (const KernelParamInfo &p : params) {
      auto one = [&](bool buffer, const std::string &name) {
        space.push_back(i32(buffer ? 1 : 0));
        access.push_back(llvm::MDString::get(c, "none"));
        type.push_back(llvm::MDString::get(c, buffer ? "char*" : "long"));
        qual.push_back(llvm::MDString::get(c, ""));
        names.push_back(llvm::MDString::get(c, name));
      };
      one(p.buffer, p.name);
      if (p.buffer)
        one(false, p.name + "_offset");
    }
    f.setMetadata("kernel_arg_addr_space", llvm::MDNode::get(c, space));
    f.setMetadata("kernel_arg_access_qual", llvm::MDNode::get(c, access));
    f.setMetadata("kernel_arg_type", llvm::MDNode::get(c, type));
    f.setMetadata("kernel_arg_base_type", llvm::MDNode::get(c, type));
    f.setMetadata("kernel_arg_type_qual", llvm::MDNode::get(c, qual));
    f.setMetadata("kernel_arg_name", llvm::MDNode::get(c, names));
    llvm::Metadata *wg[] = {i32(blockX), i32(1), i32(1)};
    f.setMetadata("reqd_work_group_size", llvm::MDNode::get(c, wg));
  }

  bool emit(llvm::Module &m, std::string &code, std::string &) const override {
    legalizeForLlvm15(m);
    llvm::raw_string_ostream os(code);
    llvm::WriteBitcodeToFile(m, os);
    os.flush();
    return true;
  }
};

} // namespace

std::unique_ptr<GpuTarget> makeSpir64Target() { return std::make_unique<Spir64Target>(); }

} // namespace mdl::backend::hip
