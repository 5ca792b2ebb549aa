// NVPTX (sm_80, sm_90): the hooks of GpuTarget.h for the CUDA driver's
// module loader. Kernels are marked through `nvvm.annotations` (kernel,
// maxntidx); ids come from the PTX special registers; a barrier is
// bar.sync 0. The module is optimized at O2 and emitted as PTX text of ISA
// version 8.0 (`+ptx80`), which CUDA 12 and 13 assemble for sm_80 and
// sm_90.
#include "backend/hip/codegen/GpuTarget.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/Target/TargetMachine.h>

namespace mdl::backend::hip {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

class NvptxTarget : public GpuTarget {
public:
  NvptxTarget(const std::string &arch, std::unique_ptr<llvm::TargetMachine> tm)
      : GpuTarget(arch, GpuCodeFormat::Ptx), tm_(std::move(tm)) {}

  void prepareModule(llvm::Module &m) const override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(tm_->createDataLayout());
  }

  llvm::Value *localId(llvm::IRBuilder<> &b) const override {
    return b.CreateZExt(b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}),
                        b.getInt64Ty());
  }
  llvm::Value *groupId(llvm::IRBuilder<> &b, int dim) const override {
    llvm::Intrinsic::ID id = dim == 0   ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x
                             : dim == 1 ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y
                                        : llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z;
    return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty());
  }
  void barrier(llvm::IRBuilder<> &b) const override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  }

  void markKernel(llvm::Function &f, unsigned blockX,
                  const std::vector<KernelParamInfo> &) const override {
    llvm::LLVMContext &c = f.getContext();
    llvm::Module &m = *f.getParent();
    llvm::NamedMDNode *ann = m.getOrInsertNamedMetadata("nvvm.annotations");
    auto entry = [&](const char *key, unsigned v) {
      llvm::Metadata *ops[] = {
          llvm::ValueAsMetadata::get(&f), llvm::MDString::get(c, key),
          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), v))};
      ann->addOperand(llvm::MDNode::get(c, ops));
    };
    entry("kernel", 1);
    entry("maxntidx", blockX);
  }

  // PTX names may not hold a '.': `<kernel>_<var>`.
  std::string localArrayName(const std::string &kernel, const std::string &var) const override {
    return kernel + "_" + var;
  }

  bool emit(llvm::Module &m, std::string &code, std::string &error) const override {
    optimizeModule(m, *tm_);
    return emitWithTargetMachine(m, *tm_, true, code, error);
  }

private:
  std::unique_ptr<llvm::TargetMachine> tm_;
};

} // namespace

std::unique_ptr<GpuTarget> makeNvptxTarget(const std::string &arch, std::string &error) {
  auto tm = makeTargetMachine(kTriple, arch, "+ptx80", error);
  if (!tm)
    return nullptr;
  return std::make_unique<NvptxTarget>(arch, std::move(tm));
}

} // namespace mdl::backend::hip
