// A device kind added from outside mdl: the worked example of the plug-in
// contract (backend/runtime/DeviceBackend.h), and a test of it. The kind is
// `testgpu`: pretend GPUs numbered by ordinal (0 and 1 exist), whose memory
// is scrambled (every byte XOR 0x5A), so the host program can only read it
// through copy_out. Its compile-time half implements the core operations
// (not the HLO dialect) and compiles a segment into a kernel program; its
// run-time half unscrambles the inputs, runs the program on the CPU kernels
// and scrambles the outputs, and reports, when a device is closed, how many
// segments it ran and how many bytes moved.
//
//   mdl --device-plugin libmdl_test_device_plugin.so run program.mdl
//
// Everything a kind needs is here: one registration function, the
// descriptor, the two halves. It is built as a shared library that calls
// into the mdl executable (registerDeviceBackend, the kernel programs).
#include "backend/cpu/CpuDevice.h"
#include "backend/runtime/DeviceBackend.h"
#include "stdlib/Registry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct mdl_device {
  int ordinal = 0;
  long segments = 0, bytesIn = 0, bytesOut = 0;
  std::string description, error;
};

namespace {

using namespace mdl;

void scramble(void *p, uint64_t n) {
  auto *b = static_cast<unsigned char *>(p);
  for (uint64_t i = 0; i < n; ++i)
    b[i] ^= 0x5A;
}

uint64_t bytesOf(const mdl_buffer &b) { return uint64_t(backend::bufferType(b).byteSize()); }

// --- run-time half: the C ABI ---------------------------------------------

mdl_device *openTest(const mdl_device_arg *args, uint32_t n, const char **error) {
  int ordinal = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (std::strcmp(args[i].name, "ordinal") == 0)
      ordinal = int(args[i].int_value);
  if (ordinal > 1) {
    *error = "the test device has ordinals 0 and 1 only";
    return nullptr;
  }
  auto *d = new mdl_device;
  d->ordinal = ordinal;
  d->description = "test GPU " + std::to_string(ordinal) + " (scrambled memory)";
  return d;
}

void closeTest(mdl_device *d) {
  std::fprintf(stderr, "test-device %d: %ld segments, %ld bytes in, %ld bytes out\n", d->ordinal,
               d->segments, d->bytesIn, d->bytesOut);
  delete d;
}

const char *describeTest(mdl_device *d) { return d->description.c_str(); }
void *allocTest(mdl_device *, uint64_t n) { return std::aligned_alloc(64, (n + 63) / 64 * 64 + 64); }
void freeTest(mdl_device *, void *p) { std::free(p); }

int copyInTest(mdl_device *d, const mdl_buffer *dst, const void *src) {
  if (!src) {
    d->error = "the test device needs the value itself";
    return 1;
  }
  uint64_t n = bytesOf(*dst);
  std::memcpy(dst->data, src, n);
  scramble(dst->data, n);
  d->bytesIn += long(n);
  return 0;
}

int copyOutTest(mdl_device *d, void *dst, const mdl_buffer *src) {
  uint64_t n = bytesOf(*src);
  std::memcpy(dst, src->data, n);
  scramble(dst, n);
  d->bytesOut += long(n);
  return 0;
}

int copyTest(mdl_device *, const mdl_buffer *dst, const mdl_buffer *src) {
  std::memcpy(dst->data, src->data, bytesOf(*src)); // scrambled either way
  return 0;
}

mdl_program *loadTest(mdl_device *d, const mdl_artifact *a) {
  if (std::strcmp(a->format, backend::cpu::kKernelProgramFormat) != 0) {
    d->error = std::string("the test device cannot run a '") + a->format + "' artifact";
    return nullptr;
  }
  return reinterpret_cast<mdl_program *>(new mdl_artifact(*a));
}

int runTest(mdl_device *d, mdl_program *p, const mdl_buffer *in, uint32_t nIn,
            const mdl_buffer *out, uint32_t nOut) {
  // Unscramble the inputs into plain buffers, run, scramble the outputs.
  std::vector<std::vector<unsigned char>> plain(nIn);
  std::vector<mdl_buffer> plainIn(in, in + nIn);
  for (uint32_t i = 0; i < nIn; ++i) {
    uint64_t n = bytesOf(in[i]);
    plain[i].assign(static_cast<unsigned char *>(in[i].data),
                    static_cast<unsigned char *>(in[i].data) + n);
    scramble(plain[i].data(), n);
    plainIn[i].data = plain[i].data();
  }
  if (!backend::cpu::runKernelProgram(*reinterpret_cast<mdl_artifact *>(p), plainIn.data(), nIn,
                                      out, nOut, d->error))
    return 1;
  for (uint32_t i = 0; i < nOut; ++i)
    scramble(out[i].data, bytesOf(out[i]));
  ++d->segments;
  return 0;
}

void unloadTest(mdl_device *, mdl_program *p) { delete reinterpret_cast<mdl_artifact *>(p); }
int syncTest(mdl_device *) { return 0; }
const char *lastErrorTest(mdl_device *d) { return d->error.c_str(); }

const mdl_device_interface kTestRuntime = {
    MDL_DEVICE_ABI_VERSION, "testgpu",  0,       openTest, closeTest,  describeTest,
    allocTest,              freeTest,   copyInTest, copyOutTest, copyTest, loadTest,
    runTest,                unloadTest, syncTest, lastErrorTest,
    nullptr,                nullptr, // target: portable kernel programs; no peers
};

// --- the kind: descriptor and compile-time half -----------------------------

class TestGpuBackend : public backend::DeviceBackend {
public:
  stdlib::DeviceKindInfo descriptor() const override {
    return stdlib::ordinalDeviceKind(
        "testgpu", "pretend GPUs with scrambled memory (a kind added from outside)");
  }
  bool supports(ir::OpKind k) const override {
    return stdlib::opInfo(k).dialect == stdlib::Dialect::Core;
  }
  bool inlineIntoHost(const mdl_device_interface &) const override { return false; }
  std::unique_ptr<backend::Artifact> compile(const ir::Operation &segment, const std::string &,
                                             std::string &error) const override {
    return backend::cpu::compileKernelProgram(segment, error);
  }
  backend::RuntimeChoice runtime() override { return {&kTestRuntime, "", false}; }
  bool fallsBackToHost() const override { return true; }
};

} // namespace

extern "C" bool mdl_register_device_kinds(unsigned abiVersion, std::string &error) {
  if (abiVersion != MDL_DEVICE_ABI_VERSION) {
    error = "built for device ABI version " + std::to_string(MDL_DEVICE_ABI_VERSION) +
            ", mdl has " + std::to_string(abiVersion);
    return false;
  }
  if (!backend::registerDeviceBackend(std::make_unique<TestGpuBackend>())) {
    error = "a device kind named 'testgpu' is registered already";
    return false;
  }
  return true;
}
