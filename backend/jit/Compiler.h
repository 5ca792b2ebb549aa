// Internal to the JIT: LLVM IR to object files for the host CPU, and the
// cache of compiled objects.
//
// ObjectCompiler optimizes a module at O2 for the host CPU (AVX-512 where
// the machine has it), with glibc's libmvec registered as the vector form
// of expf, tanhf, erff, logf, sinf, cosf and powf (LLVM 19's own libmvec
// table has no 16-lane entries), and emits an object file.
//
// CompileCache keeps objects by a 64-bit key (a hash of the function's IR
// and of everything else that shapes its code): in memory for the process,
// and as DIR/KEY.o when a cache directory is given. A file on disk carries
// its size and checksum: a damaged one is dropped and recompiled.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetLibraryInfoImpl;
}

namespace mdl::backend::jit {

class ObjectCompiler {
public:
  static llvm::Expected<std::unique_ptr<ObjectCompiler>> create(int optLevel);
  ~ObjectCompiler();

  /// Optimizes `m` (which must use dataLayout() and triple()) and returns its
  /// object file. `light`: code that runs once per call, straight-line
  /// calls and copies (a host function without loops), gets no IR
  /// optimization and the fast instruction selector and register allocator
  /// (ResNet-50's host function: 160 ms of compilation at O2, 15 at O0).
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> compile(llvm::Module &m,
                                                               bool light = false);

  const llvm::DataLayout &dataLayout() const { return layout_; }
  const llvm::Triple &triple() const { return tm_->getTargetTriple(); }
  /// CPU, features and optimization level: part of every cache key.
  const std::string &targetId() const { return targetId_; }

private:
  ObjectCompiler(std::unique_ptr<llvm::TargetMachine> tm, int optLevel);
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::TargetLibraryInfoImpl> tlii_;
  llvm::DataLayout layout_;
  int optLevel_;
  std::string targetId_;
};

class CompileCache {
public:
  /// `dir` empty: memory only.
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}

  /// The object stored under `key`, or null.
  std::unique_ptr<llvm::MemoryBuffer> lookup(uint64_t key);
  void store(uint64_t key, llvm::StringRef object);

  int memoryHits = 0, diskHits = 0;
  /// Entries found damaged on disk ("PATH: why"), removed so that they are
  /// compiled again; the JIT reports each as a warning (W0703).
  std::vector<std::string> dropped;

private:
  std::string path(uint64_t key) const;
  std::string dir_;
};

} // namespace mdl::backend::jit
