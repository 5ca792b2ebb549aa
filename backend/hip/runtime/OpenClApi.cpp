// The OpenCL implementation of the GPU API layer (GpuApi.h), over any ICD
// through libOpenCL.so.1 opened with dlopen. This is how hip segments run
// on machines without a GPU: PoCL runs the spir64 bitcode the generator
// makes on the CPU (`POCL_DEVICES="pthread pthread"` gives several
// devices). Devices are numbered across platforms in the order the ICD
// lists them; each platform gets one context holding all of its devices
// (so that buffers move between them with clEnqueueCopyBuffer), each
// opened device one in-order queue.
//
// Memory objects are not addresses, but mdl does arithmetic on device
// addresses; each buffer therefore gets an address range of its own, a
// reservation of inaccessible pages (mmap PROT_NONE), unique in the
// process and never touched; AddressMap turns any address in it back into
// (cl_mem, offset). Kernels take each buffer as two arguments, the cl_mem
// and an i64 byte offset (GpuProgram.h).
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "backend/hip/runtime/DynamicLibrary.h"
#include "backend/hip/runtime/GpuApi.h"

#include <cstring>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace mdl::backend::hip {

namespace {

using llvm::Error;
using llvm::Expected;

std::string clErrorName(cl_int code) {
  static const std::pair<cl_int, const char *> names[] = {
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_MEM_COPY_OVERLAP, "CL_MEM_COPY_OVERLAP"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
       "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
      {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_BINARY, "CL_INVALID_BINARY"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_PROGRAM, "CL_INVALID_PROGRAM"},
      {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_GLOBAL_OFFSET, "CL_INVALID_GLOBAL_OFFSET"},
      {CL_INVALID_EVENT_WAIT_LIST, "CL_INVALID_EVENT_WAIT_LIST"},
      {CL_INVALID_EVENT, "CL_INVALID_EVENT"},
      {CL_INVALID_OPERATION, "CL_INVALID_OPERATION"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
      {CL_INVALID_QUEUE_PROPERTIES, "CL_INVALID_QUEUE_PROPERTIES"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (const auto &[c, n] : names)
    if (c == code)
      return n;
  return "OpenCL error " + std::to_string(code);
}

Error clError(const std::string &what, cl_int code) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " failed: " + clErrorName(code));
}

// The entry points used, bound from the ICD loader.
struct OpenClLibrary {
  decltype(&::clGetPlatformIDs) getPlatformIDs;
  decltype(&::clGetPlatformInfo) getPlatformInfo;
  decltype(&::clGetDeviceIDs) getDeviceIDs;
  decltype(&::clGetDeviceInfo) getDeviceInfo;
  decltype(&::clCreateContext) createContext;
  decltype(&::clCreateCommandQueueWithProperties) createQueueWithProperties;
  decltype(&::clReleaseCommandQueue) releaseQueue;
  decltype(&::clCreateBuffer) createBuffer;
  decltype(&::clReleaseMemObject) releaseMemObject;
  decltype(&::clCreateProgramWithBinary) createProgramWithBinary;
  decltype(&::clBuildProgram) buildProgram;
  decltype(&::clGetProgramBuildInfo) getProgramBuildInfo;
  decltype(&::clReleaseProgram) releaseProgram;
  decltype(&::clCreateKernel) createKernel;
  decltype(&::clGetKernelInfo) getKernelInfo;
  decltype(&::clReleaseKernel) releaseKernel;
  decltype(&::clSetKernelArg) setKernelArg;
  decltype(&::clEnqueueNDRangeKernel) enqueueNDRangeKernel;
  decltype(&::clEnqueueWriteBuffer) enqueueWriteBuffer;
  decltype(&::clEnqueueReadBuffer) enqueueReadBuffer;
  decltype(&::clEnqueueCopyBuffer) enqueueCopyBuffer;
  decltype(&::clEnqueueMarkerWithWaitList) enqueueMarker;
  decltype(&::clEnqueueBarrierWithWaitList) enqueueBarrier;
  decltype(&::clFlush) flush;
  decltype(&::clFinish) finish;
  decltype(&::clGetEventInfo) getEventInfo;
  decltype(&::clGetEventProfilingInfo) getEventProfilingInfo;
  decltype(&::clReleaseEvent) releaseEvent;

  Error bindAll(const DynamicLibrary &lib) {
    return lib.bindAll({{getPlatformIDs, "clGetPlatformIDs"},
                        {getPlatformInfo, "clGetPlatformInfo"},
                        {getDeviceIDs, "clGetDeviceIDs"},
                        {getDeviceInfo, "clGetDeviceInfo"},
                        {createContext, "clCreateContext"},
                        {createQueueWithProperties, "clCreateCommandQueueWithProperties"},
                        {releaseQueue, "clReleaseCommandQueue"},
                        {createBuffer, "clCreateBuffer"},
                        {releaseMemObject, "clReleaseMemObject"},
                        {createProgramWithBinary, "clCreateProgramWithBinary"},
                        {buildProgram, "clBuildProgram"},
                        {getProgramBuildInfo, "clGetProgramBuildInfo"},
                        {releaseProgram, "clReleaseProgram"},
                        {createKernel, "clCreateKernel"},
                        {getKernelInfo, "clGetKernelInfo"},
                        {releaseKernel, "clReleaseKernel"},
                        {setKernelArg, "clSetKernelArg"},
                        {enqueueNDRangeKernel, "clEnqueueNDRangeKernel"},
                        {enqueueWriteBuffer, "clEnqueueWriteBuffer"},
                        {enqueueReadBuffer, "clEnqueueReadBuffer"},
                        {enqueueCopyBuffer, "clEnqueueCopyBuffer"},
                        {enqueueMarker, "clEnqueueMarkerWithWaitList"},
                        {enqueueBarrier, "clEnqueueBarrierWithWaitList"},
                        {flush, "clFlush"},
                        {finish, "clFinish"},
                        {getEventInfo, "clGetEventInfo"},
                        {getEventProfilingInfo, "clGetEventProfilingInfo"},
                        {releaseEvent, "clReleaseEvent"}});
  }
};

// The text of an OpenCL info query, `query(size, buffer, &needed)`: its
// size asked first, then the text, cut at its NUL ("" when it fails).
template <typename Query> std::string infoString(Query query) {
  size_t n = 0;
  if (query(size_t(0), static_cast<char *>(nullptr), &n) != CL_SUCCESS || n == 0)
    return "";
  std::string s(n, '\0');
  query(n, s.data(), static_cast<size_t *>(nullptr));
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

struct Platform {
  cl_platform_id id = nullptr;
  std::vector<cl_device_id> devices;
  std::string version;          // "PoCL 3.1"
  cl_context context = nullptr; // made when a device of it is first opened
};

// The process's OpenCL: the library and its platforms, found once. Never
// destroyed: queues and buffers of devices still open may refer to it.
struct OpenCl {
  OpenClLibrary cl{};
  std::vector<Platform> platforms;
  std::vector<std::pair<size_t, size_t>> ordinals; // (platform, device)
  std::string problem;
  std::mutex mu;

  static OpenCl &get() {
    static OpenCl *instance = [] {
      auto *o = new OpenCl;
      o->init();
      return o;
    }();
    return *instance;
  }

  std::string platformString(cl_platform_id p, cl_platform_info what) {
    return infoString([&](size_t n, char *s, size_t *needed) {
      return cl.getPlatformInfo(p, what, n, s, needed);
    });
  }

  void init() {
    auto lib = openAndBind(cl, "MDL_OPENCL_LIBRARY", {"libOpenCL.so.1", "libOpenCL.so"});
    if (!lib) {
      problem = "OpenCL: " + llvm::toString(lib.takeError());
      return;
    }
    cl_uint n = 0;
    cl_int err = cl.getPlatformIDs(0, nullptr, &n);
    if (err != CL_SUCCESS || n == 0) {
      problem = "OpenCL: no platform (is an ICD such as pocl-opencl-icd installed?)";
      return;
    }
    std::vector<cl_platform_id> ids(n);
    cl.getPlatformIDs(n, ids.data(), nullptr);
    for (cl_platform_id id : ids) {
      Platform p;
      p.id = id;
      p.version = shortVersion(platformString(id, CL_PLATFORM_VERSION));
      cl_uint nd = 0;
      if (cl.getDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) == CL_SUCCESS && nd > 0) {
        p.devices.resize(nd);
        cl.getDeviceIDs(id, CL_DEVICE_TYPE_ALL, nd, p.devices.data(), nullptr);
      }
      for (size_t d = 0; d < p.devices.size(); ++d)
        ordinals.push_back({platforms.size(), d});
      platforms.push_back(std::move(p));
    }
    if (ordinals.empty())
      problem = "OpenCL: no device";
  }

  // "OpenCL 3.0 PoCL 3.1+debian  Linux, ..." -> "PoCL 3.1": the
  // implementation's name and version, after the OpenCL version.
  static std::string shortVersion(const std::string &v) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < v.size() && words.size() < 4) {
      size_t j = v.find_first_of(" ,", i);
      if (j == std::string::npos)
        j = v.size();
      if (j > i)
        words.push_back(v.substr(i, j - i));
      i = j + 1;
    }
    size_t first = words.size() >= 2 && words[0] == "OpenCL" ? 2 : 0;
    std::string s;
    for (size_t w = first; w < words.size() && w < first + 2; ++w)
      s += (s.empty() ? "" : " ") + words[w].substr(0, words[w].find('+'));
    return s.empty() ? v : s;
  }

  Expected<cl_context> contextOf(Platform &p) {
    std::lock_guard<std::mutex> lock(mu);
    if (p.context)
      return p.context;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, cl_context_properties(p.id), 0};
    cl_int err = CL_SUCCESS;
    p.context = cl.createContext(props, cl_uint(p.devices.size()), p.devices.data(), nullptr,
                                 nullptr, &err);
    if (err != CL_SUCCESS || !p.context) {
      p.context = nullptr;
      return clError("clCreateContext", err);
    }
    return p.context;
  }
};

std::string deviceString(const OpenClLibrary &cl, cl_device_id d, cl_device_info what) {
  return infoString([&](size_t n, char *s, size_t *needed) {
    return cl.getDeviceInfo(d, what, n, s, needed);
  });
}

template <typename T> T deviceValue(const OpenClLibrary &cl, cl_device_id d, cl_device_info what) {
  T v{};
  cl.getDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

class OpenClModule : public GpuModule {
public:
  OpenClModule(OpenClLibrary &cl, cl_program program) : cl_(cl), program_(program) {}
  ~OpenClModule() override {
    for (auto &[name, k] : kernels_)
      cl_.releaseKernel(k);
    cl_.releaseProgram(program_);
  }
  Expected<void *> kernel(const std::string &name) override {
    auto it = kernels_.find(name);
    if (it != kernels_.end())
      return static_cast<void *>(it->second);
    cl_int err = CL_SUCCESS;
    cl_kernel k = cl_.createKernel(program_, name.c_str(), &err);
    if (err != CL_SUCCESS || !k)
      return clError("kernel '" + name + "': clCreateKernel", err);
    kernels_[name] = k;
    return static_cast<void *>(k);
  }

private:
  OpenClLibrary &cl_;
  cl_program program_;
  std::map<std::string, cl_kernel> kernels_;
};

// Host copies of small inputs stay alive until their non-blocking writes
// have finished (the caller may reuse its memory at once); larger ones are
// written blocking, and the total held is bounded.
constexpr uint64_t kStagedCopyLimit = uint64_t(1) << 20;
constexpr uint64_t kStagedTotalLimit = uint64_t(64) << 20;

class OpenClDevice : public GpuDevice {
public:
  OpenClDevice(OpenCl &ocl, cl_device_id device, cl_context context, cl_command_queue queue,
               GpuDeviceInfo info)
      : cl_(ocl.cl), device_(device), context_(context), queue_(queue), info_(std::move(info)) {}

  ~OpenClDevice() override {
    cl_.finish(queue_);
    dropTimings();
    cl_.releaseQueue(queue_);
  }

  const GpuDeviceInfo &info() const override { return info_; }

  Expected<DeviceMemory> alloc(uint64_t bytes) override {
    uint64_t size = bytes ? bytes : 1;
    cl_int err = CL_SUCCESS;
    cl_mem mem = cl_.createBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &err);
    if (err != CL_SUCCESS || !mem)
      return clError("clCreateBuffer of " + std::to_string(size) + " bytes", err);
    void *range = mmap(nullptr, pageRound(size), PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      cl_.releaseMemObject(mem);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no address range left for a buffer of " +
                                         std::to_string(size) + " bytes");
    }
    sizes_[uint64_t(uintptr_t(range))] = size;
    return DeviceMemory{uint64_t(uintptr_t(range)), mem};
  }

  void release(const DeviceMemory &m) override {
    // OpenCL frees the buffer once the commands using it have finished.
    cl_.releaseMemObject(static_cast<cl_mem>(m.handle));
    auto it = sizes_.find(m.address);
    if (it != sizes_.end()) {
      munmap(reinterpret_cast<void *>(uintptr_t(m.address)), pageRound(it->second));
      sizes_.erase(it);
    }
  }

  Error copyIn(const DeviceRef &dst, const void *src, uint64_t bytes) override {
    if (bytes == 0)
      return Error::success();
    if (bytes > kStagedCopyLimit || staged_ + bytes > kStagedTotalLimit) {
      if (staged_ + bytes > kStagedTotalLimit)
        if (Error e = synchronize())
          return e;
      cl_int err = cl_.enqueueWriteBuffer(queue_, mem(dst), CL_TRUE, dst.offset, bytes, src, 0,
                                          nullptr, nullptr);
      return err == CL_SUCCESS ? Error::success() : clError("clEnqueueWriteBuffer", err);
    }
    auto copy = std::make_unique<char[]>(bytes);
    std::memcpy(copy.get(), src, bytes);
    cl_int err = cl_.enqueueWriteBuffer(queue_, mem(dst), CL_FALSE, dst.offset, bytes, copy.get(),
                                        0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      return clError("clEnqueueWriteBuffer", err);
    staged_ += bytes;
    stagedCopies_.push_back(std::move(copy));
    return Error::success();
  }

  Error copyOut(void *dst, const DeviceRef &src, uint64_t bytes) override {
    if (bytes == 0)
      return synchronize();
    cl_int err = cl_.enqueueReadBuffer(queue_, mem(src), CL_TRUE, src.offset, bytes, dst, 0,
                                       nullptr, nullptr);
    if (err != CL_SUCCESS)
      return clError("clEnqueueReadBuffer", err);
    dropStaged(); // the queue has drained up to here
    return Error::success();
  }

  Error copy(const DeviceRef &dst, const DeviceRef &src, uint64_t bytes) override {
    if (bytes == 0)
      return Error::success();
    cl_int err = cl_.enqueueCopyBuffer(queue_, mem(src), mem(dst), src.offset, dst.offset, bytes, 0,
                                       nullptr, nullptr);
    return err == CL_SUCCESS ? Error::success() : clError("clEnqueueCopyBuffer", err);
  }

  Error copyFromPeer(const DeviceRef &dst, GpuDevice &fromDevice, const DeviceRef &src,
                     uint64_t bytes) override {
    if (bytes == 0)
      return Error::success();
    auto *from = dynamic_cast<OpenClDevice *>(&fromDevice);
    if (!from || from->context_ != context_) {
      // Another platform: through the host.
      std::vector<char> staging(bytes);
      if (Error e = fromDevice.copyOut(staging.data(), src, bytes))
        return e;
      return copyIn(dst, staging.data(), bytes);
    }
    // The copy runs on this queue after what the source's queue has been
    // given, and the source's queue waits for it before going on (its
    // later work may overwrite the source).
    cl_event ready = nullptr, done = nullptr;
    cl_int err = cl_.enqueueMarker(from->queue_, 0, nullptr, &ready);
    if (err != CL_SUCCESS)
      return clError("clEnqueueMarkerWithWaitList", err);
    cl_.flush(from->queue_);
    err = cl_.enqueueCopyBuffer(queue_, mem(src), mem(dst), src.offset, dst.offset, bytes, 1,
                                &ready, &done);
    cl_.releaseEvent(ready);
    if (err != CL_SUCCESS)
      return clError("clEnqueueCopyBuffer between devices", err);
    cl_.flush(queue_);
    err = cl_.enqueueBarrier(from->queue_, 1, &done, nullptr);
    cl_.releaseEvent(done);
    return err == CL_SUCCESS ? Error::success() : clError("clEnqueueBarrierWithWaitList", err);
  }

  Expected<std::unique_ptr<GpuModule>> loadModule(const std::string &code) override {
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(code.data());
    size_t size = code.size();
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program program =
        cl_.createProgramWithBinary(context_, 1, &device_, &size, &bytes, &status, &err);
    if (err != CL_SUCCESS || !program)
      return clError("clCreateProgramWithBinary", err != CL_SUCCESS ? err : status);
    err = cl_.buildProgram(program, 1, &device_, "", nullptr, nullptr);
    if (err != CL_SUCCESS) {
      std::string log = buildLog(program);
      cl_.releaseProgram(program);
      Error e = clError("clBuildProgram", err);
      if (log.empty())
        return e;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::toString(std::move(e)) + ": " + log);
    }
    return std::make_unique<OpenClModule>(cl_, program);
  }

  Error launch(void *kernel, const LaunchShape &shape, const std::vector<KernelArg> &args,
               int timingTag) override {
    auto k = static_cast<cl_kernel>(kernel);
    cl_uint expected = 0;
    for (const KernelArg &a : args)
      expected += a.isBuffer ? 2 : 1;
    cl_uint takes = 0;
    cl_.getKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof takes, &takes, nullptr);
    if (takes != expected)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the kernel takes " + std::to_string(takes) +
                                         " arguments, and the program gives it " +
                                         std::to_string(expected));
    cl_uint i = 0;
    for (const KernelArg &a : args) {
      cl_int err = CL_SUCCESS;
      if (a.isBuffer) {
        cl_mem m = mem(a.buffer);
        cl_long offset = cl_long(a.buffer.offset);
        err = cl_.setKernelArg(k, i++, sizeof m, &m);
        if (err == CL_SUCCESS)
          err = cl_.setKernelArg(k, i++, sizeof offset, &offset);
      } else {
        cl_long v = a.value;
        err = cl_.setKernelArg(k, i++, sizeof v, &v);
      }
      if (err != CL_SUCCESS)
        return clError("clSetKernelArg " + std::to_string(i - 1), err);
    }
    size_t global[3], local[3];
    cl_uint dims = 1;
    for (int d = 0; d < 3; ++d) {
      local[d] = shape.block[d];
      global[d] = size_t(shape.grid[d]) * shape.block[d];
      if (d > 0 && (shape.grid[d] > 1 || shape.block[d] > 1))
        dims = cl_uint(d + 1);
    }
    if (timingTag >= 0 && timed_.size() >= kMaxTimedInFlight) {
      cl_.finish(queue_);
      harvest(measured_);
    }
    cl_event ev = nullptr;
    cl_int err = cl_.enqueueNDRangeKernel(queue_, k, dims, nullptr, global, local, 0, nullptr,
                                          timingTag >= 0 ? &ev : nullptr);
    if (err != CL_SUCCESS)
      return clError("clEnqueueNDRangeKernel", err);
    if (ev)
      timed_.push_back({timingTag, ev});
    // Submitted now, so that the devices of a program work at once.
    cl_.flush(queue_);
    return Error::success();
  }

  Error synchronize() override {
    cl_int err = cl_.finish(queue_);
    if (err != CL_SUCCESS)
      return clError("clFinish", err);
    dropStaged();
    return Error::success();
  }

  void takeKernelTimes(std::vector<std::pair<int, double>> &out) override {
    out.insert(out.end(), measured_.begin(), measured_.end());
    measured_.clear();
    harvest(out);
  }

private:
  // Moves the times of the finished timed launches to `out`.
  void harvest(std::vector<std::pair<int, double>> &out) {
    std::vector<std::pair<int, cl_event>> waiting;
    for (auto &[tag, ev] : timed_) {
      cl_int status = CL_QUEUED;
      cl_.getEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      if (status > CL_COMPLETE) {
        waiting.push_back({tag, ev});
        continue;
      }
      cl_ulong start = 0, end = 0;
      if (status == CL_COMPLETE &&
          cl_.getEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                    nullptr) == CL_SUCCESS &&
          cl_.getEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) ==
              CL_SUCCESS &&
          end >= start)
        out.push_back({tag, double(end - start) * 1e-6});
      cl_.releaseEvent(ev);
    }
    timed_ = std::move(waiting);
  }

public:
  Expected<bool> vendorGemm(const BlasGemm &, int) override { return false; }
  std::string blasName() override { return ""; }

private:
  static uint64_t pageRound(uint64_t n) {
    static const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
  }
  static cl_mem mem(const DeviceRef &r) { return static_cast<cl_mem>(r.memory.handle); }

  // The compiler's log, trimmed: the first lines say what it refused.
  std::string buildLog(cl_program program) {
    std::string log = infoString([&](size_t n, char *s, size_t *needed) {
      return cl_.getProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, n, s, needed);
    });
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
      log.pop_back();
    if (log.size() > 2000)
      log = log.substr(0, 2000) + " ...";
    return log;
  }

  void dropStaged() {
    stagedCopies_.clear();
    staged_ = 0;
  }
  void dropTimings() {
    for (auto &[tag, ev] : timed_)
      cl_.releaseEvent(ev);
    timed_.clear();
  }

  OpenClLibrary &cl_;
  cl_device_id device_;
  cl_context context_;
  cl_command_queue queue_;
  GpuDeviceInfo info_;
  std::map<uint64_t, uint64_t> sizes_; // address range -> buffer bytes
  std::vector<std::unique_ptr<char[]>> stagedCopies_;
  uint64_t staged_ = 0;
  std::vector<std::pair<int, cl_event>> timed_;
  std::vector<std::pair<int, double>> measured_; // read, not yet taken
};

} // namespace

Expected<std::unique_ptr<GpuDevice>> openOpenClDevice(const GpuOpenOptions &options) {
  OpenCl &ocl = OpenCl::get();
  if (!ocl.problem.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), ocl.problem);
  if (options.ordinal < 0 || size_t(options.ordinal) >= ocl.ordinals.size())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "OpenCL has " + std::to_string(ocl.ordinals.size()) + " device" +
            (ocl.ordinals.size() == 1 ? "" : "s") + ", and no device " +
            std::to_string(options.ordinal) +
            " (with PoCL, POCL_DEVICES=\"pthread pthread ...\" makes more)");
  auto [pi, di] = ocl.ordinals[size_t(options.ordinal)];
  Platform &platform = ocl.platforms[pi];
  cl_device_id device = platform.devices[di];
  const OpenClLibrary &cl = ocl.cl;
  if (deviceValue<cl_uint>(cl, device, CL_DEVICE_ADDRESS_BITS) != 64)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "OpenCL device " + std::to_string(options.ordinal) +
                                       " is not a 64-bit device (mdl makes spir64 code)");
  auto context = ocl.contextOf(platform);
  if (!context)
    return context.takeError();
  cl_queue_properties props[] = {
      CL_QUEUE_PROPERTIES, cl_queue_properties(options.timings ? CL_QUEUE_PROFILING_ENABLE : 0), 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = cl.createQueueWithProperties(*context, device, props, &err);
  if (err != CL_SUCCESS || !queue)
    return clError("clCreateCommandQueueWithProperties", err);
  GpuDeviceInfo info;
  info.api = "OpenCL";
  info.target = "spir64";
  info.description = deviceString(cl, device, CL_DEVICE_NAME) + " (OpenCL, " +
                     (platform.version.empty() ? "unknown platform" : platform.version) + ")";
  info.maxBlockThreads = deviceValue<size_t>(cl, device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  info.maxSharedBytes = deviceValue<cl_ulong>(cl, device, CL_DEVICE_LOCAL_MEM_SIZE);
  return std::make_unique<OpenClDevice>(ocl, device, *context, queue, std::move(info));
}

} // namespace mdl::backend::hip
