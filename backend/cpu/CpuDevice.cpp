// The `cpu` device kind (see CpuDevice.h).
//
// Compile-time half: a kernel program is the segment's operations in order,
// each with its kernel from the CPU kernel table and the slots of its
// operands and results (slot i < inputs: the segment's argument i; then one
// slot per result), plus the segment's constants materialized once.
// Run-time half: 64-byte aligned host memory; run() wraps the buffers as
// tensors, runs each step, releases every value after its last use, and
// copies the yielded values into the caller's outputs.
#include "backend/cpu/CpuDevice.h"
#include "backend/cpu/Kernels.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <omp.h>
#include <string>
#include <unordered_map>

struct mdl_device {
  int threads = 0;
  std::string description;
  std::string error;
};

namespace mdl::backend::cpu {

const char *const kKernelProgramFormat = "cpu-kernels";

namespace {

using namespace ir;

struct Step {
  const Operation *op;
  std::vector<int> in, out;
};

class KernelProgram : public Artifact {
public:
  size_t nInputs = 0, nSlots = 0;
  std::vector<Step> steps;
  std::vector<int> yielded;                  // slots of the outputs
  std::vector<std::vector<int>> freeAfter;   // per step, slots read for the last time
  std::unordered_map<int, Tensor> constants; // slot -> value
  mdl_artifact view() const override { return {kKernelProgramFormat, this, 0}; }
};

} // namespace

std::unique_ptr<Artifact> compileKernelProgram(const Operation &segment, std::string &error) {
  auto p = std::make_unique<KernelProgram>();
  const Region &body = *segment.regions[0];
  std::unordered_map<const Value *, int> slot;
  for (auto &a : body.args)
    slot[a.get()] = int(p->nSlots++);
  p->nInputs = body.args.size();
  std::unordered_map<int, size_t> lastUse;
  for (auto &op : body.ops) {
    if (stdlib::hasTrait(op->kind, stdlib::trait::Terminator)) {
      for (Value *v : op->operands)
        p->yielded.push_back(slot.at(v));
      break;
    }
    Step s{op.get(), {}, {}};
    for (Value *v : op->operands) {
      auto it = slot.find(v);
      if (it == slot.end()) {
        error = std::string("'") + opName(op->kind) + "' reads a value from outside the segment";
        return nullptr;
      }
      s.in.push_back(it->second);
      lastUse[it->second] = p->steps.size();
    }
    for (auto &r : op->results) {
      slot[r.get()] = int(p->nSlots);
      s.out.push_back(int(p->nSlots++));
    }
    if (op->kind == OpKind::Constant) {
      const DenseData &dd = op->attr("value")->asDense();
      Tensor t = Tensor::empty(dd.type);
      if (!t.valid()) {
        error = "out of memory";
        return nullptr;
      }
      std::memcpy(t.raw(), dd.bytes.data(), dd.bytes.size());
      p->constants[s.out[0]] = t;
    } else if (!stdlib::hasKernel(op->kind)) {
      error = std::string("'") + opName(op->kind) + "' has no CPU kernel";
      return nullptr;
    }
    p->steps.push_back(std::move(s));
  }
  p->freeAfter.resize(p->steps.size());
  for (auto &[sl, step] : lastUse)
    if (size_t(sl) >= p->nInputs &&
        std::find(p->yielded.begin(), p->yielded.end(), sl) == p->yielded.end())
      p->freeAfter[step].push_back(sl);
  return p;
}

bool runKernelProgram(const mdl_artifact &artifact, const mdl_buffer *inputs, uint32_t nIn,
                      const mdl_buffer *outputs, uint32_t nOut, std::string &error) {
  const auto &p = *static_cast<const KernelProgram *>(artifact.data);
  if (nIn != p.nInputs || nOut != p.yielded.size()) {
    error = "the segment takes " + std::to_string(p.nInputs) + " inputs and " +
            std::to_string(p.yielded.size()) + " outputs, got " + std::to_string(nIn) +
            " and " + std::to_string(nOut);
    return false;
  }
  std::vector<Tensor> vals(p.nSlots);
  for (uint32_t i = 0; i < nIn; ++i)
    vals[i] = hostTensor(inputs[i], inputs[i].data);
  for (auto &[sl, t] : p.constants)
    vals[size_t(sl)] = t;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step &s = p.steps[k];
    if (s.op->kind == OpKind::Constant)
      continue;
    std::vector<Tensor> in, out;
    for (int sl : s.in)
      in.push_back(vals[size_t(sl)]);
    if (auto err = runKernel(*s.op, in, out)) {
      error = std::to_string(s.op->loc.line) + ":" + std::to_string(s.op->loc.col) + ": " + *err;
      return false;
    }
    for (size_t i = 0; i < s.out.size(); ++i)
      vals[size_t(s.out[i])] = out[i];
    for (int sl : p.freeAfter[k])
      vals[size_t(sl)] = Tensor();
  }
  for (uint32_t i = 0; i < nOut; ++i) {
    const Tensor &v = vals[size_t(p.yielded[i])];
    std::memcpy(outputs[i].data, v.raw(), v.byteSize());
  }
  return true;
}

namespace {

mdl_device *openCpu(const mdl_device_arg *args, uint32_t n, const char **) {
  auto *d = new mdl_device;
  for (uint32_t i = 0; i < n; ++i)
    if (std::strcmp(args[i].name, "threads") == 0)
      d->threads = int(args[i].int_value);
  d->description = "CPU, " +
                   std::to_string(d->threads > 0 ? d->threads : omp_get_max_threads()) +
                   " threads";
  return d;
}

void closeCpu(mdl_device *d) { delete d; }
const char *describeCpu(mdl_device *d) { return d->description.c_str(); }

void *allocCpu(mdl_device *, uint64_t bytes) {
  uint64_t size = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, size ? size : 64);
}

void releaseCpu(mdl_device *, void *p) { std::free(p); }

uint64_t bytesOf(const mdl_buffer &b) { return uint64_t(bufferType(b).byteSize()); }

int copyInCpu(mdl_device *d, const mdl_buffer *dst, const void *src) {
  if (!src) {
    d->error = "the CPU needs the value itself (no other process gives it)";
    return 1;
  }
  if (uint64_t n = bytesOf(*dst))
    std::memmove(dst->data, src, n);
  return 0;
}

int copyOutCpu(mdl_device *, void *dst, const mdl_buffer *src) {
  if (uint64_t n = bytesOf(*src))
    std::memmove(dst, src->data, n);
  return 0;
}

int copyCpu(mdl_device *d, const mdl_buffer *dst, const mdl_buffer *src) {
  return copyOutCpu(d, dst->data, src);
}

mdl_program *loadCpu(mdl_device *d, const mdl_artifact *a) {
  if (std::strcmp(a->format, kKernelProgramFormat) != 0) {
    d->error = std::string("the CPU cannot run a '") + a->format + "' artifact";
    return nullptr;
  }
  return reinterpret_cast<mdl_program *>(new mdl_artifact(*a));
}

int runCpu(mdl_device *d, mdl_program *prog, const mdl_buffer *in, uint32_t nIn,
           const mdl_buffer *out, uint32_t nOut) {
  if (d->threads > 0)
    omp_set_num_threads(d->threads);
  return runKernelProgram(*reinterpret_cast<mdl_artifact *>(prog), in, nIn, out, nOut, d->error)
             ? 0
             : 1;
}

void unloadCpu(mdl_device *, mdl_program *p) { delete reinterpret_cast<mdl_artifact *>(p); }
int syncCpu(mdl_device *) { return 0; }
const char *lastErrorCpu(mdl_device *d) { return d->error.c_str(); }

const mdl_device_interface kCpuInterface = {
    MDL_DEVICE_ABI_VERSION, "cpu",     1,          openCpu, closeCpu, describeCpu, allocCpu,
    releaseCpu,             copyInCpu, copyOutCpu, copyCpu, loadCpu,  runCpu,      unloadCpu,
    syncCpu,                lastErrorCpu,
    nullptr,                nullptr, // target: portable kernel programs; no peers
};

class CpuBackend : public DeviceBackend {
public:
  stdlib::DeviceKindInfo descriptor() const override {
    stdlib::DeviceKindInfo k;
    k.name = "cpu";
    k.summary = "OpenMP kernels and JIT-compiled loops on this machine";
    k.args = {stdlib::ParamSpec{"threads", stdlib::ParamKind::Int, std::nullopt, false}};
    k.memory = stdlib::MemoryModel::Host;
    k.checkArg = [](const std::string &arg, const Attribute &v) {
      return arg == "threads" && v.asInt() < 1 ? std::string("at least 1") : std::string();
    };
    return k;
  }
  // Every operation with a CPU kernel, and the structure a segment holds.
  bool supports(OpKind) const override { return true; }
  bool inlineIntoHost(const mdl_device_interface &) const override { return true; }
  std::unique_ptr<Artifact> compile(const Operation &segment, const std::string &target,
                                    std::string &error) const override {
    if (!target.empty()) {
      error = "the cpu kind makes no code for target '" + target + "'";
      return nullptr;
    }
    return compileKernelProgram(segment, error);
  }
  RuntimeChoice runtime() override { return {&kCpuInterface, "", false}; }
};

} // namespace

bool registerCpuKind() {
  keepBlasOnCallingThread();
  return registerDeviceBackend(std::make_unique<CpuBackend>());
}

} // namespace mdl::backend::cpu
