// The HIP and CUDA devices of the GPU runtime (HipApi.cpp, CudaApi.cpp,
// VendorBlas.cpp) on a stand-in driver, tests/gpuruntime/MockGpuDriver.cpp:
// the runtime is pointed at it through the environment overrides it honours
// (MDL_AMDHIP_LIBRARY, MDL_CUDA_LIBRARY, MDL_ROCBLAS_LIBRARY,
// MDL_HIPBLAS_LIBRARY, MDL_CUBLAS_LIBRARY) and driven through GpuApi.h only:
// opening two GPUs, memory and copies, peer copies, modules and launches,
// kernel times, strided-batched products on the vendor BLAS, failures of
// the driver's calls and what closing a device gives back. The mock
// declares the vendors' entry points as documented, independently of the
// runtime, and refuses what a driver would refuse, so arguments passed in
// the wrong order or to the wrong device fail here. It runs work when it is
// enqueued on host memory: what these tests cannot show is asynchronous
// behaviour on a real GPU.
#include "backend/hip/runtime/GpuApi.h"
#include "backend/runtime/DeviceInterface.h"
#include "ir/Half.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

using namespace mdl::backend::hip;

// The mock's control functions, from the same loaded library as the
// runtime's (dlopen of one path gives one library).
struct Mock {
  void (*failNext)(const char *, int);
  int (*launches)();
  int (*blasCalls)();
  int (*live)(const char *);
  void (*lastLaunch)(unsigned *);
  int (*peerAccess)(int, int);

  static const Mock &get() {
    static const Mock mock = [] {
      Mock m{};
      void *h = dlopen(MDL_MOCK_GPU_DRIVER, RTLD_NOW | RTLD_LOCAL);
      if (!h)
        return m;
      m.failNext = reinterpret_cast<void (*)(const char *, int)>(dlsym(h, "mock_gpu_fail_next"));
      m.launches = reinterpret_cast<int (*)()>(dlsym(h, "mock_gpu_launches"));
      m.blasCalls = reinterpret_cast<int (*)()>(dlsym(h, "mock_gpu_blas_calls"));
      m.live = reinterpret_cast<int (*)(const char *)>(dlsym(h, "mock_gpu_live"));
      m.lastLaunch = reinterpret_cast<void (*)(unsigned *)>(dlsym(h, "mock_gpu_last_launch"));
      m.peerAccess = reinterpret_cast<int (*)(int, int)>(dlsym(h, "mock_gpu_peer_access"));
      return m;
    }();
    return mock;
  }
};

// Points every vendor library at the mock (before the runtime first opens
// one: each is opened once per process).
void useMock() {
  for (const char *var : {"MDL_AMDHIP_LIBRARY", "MDL_CUDA_LIBRARY", "MDL_ROCBLAS_LIBRARY",
                          "MDL_HIPBLAS_LIBRARY", "MDL_CUBLAS_LIBRARY"})
    setenv(var, MDL_MOCK_GPU_DRIVER, 1);
}

// What differs between the two APIs, as the tests see it.
struct Api {
  const char *name; // "HIP"
  std::function<llvm::Expected<std::unique_ptr<GpuDevice>>(const GpuOpenOptions &)> open;
  const char *alloc, *allocShown; // the entry point, and its name in messages
  const char *copyIn, *copyInShown;
  const char *moduleLoad, *launch, *synchronize, *peerCopy;
  const char *sgemm, *halfGemm, *blas;
  std::string (*error)(const char *suffix); // "OutOfMemory" -> hipErrorOutOfMemory
  std::vector<std::string> targets;         // of GPU 0 and 1
};

std::string hipName(const char *suffix) { return std::string("hipError") + suffix; }
std::string cudaName(const char *suffix) {
  // CamelCase to CUDA_ERROR_UPPER_CASE; one name differs.
  if (std::string(suffix) == "LaunchFailure")
    return "CUDA_ERROR_LAUNCH_FAILED";
  std::string s = "CUDA_ERROR";
  for (const char *c = suffix; *c; ++c) {
    if (std::isupper((unsigned char)*c))
      s += '_';
    s += char(std::toupper((unsigned char)*c));
  }
  return s;
}

const Api kHip{"HIP",
               openHipDevice,
               "hipMalloc",
               "hipMalloc",
               "hipMemcpyHtoDAsync",
               "hipMemcpyHtoDAsync",
               "hipModuleLoadData",
               "hipModuleLaunchKernel",
               "hipStreamSynchronize",
               "hipMemcpyPeerAsync",
               "rocblas_sgemm_strided_batched",
               "rocblas_gemm_strided_batched_ex",
               "rocBLAS",
               hipName,
               {"gfx90a", "gfx90a"}};
const Api kCuda{"CUDA",
                openCudaDevice,
                "cuMemAlloc_v2",
                "cuMemAlloc",
                "cuMemcpyHtoDAsync_v2",
                "cuMemcpyHtoDAsync",
                "cuModuleLoadDataEx",
                "cuLaunchKernel",
                "cuStreamSynchronize",
                "cuMemcpyPeerAsync",
                "cublasSgemmStridedBatched",
                "cublasGemmStridedBatchedEx",
                "cuBLAS",
                cudaName,
                {"sm_90", "sm_80"}};

const char kModule[] = "mock-gpu-module: iota_f32 add_f32 scale2_f32 mark";

class GpuDriver : public ::testing::TestWithParam<const Api *> {
protected:
  void SetUp() override {
    useMock();
    ASSERT_NE(Mock::get().live, nullptr) << "cannot load " << MDL_MOCK_GPU_DRIVER;
    mock = &Mock::get();
  }

  std::unique_ptr<GpuDevice> open(int ordinal, bool timings = false) {
    GpuOpenOptions o;
    o.ordinal = ordinal;
    o.timings = timings;
    auto d = GetParam()->open(o);
    if (!d) {
      ADD_FAILURE() << GetParam()->name << " GPU " << ordinal << ": "
                    << llvm::toString(d.takeError());
      return nullptr;
    }
    return std::move(*d);
  }

  const Mock *mock = nullptr;
};

std::string errorOf(llvm::Error e) { return e ? llvm::toString(std::move(e)) : "(no error)"; }
template <typename T> std::string errorOf(llvm::Expected<T> &v) {
  return v ? "(no error)" : llvm::toString(v.takeError());
}

DeviceRef at(const DeviceMemory &m, uint64_t offset = 0) { return DeviceRef{m, offset}; }

std::vector<float> pattern(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = seed + float(i) * 0.5f;
  return v;
}

TEST_P(GpuDriver, OpensBothGpus) {
  const Api &api = *GetParam();
  for (int ordinal : {0, 1}) {
    auto d = open(ordinal);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->info().api, api.name);
    EXPECT_EQ(d->info().target, api.targets[size_t(ordinal)]);
    EXPECT_NE(d->info().description.find("Mock"), std::string::npos) << d->info().description;
  }
  GpuOpenOptions o;
  o.ordinal = 2;
  auto none = api.open(o);
  EXPECT_EQ(errorOf(none), std::string(api.name) + " has 2 GPUs, and no GPU 2");
}

TEST_P(GpuDriver, CopiesWithinAndOutOfADevice) {
  for (int ordinal : {0, 1}) {
    auto d = open(ordinal);
    ASSERT_TRUE(d);
    auto a = d->alloc(64 * 4), b = d->alloc(64 * 4);
    ASSERT_TRUE(a && b);
    std::vector<float> in = pattern(64, float(ordinal) + 1), out(64, -1);
    ASSERT_EQ(errorOf(d->copyIn(at(*a), in.data(), 64 * 4)), "(no error)");
    // The second half of a, to the first half of b, then b back whole.
    ASSERT_EQ(errorOf(d->copy(at(*b), at(*a, 32 * 4), 32 * 4)), "(no error)");
    ASSERT_EQ(errorOf(d->copy(at(*b, 32 * 4), at(*a), 32 * 4)), "(no error)");
    ASSERT_EQ(errorOf(d->copyOut(out.data(), at(*b), 64 * 4)), "(no error)");
    for (size_t i = 0; i < 64; ++i)
      EXPECT_EQ(out[i], in[(i + 32) % 64]) << i;
    // Bytes past an allocation are refused by the driver.
    EXPECT_NE(errorOf(d->copyIn(at(*a, 60 * 4), in.data(), 8 * 4)).find(GetParam()->copyInShown),
              std::string::npos);
    d->release(*a);
    d->release(*b);
  }
}

TEST_P(GpuDriver, CopiesBetweenGpus) {
  auto d0 = open(0), d1 = open(1);
  ASSERT_TRUE(d0 && d1);
  auto a = d0->alloc(100 * 4), b = d1->alloc(100 * 4);
  ASSERT_TRUE(a && b);
  std::vector<float> in = pattern(100, 3), back(100, 0), out(100, 0);
  ASSERT_EQ(errorOf(d0->copyIn(at(*a), in.data(), 400)), "(no error)");
  // GPU 0 to GPU 1 (at an offset), and back to another part of GPU 0.
  ASSERT_EQ(errorOf(d1->copyFromPeer(at(*b, 40), *d0, at(*a), 360)), "(no error)");
  // GPU 1 reads GPU 0's memory: GPU 1 was given access to GPU 0's.
  EXPECT_EQ(mock->peerAccess(1, 0), 1);
  ASSERT_EQ(errorOf(d1->copyOut(out.data(), at(*b, 40), 360)), "(no error)");
  for (size_t i = 0; i < 90; ++i)
    EXPECT_EQ(out[i], in[i]) << i;
  ASSERT_EQ(errorOf(d0->copyFromPeer(at(*a, 200), *d1, at(*b, 40), 200)), "(no error)");
  ASSERT_EQ(errorOf(d0->copyOut(back.data(), at(*a), 400)), "(no error)");
  for (size_t i = 0; i < 100; ++i)
    EXPECT_EQ(back[i], i < 50 ? in[i] : in[i - 50]) << i;
  EXPECT_EQ(mock->peerAccess(0, 1), 1);
  d0->release(*a);
  d1->release(*b);
}

TEST_P(GpuDriver, LaunchesKernelsOfModules) {
  auto d0 = open(0), d1 = open(1);
  ASSERT_TRUE(d0 && d1);
  auto m0 = d0->loadModule(kModule);
  auto m1 = d1->loadModule(kModule);
  ASSERT_TRUE(m0 && m1) << errorOf(m0) << errorOf(m1);
  auto iota = (*m1)->kernel("iota_f32"), add = (*m1)->kernel("add_f32");
  ASSERT_TRUE(iota && add);
  const uint64_t n = 50;
  auto x = d1->alloc(n * 4), y = d1->alloc(n * 4), z = d1->alloc(n * 4);
  ASSERT_TRUE(x && y && z);
  std::vector<float> yv = pattern(n, 10), out(n);
  ASSERT_EQ(errorOf(d1->copyIn(at(*y), yv.data(), n * 4)), "(no error)");
  int launches = mock->launches();
  LaunchShape shape;
  shape.grid[0] = 2, shape.grid[1] = 3, shape.grid[2] = 4;
  shape.block[0] = 64, shape.block[1] = 2, shape.block[2] = 1;
  KernelArg count{false, {}, int64_t(n)};
  ASSERT_EQ(errorOf(d1->launch(*iota, shape, {{true, at(*x)}, count}, -1)), "(no error)");
  unsigned last[7];
  mock->lastLaunch(last);
  EXPECT_EQ(std::vector<unsigned>(last, last + 7), (std::vector<unsigned>{2, 3, 4, 64, 2, 1, 0}));
  // z = x + y: the arguments in order.
  ASSERT_EQ(errorOf(d1->launch(*add, LaunchShape{},
                               {{true, at(*x)}, {true, at(*y)}, {true, at(*z)}, count}, -1)),
            "(no error)");
  ASSERT_EQ(errorOf(d1->copyOut(out.data(), at(*z), n * 4)), "(no error)");
  for (uint64_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], float(i) + yv[i]) << i;
  EXPECT_EQ(mock->launches() - launches, 2);
  // A kernel of GPU 0's module is not GPU 1's: the driver refuses it.
  auto other = (*m0)->kernel("iota_f32");
  ASSERT_TRUE(bool(other));
  std::string e = errorOf(d1->launch(*other, shape, {{true, at(*x)}, count}, -1));
  EXPECT_EQ(e, std::string(GetParam()->launch) + " failed: " + GetParam()->error("InvalidHandle"));
  auto missing = (*m1)->kernel("no_such_kernel");
  std::string why = errorOf(missing);
  EXPECT_NE(why.find("kernel 'no_such_kernel'"), std::string::npos) << why;
  EXPECT_NE(why.find(GetParam()->error("NotFound")), std::string::npos) << why;
  for (auto *m : {&x, &y, &z})
    d1->release(**m);
}

TEST_P(GpuDriver, TimesLaunchesAndProducts) {
  auto d = open(0, true);
  ASSERT_TRUE(d);
  auto m = d->loadModule(kModule);
  ASSERT_TRUE(bool(m)) << errorOf(m);
  auto scale = (*m)->kernel("scale2_f32");
  ASSERT_TRUE(bool(scale));
  auto x = d->alloc(16 * 4);
  ASSERT_TRUE(bool(x));
  KernelArg count{false, {}, 16};
  // An untimed launch between timed ones adds to none of their times.
  for (int tag : {7, -1, 8, 9})
    ASSERT_EQ(errorOf(d->launch(*scale, LaunchShape{}, {{true, at(*x)}, count}, tag)),
              "(no error)");
  ASSERT_EQ(errorOf(d->synchronize()), "(no error)");
  std::vector<std::pair<int, double>> times;
  d->takeKernelTimes(times);
  ASSERT_EQ(times.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(times[i].first, int(7 + i));
    EXPECT_DOUBLE_EQ(times[i].second, 0.25); // the mock's clock per launch
  }
  times.clear();
  d->takeKernelTimes(times);
  EXPECT_TRUE(times.empty());
  // A product on the BLAS: the mock's 0.5 ms.
  BlasGemm g;
  g.dtype = MDL_F32, g.m = g.n = g.k = 2, g.lda = g.ldb = g.ldc = 2;
  auto abc = d->alloc(3 * 4 * 4);
  ASSERT_TRUE(bool(abc));
  g.a = abc->address, g.b = abc->address + 16, g.c = abc->address + 32;
  auto taken = d->vendorGemm(g, 11);
  ASSERT_TRUE(taken && *taken) << errorOf(taken);
  ASSERT_EQ(errorOf(d->synchronize()), "(no error)");
  d->takeKernelTimes(times);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].first, 11);
  EXPECT_DOUBLE_EQ(times[0].second, 0.5);
  d->release(*x);
  d->release(*abc);
}

// Row-major C = op(A) op(B), batched, with leading dimensions wider than
// the matrices, against a host loop.
struct GemmCase {
  int32_t dtype;
  bool transA, transB;
};

uint16_t toHalf(int32_t dtype, float v) {
  return dtype == MDL_F16 ? mdl::ir::floatToHalf(v) : mdl::ir::floatToBf16(v);
}
float fromHalf(int32_t dtype, uint16_t v) {
  return dtype == MDL_F16 ? mdl::ir::halfToFloat(v) : mdl::ir::bf16ToFloat(v);
}

void checkGemm(GpuDevice &d, const GemmCase &c, const char *blas) {
  const int64_t m = 3, n = 5, k = 4, batch = 2;
  BlasGemm g;
  g.dtype = c.dtype, g.transA = c.transA, g.transB = c.transB;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  int64_t aRows = c.transA ? k : m, aCols = c.transA ? m : k;
  int64_t bRows = c.transB ? n : k, bCols = c.transB ? k : n;
  g.lda = aCols + 2, g.ldb = bCols + 1, g.ldc = n + 3;
  g.strideA = aRows * g.lda + 5, g.strideB = bRows * g.ldb + 2, g.strideC = m * g.ldc + 1;
  size_t elem = c.dtype == MDL_F32 ? 4 : 2;
  size_t na = size_t(g.strideA * batch), nb = size_t(g.strideB * batch),
         nc = size_t(g.strideC * batch);
  // Values exact in every type: multiples of 1/4 up to 4.
  std::vector<float> A(na), B(nb);
  for (size_t i = 0; i < na; ++i)
    A[i] = float(int(i * 7 % 17) - 8) / 4;
  for (size_t i = 0; i < nb; ++i)
    B[i] = float(int(i * 5 % 13) - 6) / 4;
  auto bytesOf = [&](const std::vector<float> &v) {
    std::vector<char> out(v.size() * elem);
    for (size_t i = 0; i < v.size(); ++i) {
      if (elem == 4) {
        std::memcpy(&out[i * 4], &v[i], 4);
      } else {
        uint16_t h = toHalf(c.dtype, v[i]);
        std::memcpy(&out[i * 2], &h, 2);
      }
    }
    return out;
  };
  auto a = d.alloc(na * elem), b = d.alloc(nb * elem), cm = d.alloc(nc * elem);
  ASSERT_TRUE(a && b && cm);
  std::vector<char> aBytes = bytesOf(A), bBytes = bytesOf(B), cBytes(nc * elem, 0x7f);
  ASSERT_EQ(errorOf(d.copyIn(at(*a), aBytes.data(), aBytes.size())), "(no error)");
  ASSERT_EQ(errorOf(d.copyIn(at(*b), bBytes.data(), bBytes.size())), "(no error)");
  ASSERT_EQ(errorOf(d.copyIn(at(*cm), cBytes.data(), cBytes.size())), "(no error)");
  g.a = a->address, g.b = b->address, g.c = cm->address;
  EXPECT_EQ(d.blasName(), blas);
  auto taken = d.vendorGemm(g, -1);
  ASSERT_TRUE(bool(taken)) << errorOf(taken);
  ASSERT_TRUE(*taken);
  ASSERT_EQ(errorOf(d.copyOut(cBytes.data(), at(*cm), cBytes.size())), "(no error)");
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p) {
          float x = A[size_t(bi * g.strideA + (c.transA ? p * g.lda + i : i * g.lda + p))];
          float y = B[size_t(bi * g.strideB + (c.transB ? j * g.ldb + p : p * g.ldb + j))];
          want += double(x) * y;
        }
        size_t at = size_t(bi * g.strideC + i * g.ldc + j);
        float got = 0;
        if (elem == 4) {
          std::memcpy(&got, &cBytes[at * 4], 4);
        } else {
          uint16_t h;
          std::memcpy(&h, &cBytes[at * 2], 2);
          got = fromHalf(c.dtype, h);
        }
        double tolerance =
            elem == 4 ? 1e-5 : (c.dtype == MDL_F16 ? 1e-3 : 8e-3) * (1 + std::abs(want));
        EXPECT_NEAR(got, want, tolerance)
            << "batch " << bi << " C[" << i << "][" << j << "] dtype " << c.dtype << " transA "
            << c.transA << " transB " << c.transB;
      }
  // Between the rows of C (ldc > n) nothing was written.
  size_t gap = size_t(n) * elem; // right after row 0 of batch 0
  for (size_t i = 0; i < 3 * elem; ++i)
    EXPECT_EQ(cBytes[gap + i], char(0x7f)) << "byte " << i << " after row 0";
  d.release(*a);
  d.release(*b);
  d.release(*cm);
}

TEST_P(GpuDriver, ProductsOnTheVendorBlas) {
  auto d = open(1);
  ASSERT_TRUE(d);
  int calls = mock->blasCalls();
  int runs = 0;
  for (int32_t dtype : {MDL_F32, MDL_F16, MDL_BF16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "dtype " << dtype << " transA " << ta << " transB " << tb);
        checkGemm(*d, {dtype, ta, tb}, GetParam()->blas);
        ++runs;
      }
  EXPECT_EQ(mock->blasCalls() - calls, runs);
  // Integer products are left to mdl's kernel: nothing enqueued.
  BlasGemm ints;
  ints.dtype = MDL_I32, ints.m = ints.n = ints.k = ints.lda = ints.ldb = ints.ldc = 1;
  auto taken = d->vendorGemm(ints, -1);
  ASSERT_TRUE(bool(taken));
  EXPECT_FALSE(*taken);
  EXPECT_EQ(mock->blasCalls() - calls, runs);
}

TEST_P(GpuDriver, ReportsTheDriversFailures) {
  const Api &api = *GetParam();
  auto d = open(0);
  ASSERT_TRUE(d);
  mock->failNext(api.alloc, 2);
  auto m = d->alloc(100);
  EXPECT_EQ(errorOf(m),
            std::string(api.allocShown) + " of 100 bytes failed: " + api.error("OutOfMemory"));
  mock->failNext(api.moduleLoad, 200);
  auto mod = d->loadModule(kModule);
  EXPECT_EQ(errorOf(mod), std::string(api.moduleLoad) + " failed: " + api.error("InvalidImage"));
  // Code that is not a module: the CUDA driver's JIT log follows its error.
  auto bad = d->loadModule("garbage");
  std::string why = errorOf(bad);
  EXPECT_EQ(why.find(std::string(api.moduleLoad) + " failed: "), 0u) << why;
  if (std::string(api.name) == "CUDA") {
    EXPECT_EQ(why, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX: mock "
                   "ptxas: line 1: not "
                   "a mock module");
  }
  auto good = d->loadModule(kModule);
  ASSERT_TRUE(bool(good)) << errorOf(good);
  auto mark = (*good)->kernel("mark");
  ASSERT_TRUE(bool(mark));
  auto x = d->alloc(4);
  ASSERT_TRUE(bool(x));
  mock->failNext(api.launch, 719);
  EXPECT_EQ(errorOf(d->launch(*mark, LaunchShape{}, {{true, at(*x)}}, -1)),
            std::string(api.launch) + " failed: " + api.error("LaunchFailure"));
  // A block beyond the GPU's 1024 threads.
  LaunchShape huge;
  huge.block[0] = 2048;
  EXPECT_EQ(errorOf(d->launch(*mark, huge, {{true, at(*x)}}, -1)),
            std::string(api.launch) + " failed: " + api.error("InvalidValue"));
  mock->failNext(api.synchronize, 719);
  EXPECT_EQ(errorOf(d->synchronize()), std::string("the GPU's work (") + api.synchronize +
                                           ") failed: " + api.error("LaunchFailure"));
  mock->failNext(api.sgemm, 11);
  BlasGemm g;
  g.dtype = MDL_F32, g.m = g.n = g.k = g.lda = g.ldb = g.ldc = 1;
  g.a = g.b = g.c = x->address;
  auto taken = d->vendorGemm(g, -1);
  EXPECT_EQ(errorOf(taken), std::string(api.blas) + " gemm failed with status 11");
  // A peer copy the driver refuses.
  auto d1 = open(1);
  ASSERT_TRUE(d1);
  auto y = d1->alloc(4);
  ASSERT_TRUE(bool(y));
  mock->failNext(api.peerCopy, 1);
  EXPECT_EQ(errorOf(d1->copyFromPeer(at(*y), *d, at(*x), 4)),
            std::string(api.peerCopy) + " failed: " + api.error("InvalidValue"));
  // Only the next call fails: the same calls work again.
  uint32_t word = 0;
  ASSERT_EQ(errorOf(d->launch(*mark, LaunchShape{}, {{true, at(*x)}}, -1)), "(no error)");
  ASSERT_EQ(errorOf(d1->copyFromPeer(at(*y), *d, at(*x), 4)), "(no error)");
  ASSERT_EQ(errorOf(d1->copyOut(&word, at(*y), 4)), "(no error)");
  EXPECT_EQ(word, 0xdeadbeefu);
  d->release(*x);
  d1->release(*y);
}

TEST_P(GpuDriver, ClosingGivesEverythingBack) {
  const char *kinds[] = {"streams", "events", "modules", "memory", "blas handles", "contexts"};
  std::vector<int> before;
  for (const char *k : kinds)
    before.push_back(mock->live(k));
  {
    auto d0 = open(0, true), d1 = open(1, true);
    ASSERT_TRUE(d0 && d1);
    auto m0 = d0->loadModule(kModule), m1 = d1->loadModule(kModule);
    ASSERT_TRUE(m0 && m1);
    auto a = d0->alloc(256), b = d1->alloc(256);
    ASSERT_TRUE(a && b);
    auto k1 = (*m1)->kernel("iota_f32");
    ASSERT_TRUE(bool(k1));
    for (int i = 0; i < 5; ++i)
      ASSERT_EQ(errorOf(d1->launch(*k1, LaunchShape{}, {{true, at(*b)}, {false, {}, 16}}, i)),
                "(no error)");
    ASSERT_EQ(errorOf(d0->copyFromPeer(at(*a), *d1, at(*b), 64)), "(no error)");
    BlasGemm g;
    g.dtype = MDL_F32, g.m = g.n = g.k = g.lda = g.ldb = g.ldc = 2;
    g.a = a->address, g.b = a->address + 16, g.c = a->address + 32;
    auto taken = d0->vendorGemm(g, 99);
    ASSERT_TRUE(taken && *taken) << errorOf(taken);
    // Some times are never read: the device still destroys their events.
    EXPECT_GT(mock->live("streams"), before[0]);
    EXPECT_GT(mock->live("events"), before[1]);
    EXPECT_GT(mock->live("modules"), before[2]);
    EXPECT_GT(mock->live("blas handles"), before[4]);
    if (std::string(GetParam()->name) == "CUDA") {
      EXPECT_EQ(mock->live("contexts"), before[5] + 2);
    }
    d0->release(*a);
    d1->release(*b);
  }
  for (size_t i = 0; i < std::size(kinds); ++i)
    EXPECT_EQ(mock->live(kinds[i]), before[i]) << kinds[i];
}

TEST_P(GpuDriver, AFailedOpenGivesBackWhatItTook) {
  const Api &api = *GetParam();
  int contexts = mock->live("contexts"), streams = mock->live("streams");
  const char *streamCreate =
      std::string(api.name) == "HIP" ? "hipStreamCreateWithFlags" : "cuStreamCreate";
  mock->failNext(streamCreate, 2);
  GpuOpenOptions o;
  o.ordinal = 1;
  auto d = api.open(o);
  EXPECT_EQ(errorOf(d), std::string(streamCreate) + " failed: " + api.error("OutOfMemory"));
  EXPECT_EQ(mock->live("contexts"), contexts);
  EXPECT_EQ(mock->live("streams"), streams);
}

INSTANTIATE_TEST_SUITE_P(Apis, GpuDriver, ::testing::Values(&kHip, &kCuda),
                         [](const auto &info) { return std::string(info.param->name); });

// hipBLAS, which HIP devices use where rocBLAS is not found. The BLAS
// libraries are bound once per process: ctest runs this test in a process
// of its own, where rocBLAS is made absent first.
TEST(GpuDriverHipblas, ProductsWhereRocblasIsAbsent) {
  if (::testing::UnitTest::GetInstance()->test_to_run_count() != 1)
    GTEST_SKIP() << "the BLAS libraries are bound once per process: this test "
                    "runs alone "
                    "(--gtest_filter=GpuDriverHipblas.*, as ctest runs it)";
  useMock();
  setenv("MDL_ROCBLAS_LIBRARY", "/nonexistent/librocblas-absent.so", 1);
  GpuOpenOptions o;
  auto d = openHipDevice(o);
  ASSERT_TRUE(bool(d)) << errorOf(d);
  int calls = Mock::get().blasCalls();
  for (bool ta : {false, true})
    checkGemm(**d, {MDL_F32, ta, !ta}, "hipBLAS");
  EXPECT_EQ(Mock::get().blasCalls() - calls, 2);
  // hipBLAS is bound for f32 and f64 only: halves go to mdl's kernel.
  BlasGemm g;
  g.dtype = MDL_F16, g.m = g.n = g.k = g.lda = g.ldb = g.ldc = 1;
  auto taken = (*d)->vendorGemm(g, -1);
  ASSERT_TRUE(bool(taken));
  EXPECT_FALSE(*taken);
}

} // namespace
