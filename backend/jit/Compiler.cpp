// Object compilation for the host and the compile cache (see Compiler.h).
#include "backend/jit/Compiler.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ctime>
#include <mutex>
#include <unistd.h>

namespace mdl::backend::jit {

namespace {

// glibc's AVX-512 (16 lanes, 'e') and AVX2 (8 lanes, 'd') vector math for
// the functions the fused loops call; LLVM 19 knows only 4 and 8 lanes of
// some of them.
std::vector<llvm::VecDesc> libmvecWide() {
  struct Fn {
    const char *scalar, *intrinsic, *name;
    bool binary;
  };
  static const Fn fns[] = {
      {"expf", "llvm.exp.f32", "expf", false}, {"logf", "llvm.log.f32", "logf", false},
      {"sinf", "llvm.sin.f32", "sinf", false}, {"cosf", "llvm.cos.f32", "cosf", false},
      {"tanhf", "llvm.tanh.f32", "tanhf", false}, {"erff", nullptr, "erff", false},
      {"powf", "llvm.pow.f32", "powf", true},
  };
  static std::vector<std::string> storage; // VecDesc holds StringRefs
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Fn &f : fns) {
      storage.push_back(std::string("_ZGVeN16") + (f.binary ? "vv_" : "v_") + f.name);
      storage.push_back(std::string("_ZGVdN8") + (f.binary ? "vv_" : "v_") + f.name);
    }
  });
  std::vector<llvm::VecDesc> out;
  size_t k = 0;
  for (const Fn &f : fns) {
    const std::string &n16 = storage[k++], &n8 = storage[k++];
    const char *abi16 = f.binary ? "_ZGV_LLVM_N16vv" : "_ZGV_LLVM_N16v";
    const char *abi8 = f.binary ? "_ZGV_LLVM_N8vv" : "_ZGV_LLVM_N8v";
    for (const char *scalar : {f.scalar, f.intrinsic}) {
      if (!scalar)
        continue;
      out.emplace_back(scalar, n16, llvm::ElementCount::getFixed(16), false, abi16);
      if (std::string(f.name) == "tanhf" || std::string(f.name) == "erff")
        out.emplace_back(scalar, n8, llvm::ElementCount::getFixed(8), false, abi8);
    }
  }
  // Doubles: 8 lanes.
  static const char *const dfns[][2] = {{"exp", "_ZGVeN8v_exp"}, {"log", "_ZGVeN8v_log"},
                                        {"sin", "_ZGVeN8v_sin"}, {"cos", "_ZGVeN8v_cos"},
                                        {"tanh", "_ZGVeN8v_tanh"}, {"erf", "_ZGVeN8v_erf"}};
  for (auto &d : dfns)
    out.emplace_back(d[0], d[1], llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v");
  out.emplace_back("pow", "_ZGVeN8vv_pow", llvm::ElementCount::getFixed(8), false,
                   "_ZGV_LLVM_N8vv");
  return out;
}

llvm::OptimizationLevel level(int o) {
  switch (o) {
  case 0: return llvm::OptimizationLevel::O0;
  case 1: return llvm::OptimizationLevel::O1;
  case 3: return llvm::OptimizationLevel::O3;
  default: return llvm::OptimizationLevel::O2;
  }
}

} // namespace

ObjectCompiler::ObjectCompiler(std::unique_ptr<llvm::TargetMachine> tm, int optLevel)
    : tm_(std::move(tm)), layout_(tm_->createDataLayout()), optLevel_(optLevel) {
  tlii_ = std::make_unique<llvm::TargetLibraryInfoImpl>(tm_->getTargetTriple());
  tlii_->addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                            tm_->getTargetTriple());
  tlii_->addVectorizableFunctions(libmvecWide());
  targetId_ = tm_->getTargetTriple().str() + "/" + tm_->getTargetCPU().str() + "/" +
              tm_->getTargetFeatureString().str() + "/O" + std::to_string(optLevel);
}

ObjectCompiler::~ObjectCompiler() = default;

llvm::Expected<std::unique_ptr<ObjectCompiler>> ObjectCompiler::create(int optLevel) {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  jtmb->setCodeGenOptLevel(optLevel == 0 ? llvm::CodeGenOptLevel::None
                                         : llvm::CodeGenOptLevel::Default);
  // Position-independent code reaches the runtime, the weights and the
  // arenas through the GOT, wherever they are in the address space.
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  jtmb->setCodeModel(llvm::CodeModel::Small);
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return tm.takeError();
  return std::unique_ptr<ObjectCompiler>(new ObjectCompiler(std::move(*tm), optLevel));
}

namespace {
/// CPU time of the calling thread, in ms: what MDL_JIT_TRACE reports beside
/// wall time, since on a shared machine wall time includes waiting for a
/// core.
double threadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}
} // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> ObjectCompiler::compile(llvm::Module &m,
                                                                             bool light) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  double c0 = threadCpuMs();
  if (optLevel_ > 0 && !light) {
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    llvm::PassBuilder pb(tm_.get(), pto);
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // Our library info, with the wide vector math, before the defaults.
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*tlii_); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(level(optLevel_)).run(m, mam);
  }
  // MDL_JIT_DUMP=DIR: the optimized IR of each function, for investigation.
  if (const char *dir = std::getenv("MDL_JIT_DUMP")) {
    std::error_code ec;
    llvm::raw_fd_ostream ir(std::string(dir) + "/" + m.getModuleIdentifier() + ".ll", ec);
    if (!ec)
      m.print(ir, nullptr);
  }
  auto t1 = Clock::now();
  double c1 = threadCpuMs();
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  codegen.add(new llvm::TargetLibraryInfoWrapperPass(*tlii_));
  llvm::CodeGenOptLevel level = tm_->getOptLevel();
  if (light)
    tm_->setOptLevel(llvm::CodeGenOptLevel::None);
  bool cannot = tm_->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile);
  if (!cannot)
    codegen.run(m);
  tm_->setOptLevel(level);
  if (cannot)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the target cannot emit object files");
  // MDL_JIT_TRACE=1: where compile time goes, per function.
  if (std::getenv("MDL_JIT_TRACE"))
    std::fprintf(stderr,
                 "jit: %s%s: optimization %.2f ms (cpu %.2f), code generation %.2f ms (cpu %.2f)\n",
                 m.getModuleIdentifier().c_str(), light ? " (light)" : "",
                 std::chrono::duration<double, std::milli>(t1 - t0).count(), c1 - c0,
                 std::chrono::duration<double, std::milli>(Clock::now() - t1).count(),
                 threadCpuMs() - c1);
  return llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(buffer.data(), buffer.size()),
                                              m.getModuleIdentifier());
}

namespace {
std::mutex cacheMutex;
std::map<uint64_t, std::string> &memoryCache() {
  static std::map<uint64_t, std::string> objects;
  return objects;
}
} // namespace

std::string CompileCache::path(uint64_t key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.o", static_cast<unsigned long long>(key));
  return dir_ + "/" + name;
}

namespace {

// A cache file is a header, then the object: the magic, the object's size
// and its xxh3 checksum, so that a truncated, overwritten or foreign file
// is recognized instead of being linked.
constexpr char kMagic[8] = {'m', 'd', 'l', 'o', 'b', 'j', '1', '\0'};
constexpr size_t kHeaderBytes = sizeof kMagic + 2 * sizeof(uint64_t);

std::string header(llvm::StringRef object) {
  std::string h(kMagic, sizeof kMagic);
  uint64_t size = object.size(), sum = llvm::xxh3_64bits(object);
  h.append(reinterpret_cast<const char *>(&size), sizeof size);
  h.append(reinterpret_cast<const char *>(&sum), sizeof sum);
  return h;
}

/// The object inside a cache file, or why there is none.
bool unpack(llvm::StringRef file, llvm::StringRef &object, std::string &why) {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    why = "not an mdl cache entry";
    return false;
  }
  uint64_t size, sum;
  std::memcpy(&size, file.data() + sizeof kMagic, sizeof size);
  std::memcpy(&sum, file.data() + sizeof kMagic + sizeof size, sizeof sum);
  object = file.drop_front(kHeaderBytes);
  if (object.size() != size) {
    why = "its object has " + std::to_string(object.size()) + " bytes, its header says " +
          std::to_string(size);
    return false;
  }
  if (llvm::xxh3_64bits(object) != sum) {
    why = "its checksum does not match";
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<llvm::MemoryBuffer> CompileCache::lookup(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = memoryCache().find(key);
    if (it != memoryCache().end()) {
      ++memoryHits;
      return llvm::MemoryBuffer::getMemBufferCopy(it->second, "cached");
    }
  }
  if (dir_.empty())
    return nullptr;
  std::string file = path(key);
  auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return nullptr;
  llvm::StringRef object;
  std::string why;
  if (!unpack((*buf)->getBuffer(), object, why)) {
    // Dropped, so that this run recompiles and stores a good copy.
    llvm::sys::fs::remove(file);
    dropped.push_back(file + ": " + why);
    return nullptr;
  }
  ++diskHits;
  std::lock_guard<std::mutex> lock(cacheMutex);
  memoryCache()[key] = object.str();
  return llvm::MemoryBuffer::getMemBufferCopy(object, "cached");
}

void CompileCache::store(uint64_t key, llvm::StringRef object) {
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    memoryCache()[key] = object.str();
  }
  if (dir_.empty())
    return;
  // Written beside, then renamed: a concurrent reader never sees half a file.
  std::string final = path(key), tmp = final + ".tmp" + std::to_string(::getpid());
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return;
    os << header(object) << object;
  }
  if (llvm::sys::fs::rename(tmp, final))
    llvm::sys::fs::remove(tmp);
}

} // namespace mdl::backend::jit
