// A device plugin for tests: a pretend two-GPU "hip" device that keeps its
// memory scrambled (every byte XOR 0x5A), so the host program can only read
// it through copy_out. It runs segments on the CPU device underneath and
// reports, when closed, how many segments it ran and how many bytes moved.
// Loaded like the real HIP plugin: MDL_HIP_PLUGIN=path/to/this.so.
#include "backend/cpu/CpuDevice.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const mdl_device_interface *cpu() { return mdl::backend::cpu::cpuDeviceInterface(); }

struct TestDevice {
  mdl_device *inner;
  int ordinal;
  long segments = 0, bytesIn = 0, bytesOut = 0;
  std::string description, error;
};

TestDevice *self(mdl_device *d) { return reinterpret_cast<TestDevice *>(d); }

void scramble(void *p, uint64_t n) {
  auto *b = static_cast<unsigned char *>(p);
  for (uint64_t i = 0; i < n; ++i)
    b[i] ^= 0x5A;
}

mdl_device *openTest(int ordinal, int, const char **error) {
  if (ordinal > 1) {
    *error = "the test device has ordinals 0 and 1 only";
    return nullptr;
  }
  auto *t = new TestDevice;
  t->inner = cpu()->open(0, 0, error);
  t->ordinal = ordinal;
  t->description = "test GPU " + std::to_string(ordinal) + " (scrambled memory)";
  return reinterpret_cast<mdl_device *>(t);
}

void closeTest(mdl_device *d) {
  TestDevice *t = self(d);
  std::fprintf(stderr, "test-device %d: %ld segments, %ld bytes in, %ld bytes out\n", t->ordinal,
               t->segments, t->bytesIn, t->bytesOut);
  cpu()->close(t->inner);
  delete t;
}

const char *describeTest(mdl_device *d) { return self(d)->description.c_str(); }
void *allocTest(mdl_device *d, uint64_t n) { return cpu()->alloc(self(d)->inner, n); }
void freeTest(mdl_device *d, void *p) { cpu()->release_memory(self(d)->inner, p); }

int copyInTest(mdl_device *d, void *dst, const void *src, uint64_t n) {
  std::memcpy(dst, src, n);
  scramble(dst, n);
  self(d)->bytesIn += long(n);
  return 0;
}

int copyOutTest(mdl_device *d, void *dst, const void *src, uint64_t n) {
  std::memcpy(dst, src, n);
  scramble(dst, n);
  self(d)->bytesOut += long(n);
  return 0;
}

struct TestSegment {
  mdl_segment *inner;
  std::vector<uint64_t> inBytes, outBytes;
};

// Reads "%N: TYPE" sizes from the segment's signature line.
uint64_t bytesOfType(const std::string &t) {
  uint64_t elem = t.rfind("f64", 0) == 0 || t.rfind("i64", 0) == 0   ? 8
                  : t.rfind("f32", 0) == 0 || t.rfind("i32", 0) == 0 ? 4
                  : t.rfind("f16", 0) == 0 || t.rfind("bf16", 0) == 0 ? 2
                                                                        : 1;
  uint64_t n = 1;
  size_t lb = t.find('[');
  if (lb != std::string::npos) {
    size_t i = lb + 1;
    while (i < t.size() && t[i] != ']') {
      n *= std::strtoull(t.c_str() + i, nullptr, 10);
      i = t.find_first_of(",]", i);
      if (t[i] == ',')
        i += 2;
    }
  }
  return n * elem;
}

mdl_segment *prepareTest(mdl_device *d, const char *text) {
  mdl_segment *inner = cpu()->prepare(self(d)->inner, text);
  if (!inner) {
    self(d)->error = cpu()->last_error(self(d)->inner);
    return nullptr;
  }
  auto *s = new TestSegment{inner, {}, {}};
  // func @segment(%0: f32[4, 8], ...) -> (f32[4, 8], ...)
  std::string sig(text);
  sig = sig.substr(sig.find("func @segment("));
  sig = sig.substr(0, sig.find('{'));
  std::string args = sig.substr(14, sig.find(") -> (") - 14);
  std::string res = sig.substr(sig.find(") -> (") + 6);
  auto split = [](const std::string &list, bool named, std::vector<uint64_t> &out) {
    int depth = 0;
    std::string cur;
    for (char c : list + ",") {
      if (c == '[')
        ++depth;
      if (c == ']')
        --depth;
      if (c == ',' && depth == 0) {
        size_t colon = named ? cur.find(": ") : std::string::npos;
        std::string t = colon == std::string::npos ? cur : cur.substr(colon + 2);
        while (!t.empty() && t[0] == ' ')
          t.erase(0, 1);
        if (!t.empty() && t[0] != ')')
          out.push_back(bytesOfType(t));
        cur.clear();
      } else {
        cur += c;
      }
    }
  };
  split(args, true, s->inBytes);
  split(res.substr(0, res.find(')')), false, s->outBytes);
  return reinterpret_cast<mdl_segment *>(s);
}

int runTest(mdl_device *d, mdl_segment *seg, void *const *in, void *const *out) {
  auto *s = reinterpret_cast<TestSegment *>(seg);
  // Unscramble inputs into plain buffers, run, scramble the outputs.
  std::vector<std::vector<unsigned char>> plainIn(s->inBytes.size());
  std::vector<void *> inPtrs;
  for (size_t i = 0; i < s->inBytes.size(); ++i) {
    plainIn[i].assign(static_cast<unsigned char *>(in[i]),
                      static_cast<unsigned char *>(in[i]) + s->inBytes[i]);
    scramble(plainIn[i].data(), s->inBytes[i]);
    inPtrs.push_back(plainIn[i].data());
  }
  int rc = cpu()->run(self(d)->inner, s->inner, inPtrs.data(), out);
  if (rc != 0) {
    self(d)->error = cpu()->last_error(self(d)->inner);
    return rc;
  }
  for (size_t i = 0; i < s->outBytes.size(); ++i)
    scramble(out[i], s->outBytes[i]);
  ++self(d)->segments;
  return 0;
}

void releaseSegmentTest(mdl_device *d, mdl_segment *seg) {
  auto *s = reinterpret_cast<TestSegment *>(seg);
  cpu()->release_segment(self(d)->inner, s->inner);
  delete s;
}

int syncTest(mdl_device *) { return 0; }
const char *lastErrorTest(mdl_device *d) { return self(d)->error.c_str(); }

const mdl_device_interface kTest = {
    MDL_DEVICE_ABI_VERSION, "hip",     0,           openTest,    closeTest,
    describeTest,           allocTest, freeTest,    copyInTest,  copyOutTest,
    prepareTest,            runTest,   releaseSegmentTest, syncTest, lastErrorTest,
};

} // namespace

extern "C" const mdl_device_interface *mdl_device_plugin(void) { return &kTest; }
