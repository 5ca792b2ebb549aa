// A test stand-in for libmdl_hip.so: the real GPU code generator
// (backend/hip/codegen) with a minimal OpenCL runtime of its own, so the
// generator's spir64 kernels run on PoCL (the CPU) through `mdl run` before
// the hip kind's real runtime (backend/hip/runtime) exists. Tests load it
// with MDL_HIP_LIBRARY=.../libmdl_hip_testcl.so; it is never installed.
//
// The runtime is deliberately small: one OpenCL context and in-order queue
// per device, blocking copies, device addresses that are fake numbers
// mapped to (cl_mem, offset) so that callers may offset them, and every
// step of a GpuProgram run in order (a Gemm step runs its fallback
// kernel). With MDL_TESTCL_STATS=1 it prints, when a device closes,
// "testcl: N kernels launched" to standard error, so tests can tell that
// the GPU path ran rather than the CPU fallback.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend/hip/GpuProgram.h"
#include "backend/hip/HipPlugin.h"
#include "backend/hip/codegen/SegmentCompiler.h"
#include "backend/runtime/DeviceBackend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace mdl::backend;
using namespace mdl::backend::hip;

// --- OpenCL through dlopen (no link-time dependency) ----------------------
struct Cl {
#define CL_FN(name) decltype(&::name) name = nullptr;
  CL_FN(clGetPlatformIDs)
  CL_FN(clGetDeviceIDs)
  CL_FN(clGetDeviceInfo)
  CL_FN(clCreateContext)
  CL_FN(clCreateCommandQueue)
  CL_FN(clCreateBuffer)
  CL_FN(clReleaseMemObject)
  CL_FN(clEnqueueWriteBuffer)
  CL_FN(clEnqueueReadBuffer)
  CL_FN(clEnqueueCopyBuffer)
  CL_FN(clCreateProgramWithBinary)
  CL_FN(clBuildProgram)
  CL_FN(clGetProgramBuildInfo)
  CL_FN(clCreateKernel)
  CL_FN(clSetKernelArg)
  CL_FN(clEnqueueNDRangeKernel)
  CL_FN(clFinish)
  CL_FN(clReleaseKernel)
  CL_FN(clReleaseProgram)
  CL_FN(clReleaseCommandQueue)
  CL_FN(clReleaseContext)
#undef CL_FN
  std::string problem;

  Cl() {
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      problem = "no OpenCL ICD loader (libOpenCL.so.1)";
      return;
    }
#define CL_LOAD(name)                                                          \
  name = reinterpret_cast<decltype(name)>(dlsym(h, #name));                    \
  if (!name)                                                                   \
    problem = "libOpenCL.so.1 lacks " #name;
    CL_LOAD(clGetPlatformIDs)
    CL_LOAD(clGetDeviceIDs)
    CL_LOAD(clGetDeviceInfo)
    CL_LOAD(clCreateContext)
    CL_LOAD(clCreateCommandQueue)
    CL_LOAD(clCreateBuffer)
    CL_LOAD(clReleaseMemObject)
    CL_LOAD(clEnqueueWriteBuffer)
    CL_LOAD(clEnqueueReadBuffer)
    CL_LOAD(clEnqueueCopyBuffer)
    CL_LOAD(clCreateProgramWithBinary)
    CL_LOAD(clBuildProgram)
    CL_LOAD(clGetProgramBuildInfo)
    CL_LOAD(clCreateKernel)
    CL_LOAD(clSetKernelArg)
    CL_LOAD(clEnqueueNDRangeKernel)
    CL_LOAD(clFinish)
    CL_LOAD(clReleaseKernel)
    CL_LOAD(clReleaseProgram)
    CL_LOAD(clReleaseCommandQueue)
    CL_LOAD(clReleaseContext)
#undef CL_LOAD
  }
};

Cl &cl() {
  static Cl c;
  return c;
}

struct Program;

struct Device {
  cl_context ctx = nullptr;
  cl_command_queue queue = nullptr;
  std::string name, error;
  // Fake device addresses: base -> (buffer, bytes).
  std::map<uintptr_t, std::pair<cl_mem, uint64_t>> memory;
  uintptr_t next = uintptr_t(1) << 40;
  uint64_t launched = 0;

  bool fail(const std::string &e) {
    error = e;
    return false;
  }
  // The buffer and offset of a device address.
  bool resolve(const void *addr, cl_mem &mem, uint64_t &offset) {
    auto a = reinterpret_cast<uintptr_t>(addr);
    auto it = memory.upper_bound(a);
    if (it == memory.begin())
      return fail("an address this device did not allocate");
    --it;
    if (a - it->first > it->second.second)
      return fail("an address outside its allocation");
    mem = it->second.first;
    offset = a - it->first;
    return true;
  }
};

struct Program {
  GpuProgram p;
  cl_program program = nullptr;
  std::vector<cl_kernel> kernels;
  cl_mem scratch = nullptr, constants = nullptr;
};

mdl_device *asHandle(Device *d) { return reinterpret_cast<mdl_device *>(d); }
Device *dev(mdl_device *d) { return reinterpret_cast<Device *>(d); }

mdl_device *openDevice(const mdl_device_arg *, uint32_t, const char **error) {
  Cl &c = cl();
  if (!c.problem.empty()) {
    *error = "no OpenCL (libOpenCL.so.1 or its functions are missing)";
    return nullptr;
  }
  cl_platform_id platform;
  cl_uint n = 0;
  cl_device_id device;
  if (c.clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
      c.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) !=
          CL_SUCCESS ||
      n == 0) {
    *error = "no OpenCL device (is pocl-opencl-icd installed?)";
    return nullptr;
  }
  auto *d = new Device;
  cl_int err;
  d->ctx = c.clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  if (d->ctx)
    d->queue = c.clCreateCommandQueue(d->ctx, device, 0, &err);
  if (!d->queue) {
    delete d;
    *error = "cannot create an OpenCL context";
    return nullptr;
  }
  char name[256] = {0};
  c.clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  d->name = std::string(name) + " (OpenCL test runtime)";
  return asHandle(d);
}

void closeDevice(mdl_device *h) {
  Device *d = dev(h);
  if (std::getenv("MDL_TESTCL_STATS"))
    std::fprintf(stderr, "testcl: %llu kernels launched\n",
                 static_cast<unsigned long long>(d->launched));
  for (auto &[base, m] : d->memory)
    cl().clReleaseMemObject(m.first);
  cl().clReleaseCommandQueue(d->queue);
  cl().clReleaseContext(d->ctx);
  delete d;
}

const char *describeDevice(mdl_device *h) { return dev(h)->name.c_str(); }

void *allocate(mdl_device *h, uint64_t bytes) {
  Device *d = dev(h);
  cl_int err;
  cl_mem m = cl().clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1,
                                 nullptr, &err);
  if (!m)
    return nullptr;
  uintptr_t base = d->next;
  d->next += (bytes + 8191) / 4096 * 4096;
  d->memory[base] = {m, bytes};
  return reinterpret_cast<void *>(base);
}

void release(mdl_device *h, void *p) {
  Device *d = dev(h);
  auto it = d->memory.find(reinterpret_cast<uintptr_t>(p));
  if (it == d->memory.end())
    return;
  cl().clReleaseMemObject(it->second.first);
  d->memory.erase(it);
}

uint64_t bytesOf(const mdl_buffer &b) {
  return uint64_t(bufferType(b).byteSize());
}

int copyIn(mdl_device *h, const mdl_buffer *dst, const void *src) {
  Device *d = dev(h);
  cl_mem m;
  uint64_t off;
  if (!src)
    return d->fail("no value to copy in"), 1;
  if (!d->resolve(dst->data, m, off))
    return 1;
  uint64_t n = bytesOf(*dst);
  if (n && cl().clEnqueueWriteBuffer(d->queue, m, CL_TRUE, off, n, src, 0,
                                     nullptr, nullptr))
    return d->fail("clEnqueueWriteBuffer failed"), 1;
  return 0;
}

int copyOut(mdl_device *h, void *dst, const mdl_buffer *src) {
  Device *d = dev(h);
  cl_mem m;
  uint64_t off;
  if (!d->resolve(src->data, m, off))
    return 1;
  uint64_t n = bytesOf(*src);
  if (n && cl().clEnqueueReadBuffer(d->queue, m, CL_TRUE, off, n, dst, 0,
                                    nullptr, nullptr))
    return d->fail("clEnqueueReadBuffer failed"), 1;
  return 0;
}

int copyWithin(mdl_device *h, const mdl_buffer *dst, const mdl_buffer *src) {
  Device *d = dev(h);
  cl_mem a, b;
  uint64_t ao, bo;
  if (!d->resolve(dst->data, a, ao) || !d->resolve(src->data, b, bo))
    return 1;
  uint64_t n = bytesOf(*src);
  if (n &&
      cl().clEnqueueCopyBuffer(d->queue, b, a, bo, ao, n, 0, nullptr, nullptr))
    return d->fail("clEnqueueCopyBuffer failed"), 1;
  return 0;
}

mdl_program *load(mdl_device *h, const mdl_artifact *a) {
  Device *d = dev(h);
  Cl &c = cl();
  if (std::strcmp(a->format, kGpuProgramFormat) != 0)
    return d->fail(std::string("cannot run artifacts of format ") + a->format),
           nullptr;
  std::string error;
  auto p = GpuProgram::parse(a->data, size_t(a->size), error);
  if (!p)
    return d->fail(error), nullptr;
  auto prog = std::make_unique<Program>();
  prog->p = std::move(*p);
  cl_device_id device;
  cl_platform_id platform;
  c.clGetPlatformIDs(1, &platform, nullptr);
  c.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  size_t len = prog->p.code.size();
  auto *bin = reinterpret_cast<const unsigned char *>(prog->p.code.data());
  cl_int status, err;
  prog->program = c.clCreateProgramWithBinary(d->ctx, 1, &device, &len, &bin,
                                              &status, &err);
  if (!prog->program || err != CL_SUCCESS)
    return d->fail("clCreateProgramWithBinary failed (" + std::to_string(err) +
                   ")"),
           nullptr;
  if (c.clBuildProgram(prog->program, 1, &device, "", nullptr, nullptr) !=
      CL_SUCCESS) {
    char log[4096] = {0};
    c.clGetProgramBuildInfo(prog->program, device, CL_PROGRAM_BUILD_LOG,
                            sizeof log - 1, log, nullptr);
    return d->fail(std::string("clBuildProgram failed: ") + log), nullptr;
  }
  for (const GpuKernel &k : prog->p.kernels) {
    cl_kernel kernel = c.clCreateKernel(prog->program, k.name.c_str(), &err);
    if (!kernel)
      return d->fail("no kernel " + k.name + " (" + std::to_string(err) + ")"),
             nullptr;
    prog->kernels.push_back(kernel);
  }
  prog->scratch = c.clCreateBuffer(
      d->ctx, CL_MEM_READ_WRITE,
      prog->p.scratchBytes ? prog->p.scratchBytes : 1, nullptr, &err);
  size_t cb = prog->p.constants.size();
  prog->constants =
      c.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, cb ? cb : 1, nullptr, &err);
  if (cb)
    c.clEnqueueWriteBuffer(d->queue, prog->constants, CL_TRUE, 0, cb,
                           prog->p.constants.data(), 0, nullptr, nullptr);
  return reinterpret_cast<mdl_program *>(prog.release());
}

void unload(mdl_device *, mdl_program *h) {
  auto *p = reinterpret_cast<Program *>(h);
  for (cl_kernel k : p->kernels)
    cl().clReleaseKernel(k);
  cl().clReleaseProgram(p->program);
  cl().clReleaseMemObject(p->scratch);
  cl().clReleaseMemObject(p->constants);
  delete p;
}

int run(mdl_device *h, mdl_program *ph, const mdl_buffer *in, uint32_t nIn,
        const mdl_buffer *out, uint32_t nOut) {
  Device *d = dev(h);
  Program &p = *reinterpret_cast<Program *>(ph);
  Cl &c = cl();
  if (nIn != p.p.inputs.size() || nOut != p.p.outputs.size())
    return d->fail("the program has other inputs or outputs"), 1;
  auto buffer = [&](const GpuRef &r, cl_mem &m, uint64_t &off) {
    switch (r.kind) {
    case GpuRef::Kind::Input:
    case GpuRef::Kind::Output:
      if (!d->resolve((r.kind == GpuRef::Kind::Input ? in : out)[r.index].data,
                      m, off))
        return false;
      off += uint64_t(r.offset);
      return true;
    case GpuRef::Kind::Scratch:
      m = p.scratch;
      off = uint64_t(r.offset);
      return true;
    case GpuRef::Kind::Constant:
      m = p.constants;
      off = uint64_t(r.offset);
      return true;
    case GpuRef::Kind::Int64:
      return false;
    }
    return false;
  };
  auto where = [](const GpuStep &s) {
    return s.line
               ? std::to_string(s.line) + ":" + std::to_string(s.column) + ": "
               : std::string();
  };
  auto launch = [&](const GpuStep &s, const GpuLaunch &l) {
    cl_kernel k = p.kernels[l.kernel];
    cl_uint arg = 0;
    for (const GpuRef &r : l.args) {
      if (r.kind == GpuRef::Kind::Int64) {
        cl_long v = r.offset;
        c.clSetKernelArg(k, arg++, sizeof v, &v);
        continue;
      }
      cl_mem m;
      uint64_t off;
      if (!buffer(r, m, off))
        return d->fail(where(s) + d->error);
      cl_long o = cl_long(off);
      c.clSetKernelArg(k, arg++, sizeof m, &m);
      c.clSetKernelArg(k, arg++, sizeof o, &o);
    }
    const GpuKernel &gk = p.p.kernels[l.kernel];
    size_t local[3] = {gk.block[0], gk.block[1], gk.block[2]};
    size_t global[3] = {size_t(l.grid[0]) * local[0],
                        size_t(l.grid[1]) * local[1],
                        size_t(l.grid[2]) * local[2]};
    cl_int err = c.clEnqueueNDRangeKernel(d->queue, k, 3, nullptr, global,
                                          local, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      return d->fail(where(s) + "clEnqueueNDRangeKernel failed (" +
                     std::to_string(err) + ")");
    ++d->launched;
    return true;
  };
  for (const GpuStep &s : p.p.steps) {
    bool ok = true;
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      ok = launch(s, s.launch);
      break;
    case GpuStep::Kind::Gemm:
      ok = launch(s, s.gemm.fallback);
      break;
    case GpuStep::Kind::Copy: {
      cl_mem a, b;
      uint64_t ao, bo;
      ok = buffer(s.copy.dst, a, ao) && buffer(s.copy.src, b, bo);
      if (ok && c.clEnqueueCopyBuffer(d->queue, b, a, bo, ao, s.copy.bytes, 0,
                                      nullptr, nullptr))
        ok = d->fail(where(s) + "clEnqueueCopyBuffer failed");
      break;
    }
    }
    if (!ok)
      return 1;
  }
  return c.clFinish(d->queue) == CL_SUCCESS ? 0
                                            : (d->fail("clFinish failed"), 1);
}

int synchronize(mdl_device *h) {
  return cl().clFinish(dev(h)->queue) == CL_SUCCESS ? 0 : 1;
}
const char *lastError(mdl_device *h) { return dev(h)->error.c_str(); }
const char *target(mdl_device *) { return "spir64"; }

mdl_device_interface makeInterface() {
  mdl_device_interface i{};
  i.abi_version = MDL_DEVICE_ABI_VERSION;
  i.name = "OpenCL (test)";
  i.host_memory = 0;
  i.open = openDevice;
  i.close = closeDevice;
  i.describe = describeDevice;
  i.alloc = allocate;
  i.release_memory = release;
  i.copy_in = copyIn;
  i.copy_out = copyOut;
  i.copy = copyWithin;
  i.load = load;
  i.run = run;
  i.unload = unload;
  i.synchronize = synchronize;
  i.last_error = lastError;
  i.target = target;
  return i;
}

const mdl_device_interface *runtime() {
  static const mdl_device_interface i = makeInterface();
  return &i;
}

} // namespace

extern "C" __attribute__((visibility("default"))) const HipPlugin *
mdl_hip_plugin() {
  static const HipPlugin plugin = {kHipPluginVersion, &compileSegment,
                                   &runtime};
  return &plugin;
}
