// The JIT backend (see JitRunner.h).
#include "backend/jit/JitRunner.h"
#include "backend/jit/BufferPlan.h"
#include "backend/jit/Codegen.h"
#include "backend/jit/Compiler.h"
#include "backend/jit/ConvPrimitive.h"
#include "backend/jit/Pooling.h"
#include "backend/jit/KernelUnits.h"
#include "backend/jit/Runtime.h"
#include "ir/text/Printer.h"
#include "ir/passes/Fuse.h"
#include "stdlib/Registry.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/thread.h>
#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <omp.h>
#include <sstream>
#include <unistd.h>

namespace mdl::backend::jit {

using namespace ir;

namespace {

/// Changes whenever generated code changes meaning: part of every cache key.
constexpr const char *kCodegenVersion = "mdl-jit-7"; // 3: interrupt checks at loop back-edges; 4: typed device copies; 5: in-place updates, inline indexing; 6: shared kernels; 7: products of halves

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}


} // namespace

// Where the fatal-error handler (below) reports: set before each compile.
static std::string fatalFile = "mdl";
static std::atomic<bool> fatalJson{false};

void initializeJit() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // An error LLVM cannot recover from ends the process; say so the way
    // mdl reports everything else (a code, a reason, exit status 1) rather
    // than with LLVM's bare "LLVM ERROR".
    llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
      std::string what = std::string("internal error in LLVM: ") + reason +
                         " (please report this; --backend=interp runs without LLVM)";
      Diagnostic d;
      d.code = "E0900";
      d.loc.file = internFile(fatalFile);
      d.message = what;
      std::string msg = fatalJson.load() ? diagnosticJson(d) + "\n" : diagnosticLine(d);
      ssize_t ignored = ::write(2, msg.data(), msg.size());
      (void)ignored;
      std::_Exit(1);
    });
    // LLVM's own options, for investigating the JIT (-time-passes, ...).
    if (const char *args = std::getenv("MDL_LLVM_ARGS")) {
      std::vector<std::string> words = {"mdl"};
      std::istringstream in(args);
      for (std::string w; in >> w;)
        words.push_back(w);
      std::vector<const char *> argv;
      for (auto &w : words)
        argv.push_back(w.c_str());
      llvm::cl::ParseCommandLineOptions(int(argv.size()), argv.data());
    }
  });
}

struct JitRunner::Impl {
  Impl(const Module &m, DeviceSet &devices, DiagnosticEngine &diags, std::ostream &out,
       JitOptions opts)
      : m(m), devices(devices), diags(diags), out(out), opts(std::move(opts)),
        cache(this->opts.cacheDir) {}

  const Module &m;
  DeviceSet &devices;
  DiagnosticEngine &diags;
  std::ostream &out;
  JitOptions opts;
  CompileCache cache;
  RuntimeContext ctx;
  std::unique_ptr<ObjectCompiler> compiler;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<bool> hostMemory, inlineSegments;
  std::vector<FunctionPlan> plans;
  std::vector<Tensor> globals;
  std::vector<std::shared_ptr<void>> memory; // arenas and device copies of globals
  std::vector<std::unique_ptr<SegmentHandle>> segments;
  std::vector<std::unique_ptr<ConvPrimitive>> convolutions;
  std::vector<const FunctionPlan *> convolutionPlans; // where each is
  std::map<std::string, int32_t (*)(void **, void **)> entries;
  JitStats stats;
  bool compiled = false, loaded = false;

  bool internal(const std::string &what) {
    diags.error("E0900", {}, "internal error in the JIT: " + what + " (please report this)");
    return false;
  }
  bool internal(llvm::Error e) { return internal(llvm::toString(std::move(e))); }

  int space(int device) const {
    return device >= 0 && size_t(device) < hostMemory.size() && !hostMemory[size_t(device)]
               ? device
               : -1;
  }

  void releaseSegments() { segments.clear(); } // unloads them

  bool compile();
  bool load(const std::vector<Tensor> &globalValues);
  std::optional<std::vector<Tensor>> call(const std::string &name, const std::vector<Tensor> &args);
  std::shared_ptr<void> allocate(int space, int64_t bytes);
};

bool JitRunner::Impl::compile() {
  if (compiled)
    return true;
  if (!opts.sourceFile.empty())
    fatalFile = opts.sourceFile;
  fatalJson = opts.jsonDiagnostics;
  initializeJit();
  // Where each device's values live (its runtime's memory), and whether its
  // segments become host code (its compile-time half's explicit say).
  hostMemory.assign(m.devices.size(), true);
  inlineSegments.assign(m.devices.size(), true);
  for (size_t d = 0; d < m.devices.size(); ++d)
    if (devices.isOpen(int(d))) {
      DeviceRuntime &rt = devices.runtime(int(d));
      hostMemory[d] = rt.iface->host_memory != 0;
      inlineSegments[d] = rt.backend->inlineIntoHost(*rt.iface);
    }
  ctx.module = &m;
  ctx.devices = &devices;
  ctx.diags = &diags;
  ctx.out = &out;
  ctx.packed = makePackedOperands();
  ctx.call = [this](const std::string &fn, const std::vector<Tensor> &args,
                    std::vector<Tensor> &results) -> std::optional<std::string> {
    auto r = call(fn, args);
    if (!r)
      return "call of @" + fn + " failed";
    results = std::move(*r);
    return std::nullopt;
  };

  // f32 products in host code go to oneDNN, which prepares its kernels on
  // a thread of its own: during compilation when a core is free, after it
  // otherwise (it would slow compilation down by as much as it saves).
  bool products = false;
  for (auto &f : m.functions)
    walk(*f->body, [&](const Operation &op) {
      products |= op.kind == OpKind::Matmul && op.results[0]->type.dtype == DType::F32 &&
                  (op.device < 0 || size_t(op.device) >= inlineSegments.size() ||
                   inlineSegments[size_t(op.device)]);
    });
  auto comp = ObjectCompiler::create(opts.optLevel);
  if (!comp)
    return internal(comp.takeError());
  compiler = std::move(*comp);
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return internal(jtmb.takeError());
  auto j = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!j)
    return internal(j.takeError());
  jit = std::move(*j);
  char prefix = jit->getDataLayout().getGlobalPrefix();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process)
    return internal(process.takeError());
  jit->getMainJITDylib().addGenerator(std::move(*process));
  // glibc's vector math (the wide forms of expf, tanhf, ...).
  if (auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix))
    jit->getMainJITDylib().addGenerator(std::move(*mvec));
  else
    llvm::consumeError(mvec.takeError());

  std::string bits;
  for (size_t d = 0; d < hostMemory.size(); ++d)
    bits += std::string(hostMemory[d] ? "h" : "d") + (inlineSegments[d] ? "i" : "r");
  PrintOptions po;
  po.locations = false;
  // Plans and cache keys first (cheap), then the functions that miss the
  // cache are compiled on all cores, each worker with its own
  // TargetMachine and each function in its own LLVMContext.
  size_t n = m.functions.size();
  std::vector<uint64_t> keys(n);
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects(n);
  std::vector<size_t> todo;
  for (size_t i = 0; i < n; ++i) {
    const Function &f = *m.functions[i];
    plans.push_back(planBuffers(m, f, hostMemory, inlineSegments));
    const FunctionPlan &plan = plans.back();
    ++stats.functions;
    stats.peakIntermediateBytes += plan.arenaBytes.count(-1) ? plan.arenaBytes.at(-1) : 0;
    stats.unsharedIntermediateBytes += plan.unsharedBytes;
    stats.inPlaceUpdates += int(plan.inPlace.size());
    for (auto &[sp, bytes] : plan.arenaBytes)
      if (sp >= 0)
        stats.deviceIntermediateBytes[sp] += bytes;
    walk(*f.body, [&](const Operation &op) {
      if (op.kind == OpKind::Fusion)
        ++stats.fusions;
    });
    std::ostringstream text;
    printFunction(m, f, text, po);
    std::string keyText = std::string(kCodegenVersion) + "\n" + compiler->targetId() + "\n" +
                          bits + "\n" + text.str();
    keys[i] = llvm::xxh3_64bits(llvm::StringRef(keyText));
    objects[i] = cache.lookup(keys[i]);
    for (const std::string &why : cache.dropped)
      diags.warning("W0703", f.loc, "dropped a damaged compile-cache entry, compiling '" +
                                        f.name + "' again: " + why);
    cache.dropped.clear();
    if (objects[i])
      ++stats.cached;
    else
      todo.push_back(i);
  }
  // Large fusions share kernels, compiled in kernel units (KernelUnits.h)
  // and cached by their kernels, beside the functions that call them.
  KernelTable kernels =
      planKernels(m, plans, std::string(kCodegenVersion) + "\n" + compiler->targetId());
  stats.sharedFusions = kernels.sharedFusions;
  stats.sharedKernels = int(kernels.kernels.size());
  stats.kernelUnits = int(kernels.units.size());
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> unitObjects(kernels.units.size());
  // Work items: functions and kernel units, the costliest first (so that the
  // last one to finish is a small one).
  struct Item {
    bool unit;
    size_t index;
    int64_t cost;
  };
  std::vector<Item> items;
  std::vector<bool> hasLoops(n, false);
  for (size_t i : todo) {
    int64_t cost = 0;
    walk(*m.functions[i]->body, [&](const Operation &op) {
      ++cost;
      hasLoops[i] = hasLoops[i] || op.kind == OpKind::For || op.kind == OpKind::While;
    });
    items.push_back({false, i, cost});
  }
  for (size_t u = 0; u < kernels.units.size(); ++u) {
    unitObjects[u] = cache.lookup(kernels.units[u].key);
    for (const std::string &why : cache.dropped)
      diags.warning("W0703", kernels.kernels[kernels.units[u].kernels[0]].fusion->loc,
                    "dropped a damaged compile-cache entry, compiling a kernel unit again: " +
                        why);
    cache.dropped.clear();
    if (unitObjects[u])
      ++stats.kernelUnitsCached;
    else
      items.push_back({true, u, 4 * int64_t(kernels.units[u].cost)});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item &a, const Item &b) { return a.cost > b.cost; });
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (const char *env = std::getenv("MDL_JIT_THREADS"))
    cores = unsigned(std::max(1, std::atoi(env)));
  if (products && items.size() < cores)
    startGemmWarmup();
  if (!items.empty()) {
    auto t0 = Clock::now();
    std::vector<std::string> errors(items.size());
    std::atomic<size_t> next{0};
    auto work = [&](ObjectCompiler *oc) {
      for (size_t k; (k = next++) < items.size();) {
        const Item &it = items[k];
        llvm::LLVMContext context;
        std::string name = it.unit ? "kernels." + std::to_string(it.index)
                                   : m.functions[it.index]->name;
        llvm::Module mod(name, context);
        mod.setDataLayout(oc->dataLayout());
        mod.setTargetTriple(oc->triple().str());
        bool ok = it.unit ? emitKernelUnit(mod, kernels, kernels.units[it.index], errors[k])
                          : emitFunction(mod, m, *m.functions[it.index], plans[it.index],
                                         kernels.shared[it.index], errors[k]);
        if (!ok)
          continue;
        auto o = oc->compile(mod, !it.unit && !hasLoops[it.index]);
        if (!o)
          errors[k] = llvm::toString(o.takeError());
        else
          (it.unit ? unitObjects[it.index] : objects[it.index]) = std::move(*o);
      }
    };
    size_t workers = std::min<size_t>(items.size(), std::min(cores, 8u));
    std::vector<std::unique_ptr<ObjectCompiler>> extra;
    std::vector<llvm::thread> threads;
    for (size_t w = 1; w < workers; ++w) {
      auto oc = ObjectCompiler::create(opts.optLevel);
      if (!oc) {
        llvm::consumeError(oc.takeError());
        break;
      }
      extra.push_back(std::move(*oc));
      ObjectCompiler *p = extra.back().get();
      // Code generation recurses over large functions: a large stack.
      threads.emplace_back(std::optional<unsigned>(256u << 20), [&work, p] { work(p); });
    }
    work(compiler.get());
    for (auto &t : threads)
      t.join();
    for (size_t k = 0; k < items.size(); ++k) {
      const Item &it = items[k];
      const std::unique_ptr<llvm::MemoryBuffer> &o =
          it.unit ? unitObjects[it.index] : objects[it.index];
      std::string what = it.unit ? "kernel unit " + std::to_string(it.index)
                                 : "'" + m.functions[it.index]->name + "'";
      if (!o)
        return internal(errors[k].empty() ? "no object for " + what : errors[k]);
      if (it.unit) {
        cache.store(kernels.units[it.index].key, o->getBuffer());
        ++stats.kernelUnitsCompiled;
      } else {
        cache.store(keys[it.index], o->getBuffer());
        ++stats.compiled;
      }
    }
    stats.codegenMs += msSince(t0);
  }
  if (products)
    startGemmWarmup();
  for (auto &o : unitObjects)
    if (auto e = jit->addObjectFile(std::move(o)))
      return internal(std::move(e));
  for (size_t i = 0; i < n; ++i)
    if (auto e = jit->addObjectFile(std::move(objects[i])))
      return internal(std::move(e));
  compiled = true;
  return true;
}

std::shared_ptr<void> JitRunner::Impl::allocate(int sp, int64_t bytes) {
  size_t size = size_t((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  if (sp < 0) {
    void *p = std::aligned_alloc(64, size);
    return p ? std::shared_ptr<void>(p, [](void *q) { std::free(q); }) : nullptr;
  }
  DeviceRuntime &rt = devices.runtime(sp);
  void *p = rt.iface->alloc(rt.dev, size);
  const mdl_device_interface *iface = rt.iface;
  mdl_device *dev = rt.dev;
  return p ? std::shared_ptr<void>(p, [iface, dev](void *q) { iface->release_memory(dev, q); })
           : nullptr;
}

bool JitRunner::Impl::load(const std::vector<Tensor> &globalValues) {
  if (loaded)
    return true;
  if (!compile())
    return false;
  auto t0 = Clock::now();
  if (globalValues.size() != m.globals.size())
    return internal("load() got " + std::to_string(globalValues.size()) + " globals for " +
                    std::to_string(m.globals.size()));
  globals = globalValues;
  for (const Tensor &g : globals)
    if (g.valid() && g.byteSize() > 0) {
      const char *p = static_cast<const char *>(g.raw());
      ctx.globalRanges.push_back({p, p + g.byteSize()});
    }
  std::sort(ctx.globalRanges.begin(), ctx.globalRanges.end());
  // `cpu(threads = N)`: the host's kernels and loops use N threads.
  for (const Device &d : m.devices)
    if (d.intArg("threads", 0) > 0)
      omp_set_num_threads(int(d.intArg("threads", 0)));

  std::map<std::string, const void *> symbols;
  symbols[kContextSymbol] = &ctx;
  symbols["mdl_rt_kernel"] = reinterpret_cast<const void *>(&mdl_rt_kernel);
  symbols["mdl_rt_matmul"] = reinterpret_cast<const void *>(&mdl_rt_matmul);
  symbols["mdl_rt_conv"] = reinterpret_cast<const void *>(&mdl_rt_conv);
  symbols["mdl_rt_window"] = reinterpret_cast<const void *>(&mdl_rt_window);
  symbols["mdl_rt_parallel_for"] = reinterpret_cast<const void *>(&mdl_rt_parallel_for);
  symbols["mdl_rt_copy"] = reinterpret_cast<const void *>(&mdl_rt_copy);
  symbols["mdl_rt_strided_copy"] = reinterpret_cast<const void *>(&mdl_rt_strided_copy);
  symbols["mdl_rt_segment"] = reinterpret_cast<const void *>(&mdl_rt_segment);
  symbols["mdl_rt_print"] = reinterpret_cast<const void *>(&mdl_rt_print);
  symbols["mdl_rt_interrupted"] = reinterpret_cast<const void *>(&mdl_rt_interrupted);
  // Without a flag to watch (mdl run), loops read one that is never set.
  static const int32_t neverInterrupted = 0;
  symbols[kInterruptSymbol] =
      opts.interrupt ? static_cast<const void *>(opts.interrupt) : &neverInterrupted;
  std::map<std::pair<int, int>, const void *> globalOn; // (global, space)
  for (size_t fi = 0; fi < m.functions.size(); ++fi) {
    const Function &f = *m.functions[fi];
    const FunctionPlan &plan = plans[fi];
    for (auto &[sp, bytes] : plan.arenaBytes) {
      std::shared_ptr<void> arena = allocate(sp, bytes);
      if (!arena) {
        diags.error("E0404", f.loc,
                    "out of memory: cannot allocate " + std::to_string(bytes) +
                        " bytes of intermediates for '" + f.name + "'" +
                        (sp >= 0 ? " on '" + m.devices[size_t(sp)].name + "'" : ""));
        return false;
      }
      symbols[arenaSymbol(f.name, sp)] = arena.get();
      memory.push_back(arena);
    }
    for (size_t n = 0; n < plan.handles.size(); ++n) {
      const Operation *op = plan.handles[n];
      const void *addr = op;
      if (op->kind == OpKind::Segment) {
        auto h = std::make_unique<SegmentHandle>();
        h->op = op;
        DeviceRuntime &rt = devices.runtime(op->device);
        // The device compiles its segment (without the JIT's fusions) and
        // loads it; the generated code runs it through mdl_rt_segment.
        std::string error;
        ValueMap map;
        h->source = std::make_unique<Operation>(OpKind::Segment, op->loc);
        cloneRegionInto(*op->regions[0], *h->source->addRegion(), map);
        passes::unfuse(*h->source->regions[0]);
        if (!h->loaded.load(rt, *h->source, error)) {
          diags.error("E0403", op->loc, "device '" + m.devices[size_t(op->device)].name +
                                            "' cannot run this segment: " + error);
          return false;
        }
        addr = h.get();
        segments.push_back(std::move(h));
      } else if (op->kind == OpKind::FusedConvolution) {
        // Its oneDNN primitive, made now (oneDNN generates code); a kernel
        // that is a global or a constant is reordered once.
        Root::Kind k = plan.rootOf(op->operands[1]).kind;
        auto c = ConvPrimitive::create(*op, k == Root::Kind::Global || k == Root::Kind::Constant);
        addr = c.get();
        convolutions.push_back(std::move(c));
        convolutionPlans.push_back(&plan);
      }
      symbols[handleSymbol(f.name, int(n))] = addr;
    }
    for (const Root &r : plan.roots) {
      if (r.kind != Root::Kind::Global)
        continue;
      std::string name = r.source->stringAttr("name");
      int g = m.findGlobal(name);
      auto key = std::make_pair(g, r.space);
      if (!globalOn.count(key)) {
        const Tensor &host = globals[size_t(g)];
        if (r.space < 0) {
          globalOn[key] = host.raw();
        } else {
          std::shared_ptr<void> copy = allocate(r.space, int64_t(host.byteSize()));
          DeviceRuntime &rt = devices.runtime(r.space);
          BufferList dst;
          if (copy)
            dst.add(copy.get(), host.type());
          if (!copy || rt.iface->copy_in(rt.dev, &dst.buffers[0], host.raw()) != 0) {
            diags.error("E0403", r.source->loc, "copying '" + name + "' to '" +
                                                    m.devices[size_t(r.space)].name +
                                                    "' failed: " + rt.iface->last_error(rt.dev));
            return false;
          }
          globalOn[key] = copy.get();
          memory.push_back(copy);
        }
      }
      symbols[globalSymbol(name, r.space)] = globalOn[key];
    }
  }
  // The primitives; a kernel that is a global in host memory is reordered
  // into oneDNN's layout now.
  std::vector<ConvPrimitive *> convs;
  std::vector<const void *> kernels;
  for (size_t i = 0; i < convolutions.size(); ++i) {
    convs.push_back(convolutions[i].get());
    const ir::Value *w = convs[i]->op().operands[1];
    const FunctionPlan &plan = *convolutionPlans[i];
    const ValueLoc &l = plan.loc(w);
    const Root &r = plan.rootOf(w);
    const void *data = nullptr;
    if (r.kind == Root::Kind::Global && r.space < 0 && l.contiguous) {
      auto it = globalOn.find({m.findGlobal(r.source->stringAttr("name")), -1});
      if (it != globalOn.end())
        data = static_cast<const char *>(it->second) +
               l.offset * int64_t(dtypeSize(w->type.dtype));
    }
    kernels.push_back(data);
  }
  ConvPrimitive::prepare(convs, kernels);
  if (std::getenv("MDL_JIT_TRACE"))
    for (size_t i = 0; i < convolutions.size(); ++i) {
      // Whether the plan put the output in the place of an operand (its
      // residual: BufferPlan's destinations).
      const Operation &op = convolutions[i]->op();
      const FunctionPlan &plan = *convolutionPlans[i];
      bool inPlace = false;
      for (const ir::Value *v : op.operands)
        inPlace |= plan.rep(plan.loc(v).root) == plan.rep(plan.loc(op.results[0].get()).root);
      std::fprintf(stderr, "jit: convolution at line %u:%u: %s%s\n", op.loc.line, op.loc.col,
                   convolutions[i]->description().c_str(),
                   inPlace ? ", computed in its residual's place" : "");
    }
  llvm::orc::SymbolMap map;
  for (auto &[name, addr] : symbols)
    map[jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                                       llvm::JITSymbolFlags::Exported};
  if (auto e = jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(map))))
    return internal(std::move(e));
  // Link now: every function, in one lookup (one linking session).
  llvm::orc::SymbolLookupSet names;
  for (auto &f : m.functions)
    names.add(jit->mangleAndIntern(functionSymbol(f->name)));
  auto found = jit->getExecutionSession().lookup(
      llvm::orc::makeJITDylibSearchOrder(&jit->getMainJITDylib()), std::move(names));
  if (!found)
    return internal(found.takeError());
  for (auto &f : m.functions)
    entries[f->name] = (*found)[jit->mangleAndIntern(functionSymbol(f->name))]
                           .getAddress()
                           .toPtr<int32_t (*)(void **, void **)>();
  stats.linkMs += msSince(t0);
  loaded = true;
  return true;
}

std::optional<std::vector<Tensor>> JitRunner::Impl::call(const std::string &name,
                                                         const std::vector<Tensor> &args) {
  if (!loaded) {
    internal("call() before load()");
    return std::nullopt;
  }
  const Function *f = m.findFunction(name);
  if (!f) {
    diags.error("E0101", {}, "no function '" + name + "'");
    return std::nullopt;
  }
  auto it = entries.find(name);
  if (it == entries.end()) {
    auto t0 = Clock::now();
    auto addr = jit->lookup(functionSymbol(name));
    if (!addr) {
      internal(addr.takeError());
      return std::nullopt;
    }
    stats.linkMs += msSince(t0);
    it = entries.emplace(name, addr->toPtr<int32_t (*)(void **, void **)>()).first;
  }
  std::vector<void *> argPtrs, resultPtrs;
  std::vector<std::shared_ptr<void>> keep;
  for (size_t i = 0; i < args.size(); ++i) {
    int d = i < f->body->args.size() ? f->body->args[i]->device : -1;
    int sp = space(d);
    if (sp < 0) {
      argPtrs.push_back(args[i].valid() ? args[i].raw() : nullptr);
      continue;
    }
    std::shared_ptr<void> buf = allocate(sp, int64_t(args[i].byteSize()));
    DeviceRuntime &rt = devices.runtime(sp);
    BufferList dst;
    if (buf)
      dst.add(buf.get(), args[i].type());
    // An absent argument is one another party of a multi-process device
    // gives (the driver has checked that only such a device reads it).
    const void *src = args[i].valid() ? args[i].raw() : nullptr;
    if (!buf || rt.iface->copy_in(rt.dev, &dst.buffers[0], src) != 0) {
      diags.error("E0403", f->loc, "copying an argument to '" + m.devices[size_t(sp)].name +
                                       "' failed: " + rt.iface->last_error(rt.dev));
      return std::nullopt;
    }
    argPtrs.push_back(buf.get());
    keep.push_back(buf);
  }
  std::vector<Tensor> results;
  std::vector<int> resultSpace;
  for (size_t i = 0; i < f->resultTypes.size(); ++i) {
    const TensorType &t = f->resultTypes[i];
    int sp = space(i < f->resultDevices.size() ? f->resultDevices[i] : -1);
    resultSpace.push_back(sp);
    Tensor host = Tensor::empty(t);
    if (!host.valid()) {
      diags.error("E0404", f->loc, "out of memory: cannot allocate a result " + t.str());
      return std::nullopt;
    }
    results.push_back(host);
    if (sp < 0) {
      resultPtrs.push_back(host.raw());
    } else {
      std::shared_ptr<void> buf = allocate(sp, t.byteSize());
      if (!buf) {
        diags.error("E0404", f->loc, "device '" + m.devices[size_t(sp)].name + "' is out of memory");
        return std::nullopt;
      }
      resultPtrs.push_back(buf.get());
      keep.push_back(buf);
    }
  }
  if (it->second(argPtrs.data(), resultPtrs.data()) != 0)
    return std::nullopt;
  for (size_t i = 0; i < results.size(); ++i) {
    if (resultSpace[i] < 0)
      continue;
    std::vector<int64_t> type = typeDescriptor(results[i].type());
    if (mdl_rt_copy(&ctx, -1, results[i].raw(), resultSpace[i], resultPtrs[i], type.data()) != 0)
      return std::nullopt;
  }
  return results;
}

JitRunner::JitRunner(const Module &m, DeviceSet &devices, DiagnosticEngine &diags,
                     std::ostream &out, JitOptions opts)
    : impl_(std::make_unique<Impl>(m, devices, diags, out, std::move(opts))) {}

JitRunner::~JitRunner() {
  finishGemmWarmup();
  if (impl_)
    impl_->releaseSegments();
}

bool JitRunner::compile() { return impl_->compile(); }
bool JitRunner::load(const std::vector<Tensor> &globals) { return impl_->load(globals); }
std::optional<std::vector<Tensor>> JitRunner::call(const std::string &fn,
                                                   const std::vector<Tensor> &args) {
  return impl_->call(fn, args);
}
const JitStats &JitRunner::stats() const { return impl_->stats; }

} // namespace mdl::backend::jit
