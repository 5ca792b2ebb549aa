// The CPU device.
//
// prepare() parses the segment's IR text once; run() wraps the argument
// pointers as tensors, runs each operation's kernel in order, and copies the
// yielded values into the caller's output buffers. Memory is 64-byte
// aligned host memory.
#include "backend/cpu/CpuDevice.h"
#include "backend/cpu/Kernels.h"
#include "ir/Parser.h"

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

struct mdl_segment {
  std::unique_ptr<mdl::ir::Module> module;
  const mdl::ir::Function *fn = nullptr;
};

namespace mdl::backend::cpu {

namespace {

mdl_device *openCpu(int, int threads, const char **) {
  auto *d = new mdl_device;
  d->threads = threads;
  d->description = "CPU, " + std::to_string(threads > 0 ? threads : omp_get_max_threads()) +
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

int copyCpu(mdl_device *, void *dst, const void *src, uint64_t bytes) {
  if (bytes)
    std::memmove(dst, src, bytes);
  return 0;
}

mdl_segment *prepareCpu(mdl_device *d, const char *text) {
  std::string err;
  auto m = ir::parseModule(text, err);
  if (!m || !m->findFunction("segment")) {
    d->error = "cannot read the segment: " + (m ? std::string("no @segment") : err);
    return nullptr;
  }
  auto *s = new mdl_segment;
  s->fn = m->findFunction("segment");
  s->module = std::move(m);
  return s;
}

int runCpu(mdl_device *d, mdl_segment *s, void *const *inputs, void *const *outputs) {
  using namespace ir;
  if (d->threads > 0)
    omp_set_num_threads(d->threads);
  std::unordered_map<const Value *, Tensor> vals;
  const Region &body = *s->fn->body;
  for (size_t i = 0; i < body.args.size(); ++i) {
    const TensorType &t = body.args[i]->type;
    vals[body.args[i].get()] =
        Tensor(t, std::make_shared<Buffer>(inputs[i], size_t(t.byteSize()), nullptr));
  }
  // The last operation that reads each value computed here: its tensor is
  // released right after, so memory holds only what is still needed.
  std::unordered_map<const Value *, const Operation *> lastUse;
  for (auto &op : body.ops)
    for (Value *v : op->operands)
      if (v->def)
        lastUse[v] = op.get();
  for (auto &op : body.ops) {
    std::vector<Tensor> in;
    for (Value *v : op->operands)
      in.push_back(vals.at(v));
    if (op->kind == OpKind::Yield || op->kind == OpKind::Return) {
      for (size_t i = 0; i < in.size(); ++i)
        std::memcpy(outputs[i], in[i].raw(), in[i].byteSize());
      return 0;
    }
    std::vector<Tensor> out;
    if (op->kind == OpKind::Constant) {
      const DenseData &dd = op->attr("value")->asDense();
      Tensor t = Tensor::empty(dd.type);
      if (!t.valid()) {
        d->error = "out of memory";
        return 1;
      }
      std::memcpy(t.raw(), dd.bytes.data(), dd.bytes.size());
      out.push_back(t);
    } else if (auto err = runKernel(*op, in, out)) {
      // Errors start with LINE:COL so the host can point at the operation.
      d->error = std::to_string(op->loc.line) + ":" + std::to_string(op->loc.col) + ": " + *err;
      return 1;
    }
    for (size_t i = 0; i < op->results.size(); ++i)
      vals[op->results[i].get()] = out[i];
    for (Value *v : op->operands) {
      auto it = lastUse.find(v);
      if (it != lastUse.end() && it->second == op.get())
        vals.erase(v);
    }
  }
  d->error = "segment without yield";
  return 1;
}

void releaseSegmentCpu(mdl_device *, mdl_segment *s) { delete s; }
int syncCpu(mdl_device *) { return 0; }
const char *lastErrorCpu(mdl_device *d) { return d->error.c_str(); }

const mdl_device_interface kCpuInterface = {
    MDL_DEVICE_ABI_VERSION, "cpu", 1,        openCpu,    closeCpu,          describeCpu,
    allocCpu,               releaseCpu,     copyCpu,    copyCpu,           prepareCpu,
    runCpu,                 releaseSegmentCpu, syncCpu, lastErrorCpu,
};

} // namespace

const mdl_device_interface *cpuDeviceInterface() { return &kCpuInterface; }

} // namespace mdl::backend::cpu
