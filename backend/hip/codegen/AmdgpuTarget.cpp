// AMDGPU (gfx90a, gfx942): the hooks of GpuTarget.h for HIP's module
// loader. Kernels use the amdgpu_kernel calling convention with their
// work-group size as "amdgpu-flat-work-group-size"; ids come from the
// workitem/workgroup intrinsics; a barrier is s_barrier between
// work-group-scope release and acquire fences. The module is optimized at
// O2, emitted as an ELF object, and linked into a code object by lld, as
// `ld.lld -shared` would (the form hipModuleLoadData takes).
#include "backend/hip/codegen/GpuTarget.h"

#include <lld/Common/Driver.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

LLD_HAS_DRIVER(elf)

namespace mdl::backend::hip {

namespace {

constexpr const char *kTriple = "amdgcn-amd-amdhsa";

// A temporary file removed when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

class AmdgpuTarget : public GpuTarget {
public:
  AmdgpuTarget(const std::string &arch, std::unique_ptr<llvm::TargetMachine> tm)
      : GpuTarget(arch, GpuCodeFormat::AmdgpuCodeObject), tm_(std::move(tm)) {}

  void prepareModule(llvm::Module &m) const override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(tm_->createDataLayout());
  }

  llvm::Value *localId(llvm::IRBuilder<> &b) const override {
    return b.CreateZExt(b.CreateIntrinsic(llvm::Intrinsic::amdgcn_workitem_id_x, {}, {}),
                        b.getInt64Ty());
  }
  llvm::Value *groupId(llvm::IRBuilder<> &b, int dim) const override {
    llvm::Intrinsic::ID id = dim == 0   ? llvm::Intrinsic::amdgcn_workgroup_id_x
                             : dim == 1 ? llvm::Intrinsic::amdgcn_workgroup_id_y
                                        : llvm::Intrinsic::amdgcn_workgroup_id_z;
    return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty());
  }
  void barrier(llvm::IRBuilder<> &b) const override {
    llvm::LLVMContext &c = b.getContext();
    llvm::SyncScope::ID wg = c.getOrInsertSyncScopeID("workgroup");
    b.CreateFence(llvm::AtomicOrdering::Release, wg);
    b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
    b.CreateFence(llvm::AtomicOrdering::Acquire, wg);
  }

  void markKernel(llvm::Function &f, unsigned blockX,
                  const std::vector<KernelParamInfo> &) const override {
    f.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    f.addFnAttr("amdgpu-flat-work-group-size", "1," + std::to_string(blockX));
    f.addFnAttr("uniform-work-group-size", "true");
  }

  bool emit(llvm::Module &m, std::string &code, std::string &error) const override {
    optimizeModule(m, *tm_);
    std::string object;
    if (!emitWithTargetMachine(m, *tm_, false, object, error))
      return false;
    return link(object, code, error);
  }

private:
  // `ld.lld -shared object -o code` through lld as a library (one link at a
  // time: lld keeps global state between links).
  static bool link(const std::string &object, std::string &code, std::string &error) {
    static std::mutex lldMutex;
    std::lock_guard<std::mutex> lock(lldMutex);
    TempFile in, out;
    int fd = -1;
    if (llvm::sys::fs::createTemporaryFile("mdl-gpu", "o", fd, in.path) ||
        llvm::sys::fs::createTemporaryFile("mdl-gpu", "hsaco", out.path)) {
      error = "cannot create a temporary file for the AMDGPU link";
      return false;
    }
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << object;
    }
    std::string messages;
    llvm::raw_string_ostream diag(messages);
    const char *args[] = {"ld.lld",        "-shared", "--no-undefined",
                          in.path.c_str(), "-o",      out.path.c_str()};
    lld::Result r = lld::lldMain(args, diag, diag, {{lld::Gnu, &lld::elf::link}});
    if (r.retCode != 0) {
      error = "lld could not link the AMDGPU code object: " + diag.str();
      return false;
    }
    auto buf = llvm::MemoryBuffer::getFile(out.path);
    if (!buf) {
      error = "cannot read the linked AMDGPU code object";
      return false;
    }
    code = (*buf)->getBuffer().str();
    return true;
  }

  std::unique_ptr<llvm::TargetMachine> tm_;
};

} // namespace

std::unique_ptr<GpuTarget> makeAmdgpuTarget(const std::string &arch, std::string &error) {
  auto tm = makeTargetMachine(kTriple, arch, "", error);
  if (!tm)
    return nullptr;
  return std::make_unique<AmdgpuTarget>(arch, std::move(tm));
}

} // namespace mdl::backend::hip
