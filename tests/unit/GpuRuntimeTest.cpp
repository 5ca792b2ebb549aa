// The hip kind's GPU runtime (backend/hip/runtime) through its device ABI,
// on OpenCL: PoCL runs the hand-built spir64 kernels of GpuTestKernels.h
// on the CPU. Memory and copies, addresses inside allocations, peer copies
// between two devices (ctest sets POCL_DEVICES="pthread pthread"),
// programs with every kind of step, damaged programs, errors that carry
// the step's line, --timings. Without an OpenCL device the tests that need
// one skip, saying why; the ones about absent GPUs run everywhere.
#include "backend/hip/runtime/GpuRuntime.h"
#include "backend/hip/GpuProgram.h"
#include "tests/unit/GpuTestKernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>

namespace {

using namespace mdl::backend::hip;

const mdl_device_interface &rt() { return *gpuRuntime(); }

struct Opened {
  mdl_device *dev = nullptr;
  std::string why;
};

Opened openGpu(const char *runtime, int64_t ordinal, int64_t timings = 0) {
  mdl_device_arg args[] = {
      {"ordinal", ordinal, nullptr}, {"hip_runtime", 0, runtime}, {"timings", timings, nullptr}};
  const char *err = nullptr;
  Opened o;
  o.dev = rt().open(args, 3, &err);
  if (!o.dev)
    o.why = err ? err : "(no reason)";
  return o;
}

/// A typed contiguous f32 buffer descriptor.
struct F32 {
  std::vector<int64_t> shape;
  mdl_buffer buf{};
  F32(void *data, std::vector<int64_t> s) : shape(std::move(s)) {
    buf = {data, MDL_F32, int32_t(shape.size()), shape.data(), nullptr};
  }
  const mdl_buffer *operator&() const { return &buf; }
};

std::string &bitcode() {
  static std::string bytes = [] {
    std::string error;
    std::string b = mdl::test::gpuTestKernelsBitcode(error);
    EXPECT_FALSE(b.empty()) << error;
    return b;
  }();
  return bytes;
}

GpuRef in(uint32_t i, int64_t offset = 0) { return {GpuRef::Kind::Input, i, offset}; }
GpuRef out(uint32_t i, int64_t offset = 0) { return {GpuRef::Kind::Output, i, offset}; }
GpuRef scratch(int64_t offset) { return {GpuRef::Kind::Scratch, 0, offset}; }
GpuRef constant(int64_t offset) { return {GpuRef::Kind::Constant, 0, offset}; }
GpuRef i64(int64_t v) { return {GpuRef::Kind::Int64, 0, v}; }

GpuStep launchStep(uint32_t kernel, uint32_t gridX, std::vector<GpuRef> args, uint32_t line,
                   std::string what, uint32_t gridY = 1) {
  GpuStep s;
  s.kind = GpuStep::Kind::Launch;
  s.line = line;
  s.column = 3;
  s.what = std::move(what);
  s.launch.kernel = kernel;
  s.launch.grid[0] = gridX;
  s.launch.grid[1] = gridY;
  s.launch.args = std::move(args);
  return s;
}

enum : uint32_t { kAdd, kScale, kMatmul, kSum64, kReport };

/// The program every run test uses, on inputs a: f32[8, 16], b: f32[16, 4],
/// v: f32[128]; outputs:
///   0: f32[8, 4]   a @ b          (a Gemm step; on OpenCL its fallback)
///   1: f32[128]    (v + v) * 0.5 (add into scratch, scale by a constant)
///   2: f32[2]      sums of v's two halves of 64 (sum64, work-group memory)
///   3: f32[128]    a copy of output 1 (a Copy step)
GpuProgram testProgram() {
  GpuProgram p;
  p.target = "spir64";
  p.codeFormat = GpuCodeFormat::Spir64Bitcode;
  p.code = bitcode();
  p.kernels = {{"add", {64, 1, 1}, 0},
               {"scale", {64, 1, 1}, 0},
               {"matmul", {4, 4, 1}, 0},
               {"sum64", {64, 1, 1}, 256},
               {"report", {1, 1, 1}, 0}};
  p.inputs = {{MDL_F32, {8, 16}}, {MDL_F32, {16, 4}}, {MDL_F32, {128}}};
  p.outputs = {{MDL_F32, {8, 4}}, {MDL_F32, {128}}, {MDL_F32, {2}}, {MDL_F32, {128}}};
  p.scratchBytes = 1024;
  float half = 0.5f;
  p.constants.assign(64, '\0'); // the constant sits at offset 32
  std::memcpy(p.constants.data() + 32, &half, sizeof half);
  GpuStep gemm;
  gemm.kind = GpuStep::Kind::Gemm;
  gemm.line = 10;
  gemm.column = 5;
  gemm.what = "matmul f32[8, 16] x f32[16, 4]";
  GpuGemm &g = gemm.gemm;
  g.dtype = MDL_F32;
  g.m = 8, g.n = 4, g.k = 16, g.lda = 16, g.ldb = 4, g.ldc = 4;
  g.a = in(0), g.b = in(1), g.c = out(0);
  g.fallback.kernel = kMatmul;
  g.fallback.grid[0] = 1;
  g.fallback.grid[1] = 2;
  g.fallback.args = {in(0), in(1), out(0), i64(8), i64(4), i64(16)};
  p.steps.push_back(gemm);
  p.steps.push_back(launchStep(kAdd, 2, {in(2), in(2), scratch(512), i64(128)}, 11, "v + v"));
  p.steps.push_back(
      launchStep(kScale, 2, {scratch(512), constant(32), out(1), i64(128)}, 12, "(v + v) * 0.5"));
  p.steps.push_back(launchStep(kSum64, 2, {in(2), out(2)}, 13, "sum of halves"));
  GpuStep copy;
  copy.kind = GpuStep::Kind::Copy;
  copy.line = 14;
  copy.what = "copy";
  copy.copy = {out(3), out(1), 512};
  p.steps.push_back(copy);
  return p;
}

class OpenClTest : public ::testing::Test {
protected:
  void SetUp() override {
    Opened o = openGpu("opencl", 0);
    if (!o.dev)
      GTEST_SKIP() << "no OpenCL device (" << o.why
                   << "); tools/quickstart.sh installs pocl-opencl-icd";
    dev = o.dev;
  }
  void TearDown() override {
    if (dev)
      rt().close(dev);
  }
  void *alloc(uint64_t bytes) {
    void *p = rt().alloc(dev, bytes);
    EXPECT_NE(p, nullptr) << rt().last_error(dev);
    return p;
  }
  std::string lastError() const { return rt().last_error(dev); }

  mdl_device *dev = nullptr;
};

TEST_F(OpenClTest, DescribesTheDeviceAndItsTarget) {
  std::string d = rt().describe(dev);
  EXPECT_NE(d.find("(OpenCL, "), std::string::npos) << d;
  EXPECT_STREQ(rt().target(dev), "spir64");
  EXPECT_EQ(rt().host_memory, 0);
}

TEST_F(OpenClTest, CopiesInAndOut) {
  std::vector<float> host(1000);
  std::iota(host.begin(), host.end(), 1.0f);
  void *p = alloc(4000);
  ASSERT_EQ(rt().copy_in(dev, &F32(p, {1000}), host.data()), 0) << lastError();
  std::vector<float> back(1000, -1);
  ASSERT_EQ(rt().copy_out(dev, back.data(), &F32(p, {1000})), 0) << lastError();
  EXPECT_EQ(back, host);
  rt().release_memory(dev, p);
}

TEST_F(OpenClTest, AllocationsHaveAddressRangesOfTheirOwn) {
  void *a = alloc(100000), *b = alloc(100000), *c = alloc(0);
  auto lo = [](void *p) { return uintptr_t(p); };
  EXPECT_TRUE(lo(a) + 100000 <= lo(b) || lo(b) + 100000 <= lo(a));
  EXPECT_NE(c, nullptr);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  for (void *p : {a, b, c})
    rt().release_memory(dev, p);
}

TEST_F(OpenClTest, AddressesInsideAnAllocationMapToOffsets) {
  // The JIT hands out slots of one arena: base + offset.
  char *arena = static_cast<char *>(alloc(4096));
  std::vector<float> x(10), y(10);
  std::iota(x.begin(), x.end(), 0.0f);
  std::iota(y.begin(), y.end(), 100.0f);
  ASSERT_EQ(rt().copy_in(dev, &F32(arena + 1024, {10}), x.data()), 0) << lastError();
  ASSERT_EQ(rt().copy_in(dev, &F32(arena + 2048, {10}), y.data()), 0) << lastError();
  ASSERT_EQ(rt().copy(dev, &F32(arena + 3000, {10}), &F32(arena + 1024, {10})), 0) << lastError();
  std::vector<float> all(1024);
  ASSERT_EQ(rt().copy_out(dev, all.data(), &F32(arena, {1024})), 0) << lastError();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(all[256 + i], x[i]);
    EXPECT_EQ(all[512 + i], y[i]);
    EXPECT_EQ(all[750 + i], x[i]);
  }
  rt().release_memory(dev, arena);
}

TEST_F(OpenClTest, StrayAddressesAreErrors) {
  char *p = static_cast<char *>(alloc(400));
  std::vector<float> host(200);
  EXPECT_NE(rt().copy_out(dev, host.data(), &F32(p, {200})), 0);
  EXPECT_NE(lastError().find("run past the end of its 400-byte allocation"), std::string::npos)
      << lastError();
  EXPECT_NE(rt().copy_in(dev, &F32(host.data(), {4}), host.data()), 0);
  EXPECT_NE(lastError().find("is not memory of this device"), std::string::npos) << lastError();
  EXPECT_NE(rt().copy_in(dev, &F32(p, {4}), nullptr), 0);
  EXPECT_NE(lastError().find("needs the value itself"), std::string::npos) << lastError();
  // Strided views never reach a device; the runtime refuses rather than
  // misreads them.
  int64_t shape[] = {2, 2}, strides[] = {1, 2};
  mdl_buffer strided{p, MDL_F32, 2, shape, strides};
  EXPECT_NE(rt().copy_out(dev, host.data(), &strided), 0);
  EXPECT_NE(lastError().find("contiguous"), std::string::npos) << lastError();
  rt().release_memory(dev, host.data()); // not its memory: ignored
  rt().release_memory(dev, p);
  EXPECT_NE(rt().copy_out(dev, host.data(), &F32(p, {4})), 0); // released
}

TEST_F(OpenClTest, PeerCopiesBetweenDevices) {
  Opened second = openGpu("opencl", 1);
  if (!second.dev)
    GTEST_SKIP() << "one OpenCL device only (" << second.why
                 << "); ctest sets POCL_DEVICES=\"pthread pthread\"";
  std::vector<float> x(300);
  std::iota(x.begin(), x.end(), 7.0f);
  char *src = static_cast<char *>(alloc(2000));
  char *dst = static_cast<char *>(rt().alloc(second.dev, 2000));
  ASSERT_NE(dst, nullptr);
  ASSERT_EQ(rt().copy_in(dev, &F32(src + 400, {300}), x.data()), 0) << lastError();
  ASSERT_EQ(rt().copy_peer(second.dev, &F32(dst + 800, {300}), dev, &F32(src + 400, {300})), 0)
      << rt().last_error(second.dev);
  std::vector<float> back(300);
  ASSERT_EQ(rt().copy_out(second.dev, back.data(), &F32(dst + 800, {300})), 0);
  EXPECT_EQ(back, x);
  // An address of the first device is not the second's.
  EXPECT_NE(rt().copy_out(second.dev, back.data(), &F32(src, {300})), 0);
  rt().release_memory(second.dev, dst);
  rt().close(second.dev);
  rt().release_memory(dev, src);
}

/// Inputs of testProgram() and the outputs a run should give.
struct ProgramData {
  std::vector<float> a, b, v, product, scaled, sums;
  ProgramData() : a(8 * 16), b(16 * 4), v(128), product(8 * 4), scaled(128), sums(2) {
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(int(i % 7) - 3);
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(int(i % 5) - 2) * 0.5f;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = float(i);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 16; ++k)
          product[r * 4 + c] += a[r * 16 + k] * b[k * 4 + c];
    for (size_t i = 0; i < v.size(); ++i)
      scaled[i] = (v[i] + v[i]) * 0.5f;
    for (int i = 0; i < 64; ++i) {
      sums[0] += v[i];
      sums[1] += v[64 + i];
    }
  }
};

/// Device buffers for testProgram(): inputs filled, outputs allocated.
struct ProgramBuffers {
  const mdl_device_interface &r = rt();
  mdl_device *dev;
  std::vector<void *> mem;
  std::vector<F32> ins, outs;
  std::vector<mdl_buffer> inBufs, outBufs;
  ProgramBuffers(const ProgramBuffers &) = delete;
  ProgramBuffers(mdl_device *d, const ProgramData &data) : dev(d) {
    auto add = [&](std::vector<F32> &list, std::vector<int64_t> shape, const float *host) {
      int64_t n = 4;
      for (int64_t s : shape)
        n *= s;
      void *p = r.alloc(dev, uint64_t(n));
      mem.push_back(p);
      list.emplace_back(p, shape);
      if (host) {
        EXPECT_EQ(r.copy_in(dev, &list.back(), host), 0) << r.last_error(dev);
      }
    };
    ins.reserve(3);
    outs.reserve(4);
    add(ins, {8, 16}, data.a.data());
    add(ins, {16, 4}, data.b.data());
    add(ins, {128}, data.v.data());
    add(outs, {8, 4}, nullptr);
    add(outs, {128}, nullptr);
    add(outs, {2}, nullptr);
    add(outs, {128}, nullptr);
    for (F32 &f : ins)
      inBufs.push_back(f.buf);
    for (F32 &f : outs)
      outBufs.push_back(f.buf);
  }
  ~ProgramBuffers() {
    for (void *p : mem)
      r.release_memory(dev, p);
  }
  std::vector<float> read(size_t output, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(r.copy_out(dev, v.data(), &outBufs[output]), 0) << r.last_error(dev);
    return v;
  }
};

/// The header of a program's bytes: magic, version, checksum.
constexpr size_t kHeader = 8 + 4 + 8;

/// `bytes` with the checksum (FNV-1a of what follows the header) made to
/// match them, so that parse()'s own checks see the damage.
std::string resealed(std::string bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = kHeader; i < bytes.size(); ++i) {
    h ^= uint8_t(bytes[i]);
    h *= 0x100000001b3ull;
  }
  std::memcpy(bytes.data() + kHeader - 8, &h, 8);
  return bytes;
}

mdl_program *load(mdl_device *dev, const std::string &bytes) {
  mdl_artifact a{kGpuProgramFormat, bytes.data(), bytes.size()};
  return rt().load(dev, &a);
}

TEST_F(OpenClTest, RunsEveryKindOfStep) {
  ProgramData data;
  ProgramBuffers bufs(dev, data);
  mdl_program *p = load(dev, testProgram().serialize());
  ASSERT_NE(p, nullptr) << lastError();
  for (int run = 0; run < 2; ++run) // scratch and constants stay loaded
    ASSERT_EQ(rt().run(dev, p, bufs.inBufs.data(), 3, bufs.outBufs.data(), 4), 0) << lastError();
  EXPECT_EQ(bufs.read(0, 32), data.product);
  EXPECT_EQ(bufs.read(1, 128), data.scaled);
  EXPECT_EQ(bufs.read(2, 2), data.sums);
  EXPECT_EQ(bufs.read(3, 128), data.scaled);
  rt().unload(dev, p);
}

TEST_F(OpenClTest, SegmentsOnTwoDevicesAndAPeerCopyInOrder) {
  Opened second = openGpu("opencl", 1);
  if (!second.dev)
    GTEST_SKIP() << "one OpenCL device only (" << second.why << ")";
  ProgramData data;
  ProgramBuffers first(dev, data);
  auto otherBuffers = std::make_unique<ProgramBuffers>(second.dev, data);
  ProgramBuffers &other = *otherBuffers;
  mdl_program *p0 = load(dev, testProgram().serialize());
  mdl_program *p1 = load(second.dev, testProgram().serialize());
  ASSERT_NE(p0, nullptr) << lastError();
  ASSERT_NE(p1, nullptr) << rt().last_error(second.dev);
  // Both run (enqueued, nothing waits); then the first device's product
  // goes to the second device, over what the second computed itself: the
  // copy must come after the first device's kernels and after the second's.
  ASSERT_EQ(rt().run(dev, p0, first.inBufs.data(), 3, first.outBufs.data(), 4), 0);
  ASSERT_EQ(rt().run(second.dev, p1, other.inBufs.data(), 3, other.outBufs.data(), 4), 0);
  ASSERT_EQ(rt().copy_peer(second.dev, &other.outBufs[1], dev, &first.outBufs[3]), 0)
      << rt().last_error(second.dev);
  EXPECT_EQ(other.read(1, 128), data.scaled);
  EXPECT_EQ(other.read(0, 32), data.product);
  EXPECT_EQ(first.read(2, 2), data.sums);
  rt().unload(dev, p0);
  rt().unload(second.dev, p1);
  otherBuffers.reset(); // buffers go before their device closes
  rt().close(second.dev);
}

TEST_F(OpenClTest, DamagedProgramsAreErrors) {
  auto refused = [&](const std::string &bytes, const std::string &expect) {
    mdl_program *p = load(dev, bytes);
    EXPECT_EQ(p, nullptr) << "loaded although it should say: " << expect;
    if (p)
      rt().unload(dev, p);
    else
      EXPECT_NE(lastError().find(expect), std::string::npos) << lastError();
  };
  refused("garbage bytes, not a program", "not an mdl GPU program");
  std::string good = testProgram().serialize();
  for (size_t cut : {size_t(9), good.size() / 3, good.size() - 1})
    refused(good.substr(0, cut), "damaged GPU program");
  // Any byte changed after the header: the checksum (which keeps damaged
  // code from the driver's compiler).
  for (size_t at : {size_t(12), size_t(25), good.size() / 2, good.size() - 1}) {
    std::string bytes = good;
    bytes[at] = char(bytes[at] ^ 0x20);
    refused(bytes, "damaged GPU program: its checksum does not match its bytes");
  }
  refused(good + "x", "its checksum does not match");
  // Past the checksum, parse() validates every count, index and offset:
  // bytes changed after the code, with the checksum made right again, are
  // an error or a load, never a crash.
  refused(resealed(good + "x"), "trailing bytes");
  size_t codeEnd = kHeader + 8 + 6 + 1 + 8 + bitcode().size(); // target "spir64", the code
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::string bytes = good;
    unsigned x = seed;
    for (int i = 0; i < 8; ++i) {
      x = x * 1103515245 + 12345;
      bytes[codeEnd + (x >> 8) % (bytes.size() - codeEnd)] = char(x >> 16);
    }
    mdl_program *p = load(dev, resealed(bytes));
    if (p)
      rt().unload(dev, p);
  }

  GpuProgram other = testProgram();
  other.target = "gfx90a";
  other.codeFormat = GpuCodeFormat::AmdgpuCodeObject;
  refused(other.serialize(), "compiled for gfx90a, and this device runs spir64 code");
  GpuProgram format = testProgram();
  format.codeFormat = GpuCodeFormat::Ptx;
  refused(format.serialize(), "carries PTX");
  GpuProgram copy = testProgram();
  copy.steps.back().copy.bytes = 513;
  refused(copy.serialize(), "step 4: a copy of 513 bytes runs past its buffers");
  GpuProgram gemm = testProgram();
  gemm.steps[0].gemm.k = 17;
  refused(gemm.serialize(), "step 0: a product of 8x17 by 17x4");
  GpuProgram epilogue = testProgram();
  epilogue.steps[0].gemm.hasEpilogue = true;
  epilogue.steps[0].gemm.epilogue.kernel = 99;
  refused(epilogue.serialize(), "step 0: kernel 99 does not exist");
  GpuProgram kernel = testProgram();
  kernel.kernels[1].name = "missing";
  refused(kernel.serialize(), "kernel 'missing'");
  GpuProgram block = testProgram();
  block.kernels[0].block[0] = 1u << 24;
  refused(block.serialize(), "has blocks of 16777216 threads");
  GpuProgram code = testProgram();
  code.code = "not bitcode";
  refused(code.serialize(),
          "failed: CL_"); // refused by clCreateProgramWithBinary or clBuildProgram

  mdl_artifact foreign{"cpu-kernels", good.data(), good.size()};
  EXPECT_EQ(rt().load(dev, &foreign), nullptr);
  EXPECT_NE(lastError().find("not 'cpu-kernels'"), std::string::npos) << lastError();
}

TEST_F(OpenClTest, RunErrorsNameTheStepsLine) {
  ProgramData data;
  ProgramBuffers bufs(dev, data);
  GpuProgram prog = testProgram();
  prog.steps[2].launch.args.pop_back(); // scale gets 3 arguments of 4
  mdl_program *p = load(dev, prog.serialize());
  ASSERT_NE(p, nullptr) << lastError();
  EXPECT_NE(rt().run(dev, p, bufs.inBufs.data(), 3, bufs.outBufs.data(), 4), 0);
  EXPECT_EQ(lastError().rfind("12:3: (v + v) * 0.5: kernel 'scale': the kernel takes 7 "
                              "arguments, and the program gives it 6",
                              0),
            0u)
      << lastError();
  // Buffers that are not the program's inputs.
  EXPECT_NE(rt().run(dev, p, bufs.inBufs.data(), 2, bufs.outBufs.data(), 4), 0);
  EXPECT_NE(lastError().find("takes 3 inputs, and was given 2"), std::string::npos) << lastError();
  std::vector<mdl_buffer> swapped = bufs.inBufs;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(rt().run(dev, p, swapped.data(), 3, bufs.outBufs.data(), 4), 0);
  EXPECT_NE(lastError().find("input 0 is f32[16, 4], and the GPU program expects f32[8, 16]"),
            std::string::npos)
      << lastError();
  std::vector<mdl_buffer> stray = bufs.inBufs;
  float host[128];
  stray[2].data = host;
  EXPECT_NE(rt().run(dev, p, stray.data(), 3, bufs.outBufs.data(), 4), 0);
  EXPECT_NE(lastError().find("input 2: address"), std::string::npos) << lastError();
  rt().unload(dev, p);
}

/// A program whose two steps check x[0] and x[1] (x: i64[2]) and report a
/// negative one through the error record, at lines 20 and 21.
GpuProgram reportingProgram() {
  GpuProgram p = testProgram();
  p.inputs = {{MDL_I64, {2}}};
  p.outputs = {};
  p.scratchBytes = 256;
  p.errorOffset = 128;
  p.steps.clear();
  GpuRef record = scratch(128);
  p.steps.push_back(launchStep(kReport, 1, {in(0), record, i64(0)}, 20, "check x[0]"));
  p.steps.back().error = "x[0] is {}, below zero";
  p.steps.push_back(launchStep(kReport, 1, {in(0, 8), record, i64(1)}, 21, "check x[1]"));
  p.steps.back().error = "x[1] is {}, below zero";
  return p;
}

TEST_F(OpenClTest, KernelErrorsAreReportedAtTheStepsLine) {
  void *x = alloc(16);
  int64_t shape[] = {2};
  mdl_buffer xb{x, MDL_I64, 1, shape, nullptr};
  auto runWith = [&](mdl_program *p, int64_t a, int64_t b) {
    int64_t host[2] = {a, b};
    EXPECT_EQ(rt().copy_in(dev, &xb, host), 0) << lastError();
    return rt().run(dev, p, &xb, 1, nullptr, 0);
  };
  mdl_program *p = load(dev, reportingProgram().serialize());
  ASSERT_NE(p, nullptr) << lastError();
  EXPECT_EQ(runWith(p, 5, 6), 0) << lastError();
  ASSERT_NE(runWith(p, 5, -3), 0);
  EXPECT_EQ(lastError(), "21:3: x[1] is -3, below zero");
  // Both steps fail: the first one's error is the one reported.
  ASSERT_NE(runWith(p, -1, -7), 0);
  EXPECT_EQ(lastError(), "20:3: x[0] is -1, below zero");
  // The record is cleared after an error: the next run is clean.
  EXPECT_EQ(runWith(p, 0, 0), 0) << lastError();
  rt().unload(dev, p);

  // A record naming a step without a message is an error, not a crash.
  GpuProgram stray = reportingProgram();
  stray.steps[1].launch.args[2] = i64(7);
  p = load(dev, stray.serialize());
  ASSERT_NE(p, nullptr) << lastError();
  ASSERT_NE(runWith(p, 1, -2), 0);
  EXPECT_NE(lastError().find("error record names step 7, which reports no error"),
            std::string::npos)
      << lastError();
  rt().unload(dev, p);
  rt().release_memory(dev, x);

  // Records that are not inside scratch, messages on steps that cannot
  // write them: refused at load.
  auto refused = [&](const GpuProgram &prog, const std::string &expect) {
    mdl_program *q = load(dev, prog.serialize());
    EXPECT_EQ(q, nullptr) << "loaded although it should say: " << expect;
    if (q)
      rt().unload(dev, q);
    else
      EXPECT_NE(lastError().find(expect), std::string::npos) << lastError();
  };
  GpuProgram unaligned = reportingProgram();
  unaligned.errorOffset = 4;
  refused(unaligned, "the error record at scratch offset 4");
  GpuProgram outside = reportingProgram();
  outside.errorOffset = 248;
  refused(outside, "the error record at scratch offset 248 is not inside 256 bytes");
  GpuProgram none = reportingProgram();
  none.errorOffset = -1;
  refused(none, "step 0: an error message on a step that cannot report one");
  GpuProgram copy = testProgram();
  copy.errorOffset = 0;
  copy.steps.back().error = "{}";
  refused(copy, "step 4: an error message on a step that cannot report one");
}

TEST(GpuRuntimeTimings, CountLaunchesAndBytes) {
  Opened o = openGpu("opencl", 0, 1);
  if (!o.dev)
    GTEST_SKIP() << "no OpenCL device (" << o.why << ")";
  ProgramData data;
  std::string printed;
  {
    ProgramBuffers bufs(o.dev, data);
    mdl_program *p = load(o.dev, testProgram().serialize());
    ASSERT_NE(p, nullptr) << rt().last_error(o.dev);
    for (int run = 0; run < 3; ++run)
      ASSERT_EQ(rt().run(o.dev, p, bufs.inBufs.data(), 3, bufs.outBufs.data(), 4), 0);
    bufs.read(2, 2);
    rt().unload(o.dev, p);
  }
  testing::internal::CaptureStderr();
  rt().close(o.dev);
  printed = testing::internal::GetCapturedStderr();
  // 4 launches a run (the product on mdl's kernel: OpenCL has no vendor
  // BLAS), 3 runs; in: the three inputs (and the 64 bytes of constants);
  // out: the one read; within: 3 copies of 512 bytes.
  EXPECT_NE(printed.find("gpu 0: "), std::string::npos) << printed;
  EXPECT_NE(printed.find("12 launches of 4 kernels"), std::string::npos) << printed;
  EXPECT_NE(printed.find("copied in 1.3 KiB, out 8 B, from peers 0 B, within 1.5 KiB"),
            std::string::npos)
      << printed;
  for (const char *row : {"matmul", "add", "scale", "sum64", "sum of halves"})
    EXPECT_NE(printed.find(row), std::string::npos) << row << " in " << printed;
}

TEST(GpuRuntimeOpen, AbsentRuntimesAndDevicesAreReasons) {
  Opened bogus = openGpu("vulkan", 0);
  ASSERT_EQ(bogus.dev, nullptr);
  EXPECT_EQ(bogus.why, "unknown GPU runtime 'vulkan' (auto, hip, cuda or opencl)");
  // Where a vendor's GPU exists this opens it; elsewhere the reason names
  // the API and what was missing.
  for (const char *api : {"hip", "cuda"}) {
    Opened o = openGpu(api, 0);
    if (o.dev) {
      EXPECT_FALSE(std::string(rt().describe(o.dev)).empty());
      rt().close(o.dev);
      continue;
    }
    std::string prefix = std::string(api) == "hip" ? "HIP: " : "CUDA: ";
    EXPECT_EQ(o.why.rfind(prefix, 0), 0u) << o.why;
  }
  Opened any = openGpu("auto", 0);
  if (any.dev)
    rt().close(any.dev);
  else
    EXPECT_EQ(any.why.rfind("no GPU found (HIP: ", 0), 0u) << any.why;
  Opened far = openGpu("opencl", 99);
  ASSERT_EQ(far.dev, nullptr);
  EXPECT_NE(far.why.find("no device 99"), std::string::npos) << far.why;
}

} // namespace
