// Loading and running GPU programs (see LoadedProgram.h).
#include "backend/hip/runtime/LoadedProgram.h"
#include "backend/runtime/DeviceBackend.h"

namespace mdl::backend::hip {

namespace {

using llvm::Error;

Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

const char *formatName(GpuCodeFormat f) {
  switch (f) {
  case GpuCodeFormat::AmdgpuCodeObject:
    return "an AMDGPU code object";
  case GpuCodeFormat::Ptx:
    return "PTX";
  case GpuCodeFormat::Spir64Bitcode:
    return "spir64 bitcode";
  }
  return "unknown code";
}

// Bytes of memory behind a reference of `p` (parse() has checked that the
// reference exists and that its offset is inside).
uint64_t memoryBytes(const GpuProgram &p, const GpuRef &r) {
  switch (r.kind) {
  case GpuRef::Kind::Input:
    return uint64_t(bytesOf(p.inputs[r.index]));
  case GpuRef::Kind::Output:
    return uint64_t(bytesOf(p.outputs[r.index]));
  case GpuRef::Kind::Scratch:
    return p.scratchBytes;
  case GpuRef::Kind::Constant:
    return p.constants.size();
  case GpuRef::Kind::Int64:
    return 0;
  }
  return 0;
}

// Whether `elements` elements of `elem` bytes from `r` stay inside its
// memory.
bool fits(const GpuProgram &p, const GpuRef &r, int64_t elements, int64_t elem) {
  if (r.kind == GpuRef::Kind::Int64 || elements < 0)
    return false;
  uint64_t room = memoryBytes(p, r) - uint64_t(r.offset);
  return uint64_t(elements) <= room / uint64_t(elem);
}

// The elements a row-major operand of `rows` x `cols` with leading
// dimension `ld`, `batch` times `stride` apart, spans (-1 when impossible).
int64_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  if (rows < 0 || cols < 0 || batch < 1 || stride < 0 || (rows > 1 && ld < cols))
    return -1;
  if (rows == 0 || cols == 0)
    return 0;
  constexpr int64_t kMax = int64_t(1) << 60;
  if (rows > kMax / std::max<int64_t>(ld, 1) || batch > kMax / std::max<int64_t>(stride, 1))
    return -1;
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

// What parse() leaves to the runtime: the sizes a copy and a product
// touch, checked against their buffers.
Error checkExtents(const GpuProgram &p) {
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const GpuStep &s = p.steps[i];
    std::string where = "step " + std::to_string(i);
    if (s.kind == GpuStep::Kind::Copy) {
      if (!fits(p, s.copy.dst, int64_t(s.copy.bytes), 1) ||
          !fits(p, s.copy.src, int64_t(s.copy.bytes), 1) || int64_t(s.copy.bytes) < 0)
        return fail(where + ": a copy of " + std::to_string(s.copy.bytes) +
                    " bytes runs past its buffers");
    } else if (s.kind == GpuStep::Kind::Gemm) {
      const GpuGemm &g = s.gemm;
      if (g.dtype < MDL_BOOL || g.dtype > MDL_F64)
        return fail(where + ": a product of unknown element type " + std::to_string(g.dtype));
      int64_t elem = int64_t(ir::dtypeSize(dtypeOfAbi(g.dtype)));
      int64_t a = g.transA ? span(g.k, g.m, g.lda, g.batch, g.strideA)
                           : span(g.m, g.k, g.lda, g.batch, g.strideA);
      int64_t b = g.transB ? span(g.n, g.k, g.ldb, g.batch, g.strideB)
                           : span(g.k, g.n, g.ldb, g.batch, g.strideB);
      int64_t c = span(g.m, g.n, g.ldc, g.batch, g.strideC);
      if (!fits(p, g.a, a, elem) || !fits(p, g.b, b, elem) || !fits(p, g.c, c, elem))
        return fail(where + ": a product of " + std::to_string(g.m) + "x" + std::to_string(g.k) +
                    " by " + std::to_string(g.k) + "x" + std::to_string(g.n) + " (batch " +
                    std::to_string(g.batch) + ") reaches past its operands");
    }
  }
  return Error::success();
}

} // namespace

llvm::Expected<std::unique_ptr<LoadedProgram>> LoadedProgram::load(DeviceState &device,
                                                                   const void *data, size_t size) {
  std::string error;
  std::optional<GpuProgram> p = GpuProgram::parse(data, size, error);
  if (!p)
    return fail(error);
  std::unique_ptr<LoadedProgram> lp(new LoadedProgram(device));
  lp->program_ = std::move(*p);
  if (Error e = lp->prepare())
    return e;
  return lp;
}

Error LoadedProgram::prepare() {
  const GpuProgram &p = program_;
  const GpuDeviceInfo &info = device_.gpu->info();
  if (p.target != info.target)
    return fail("the GPU program was compiled for " + p.target + ", and this device runs " +
                info.target + " code");
  std::optional<GpuCodeFormat> format = codeFormatOf(p.target);
  if (!format || *format != p.codeFormat)
    return fail("the GPU program for " + p.target + " carries " + formatName(p.codeFormat));
  if (Error e = checkExtents(p))
    return e;
  for (const GpuKernel &k : p.kernels) {
    uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
    if (info.maxBlockThreads && threads > info.maxBlockThreads)
      return fail("kernel '" + k.name + "' has blocks of " + std::to_string(threads) +
                  " threads, and this device runs at most " + std::to_string(info.maxBlockThreads));
    if (info.maxSharedBytes && k.sharedBytes > info.maxSharedBytes)
      return fail("kernel '" + k.name + "' needs " + std::to_string(k.sharedBytes) +
                  " bytes of work-group memory, and this device has " +
                  std::to_string(info.maxSharedBytes));
  }
  auto module = device_.gpu->loadModule(p.code);
  if (!module)
    return module.takeError();
  module_ = std::move(*module);
  for (const GpuKernel &k : p.kernels) {
    auto handle = module_->kernel(k.name);
    if (!handle)
      return handle.takeError();
    kernels_.push_back(*handle);
  }
  for (const GpuStep &s : p.steps) {
    const GpuLaunch *l = s.kind == GpuStep::Kind::Launch ? &s.launch
                         : s.kind == GpuStep::Kind::Gemm ? &s.gemm.fallback
                                                         : nullptr;
    tags_.push_back(l ? device_.stats.row(p.kernels[l->kernel].name, s.what) : -1);
    bool epilogue = s.kind == GpuStep::Kind::Gemm && s.gemm.hasEpilogue;
    epilogueTags_.push_back(
        epilogue ? device_.stats.row(p.kernels[s.gemm.epilogue.kernel].name, s.what) : -1);
    // Made at the first product the BLAS runs: the BLAS opens then.
    blasTags_.push_back(-1);
  }
  if (p.scratchBytes) {
    auto m = device_.alloc(p.scratchBytes);
    if (!m)
      return fail("allocating " + std::to_string(p.scratchBytes) +
                  " bytes of scratch memory: " + llvm::toString(m.takeError()));
    scratch_ = *m;
  }
  if (Error e = clearErrorRecord())
    return e;
  if (!p.constants.empty()) {
    auto m = device_.alloc(p.constants.size());
    if (!m)
      return fail("allocating " + std::to_string(p.constants.size()) +
                  " bytes of constants: " + llvm::toString(m.takeError()));
    constants_ = *m;
    if (Error e =
            device_.gpu->copyIn(DeviceRef{constants_, 0}, p.constants.data(), p.constants.size()))
      return e;
    device_.stats.bytesIn += p.constants.size();
  }
  return Error::success();
}

LoadedProgram::~LoadedProgram() {
  // The code and memory may still be in use by work enqueued before.
  if (Error e = device_.gpu->synchronize())
    llvm::consumeError(std::move(e));
  for (DeviceMemory m : {scratch_, constants_})
    if (m.address)
      device_.release(m.address);
  module_.reset();
}

DeviceRef LoadedProgram::ref(const GpuRef &r) const {
  DeviceRef base;
  switch (r.kind) {
  case GpuRef::Kind::Input:
    base = inputs_[r.index];
    break;
  case GpuRef::Kind::Output:
    base = outputs_[r.index];
    break;
  case GpuRef::Kind::Scratch:
    base = DeviceRef{scratch_, 0};
    break;
  case GpuRef::Kind::Constant:
    base = DeviceRef{constants_, 0};
    break;
  case GpuRef::Kind::Int64:
    break;
  }
  base.offset += uint64_t(r.offset);
  return base;
}

Error LoadedProgram::run(const mdl_buffer *inputs, uint32_t nInputs, const mdl_buffer *outputs,
                         uint32_t nOutputs) {
  const GpuProgram &p = program_;
  auto bind = [&](const char *what, const mdl_buffer *given, uint32_t n,
                  const std::vector<GpuTensor> &expected, std::vector<DeviceRef> &out) -> Error {
    if (n != expected.size())
      return fail(std::string("the GPU program takes ") + std::to_string(expected.size()) + " " +
                  what + "s, and was given " + std::to_string(n));
    out.clear();
    for (uint32_t i = 0; i < n; ++i) {
      const mdl_buffer &b = given[i];
      const GpuTensor &t = expected[i];
      bool same = b.dtype == t.dtype && b.rank == int32_t(t.shape.size());
      for (int32_t d = 0; same && d < b.rank; ++d)
        same = b.shape[d] == t.shape[size_t(d)];
      if (!same)
        return fail(std::string(what) + " " + std::to_string(i) + " is " + bufferType(b).str() +
                    ", and the GPU program expects " +
                    ir::TensorType::of(dtypeOfAbi(t.dtype), t.shape).str());
      uint64_t bytes = 0;
      auto r = device_.resolve(b, bytes);
      if (!r)
        return fail(std::string(what) + " " + std::to_string(i) + ": " +
                    llvm::toString(r.takeError()));
      out.push_back(*r);
    }
    return Error::success();
  };
  if (Error e = bind("input", inputs, nInputs, p.inputs, inputs_))
    return e;
  if (Error e = bind("output", outputs, nOutputs, p.outputs, outputs_))
    return e;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (Error e = runStep(p.steps[i], i)) {
      const GpuStep &s = p.steps[i];
      std::string at = s.line ? std::to_string(s.line) + ":" + std::to_string(s.column) + ": " : "";
      std::string what = s.what.empty() ? "" : s.what + ": ";
      return fail(at + what + llvm::toString(std::move(e)));
    }
  return checkErrorRecord();
}

Error LoadedProgram::clearErrorRecord() {
  if (program_.errorOffset < 0)
    return Error::success();
  static const GpuErrorRecord kClear;
  return device_.gpu->copyIn(DeviceRef{scratch_, uint64_t(program_.errorOffset)}, &kClear,
                             sizeof kClear);
}

// Waits for the run's steps (the record is read after them): only programs
// whose kernels can find errors pay for it.
Error LoadedProgram::checkErrorRecord() {
  if (program_.errorOffset < 0)
    return Error::success();
  GpuErrorRecord record;
  if (Error e = device_.gpu->copyOut(&record, DeviceRef{scratch_, uint64_t(program_.errorOffset)},
                                     sizeof record))
    return e;
  std::string msg = gpuErrorMessage(program_, record);
  if (msg.empty())
    return Error::success();
  // The next run starts without it.
  if (Error e = clearErrorRecord())
    llvm::consumeError(std::move(e));
  return fail(msg);
}

Error LoadedProgram::launch(const GpuLaunch &l, int tag) {
  const GpuKernel &k = program_.kernels[l.kernel];
  LaunchShape shape;
  for (int d = 0; d < 3; ++d) {
    shape.grid[d] = l.grid[d];
    shape.block[d] = k.block[d];
  }
  std::vector<KernelArg> args;
  args.reserve(l.args.size());
  for (const GpuRef &r : l.args) {
    KernelArg a;
    if (r.kind == GpuRef::Kind::Int64) {
      a.isBuffer = false;
      a.value = r.offset;
    } else {
      a.buffer = ref(r);
    }
    args.push_back(a);
  }
  if (Error e = device_.gpu->launch(kernels_[l.kernel], shape, args,
                                    device_.timings && tag >= 0 ? tag : -1))
    return fail("kernel '" + k.name + "': " + llvm::toString(std::move(e)));
  if (tag >= 0)
    device_.stats.launched(tag);
  return Error::success();
}

Error LoadedProgram::runStep(const GpuStep &s, size_t index) {
  switch (s.kind) {
  case GpuStep::Kind::Launch:
    return launch(s.launch, tags_[index]);
  case GpuStep::Kind::Gemm: {
    const GpuGemm &g = s.gemm;
    std::string blas = device_.gpu->blasName();
    if (blas.empty())
      return launch(g.fallback, tags_[index]);
    BlasGemm b;
    b.dtype = g.dtype;
    b.transA = g.transA;
    b.transB = g.transB;
    b.m = g.m;
    b.n = g.n;
    b.k = g.k;
    b.lda = g.lda;
    b.ldb = g.ldb;
    b.ldc = g.ldc;
    b.batch = g.batch;
    b.strideA = g.strideA;
    b.strideB = g.strideB;
    b.strideC = g.strideC;
    b.a = ref(g.a).address();
    b.b = ref(g.b).address();
    b.c = ref(g.c).address();
    int &tag = blasTags_[index];
    if (tag < 0)
      tag = device_.stats.row(blas + " gemm", s.what);
    auto taken = device_.gpu->vendorGemm(b, device_.timings ? tag : -1);
    if (!taken)
      return taken.takeError();
    if (!*taken)
      return launch(g.fallback, tags_[index]);
    device_.stats.launched(tag);
    // The BLAS wrote C; the epilogue the fallback would have fused runs now.
    if (g.hasEpilogue)
      return launch(g.epilogue, epilogueTags_[index]);
    return Error::success();
  }
  case GpuStep::Kind::Copy:
    if (Error e = device_.gpu->copy(ref(s.copy.dst), ref(s.copy.src), s.copy.bytes))
      return e;
    device_.stats.bytesWithin += s.copy.bytes;
    return Error::success();
  }
  return Error::success();
}

} // namespace mdl::backend::hip
