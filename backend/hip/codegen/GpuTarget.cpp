// What the GPU targets share (see GpuTarget.h): choosing a family by name,
// creating an LLVM target machine for it, the O2 pipeline, and emitting an
// object or assembly through the target machine.
#include "backend/hip/codegen/GpuTarget.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <mutex>

namespace mdl::backend::hip {

std::unique_ptr<GpuTarget> makeGpuTarget(const std::string &target, std::string &error) {
  std::optional<GpuCodeFormat> f = codeFormatOf(target);
  if (!f || !isKnownGpuTarget(target)) {
    error = "unknown GPU target '" + target + "' (known: " + knownGpuTargetList() + ")";
    return nullptr;
  }
  switch (*f) {
  case GpuCodeFormat::AmdgpuCodeObject:
    return makeAmdgpuTarget(target, error);
  case GpuCodeFormat::Ptx:
    return makeNvptxTarget(target, error);
  case GpuCodeFormat::Spir64Bitcode:
    return makeSpir64Target();
  }
  return nullptr;
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const std::string &triple,
                                                       const std::string &cpu,
                                                       const std::string &features,
                                                       std::string &error) {
  // Only the two GPU back ends: the host's is the JIT's business.
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string lookupError;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!t) {
    error = "LLVM has no back end for " + triple + ": " + lookupError;
    return nullptr;
  }
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(triple, cpu, features, opts,
                                                                 llvm::Reloc::PIC_, std::nullopt,
                                                                 llvm::CodeGenOptLevel::Default));
  if (!tm)
    error = "LLVM cannot make a target machine for " + triple + " " + cpu;
  return tm;
}

void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::PassBuilder pb(&tm);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

bool emitWithTargetMachine(llvm::Module &m, llvm::TargetMachine &tm, bool assembly,
                           std::string &out, std::string &error) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr,
                             assembly ? llvm::CodeGenFileType::AssemblyFile
                                      : llvm::CodeGenFileType::ObjectFile)) {
    error = "the " + tm.getTargetTriple().str() + " back end cannot emit this file type";
    return false;
  }
  codegen.run(m);
  out.assign(buffer.data(), buffer.size());
  return true;
}

} // namespace mdl::backend::hip
