// The stand-in GPU driver's shared state (MockGpuDriver.cpp: HIP, the CUDA
// driver and the test's controls; MockGpuBlas.cpp: rocBLAS, hipBLAS and
// cuBLAS): two GPUs whose memory is host memory, the objects alive, the
// calls told to fail, the clock events read. One state per process, in the
// one shared library both files are built into.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#define MOCK_API extern "C" __attribute__((visibility("default")))

namespace mockgpu {

constexpr int kGpus = 2;

// Error codes, the same numbers in HIP and the CUDA driver for these.
constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kOutOfMemory = 2;
constexpr int kInvalidDevice = 101;  // HIP; CUDA's is CUDA_ERROR_INVALID_DEVICE = 101 too
constexpr int kInvalidImage = 200;   // hipErrorInvalidImage
constexpr int kInvalidContext = 201; // CUDA_ERROR_INVALID_CONTEXT, hipErrorInvalidContext
constexpr int kInvalidPtx = 218;     // CUDA_ERROR_INVALID_PTX
constexpr int kInvalidHandle = 400;  // hipErrorInvalidHandle, CUDA_ERROR_INVALID_HANDLE
constexpr int kNotFound = 500;
constexpr int kNotReady = 600;
constexpr int kPeerAccessAlreadyEnabled = 704;
constexpr int kLaunchFailure = 719; // hipErrorLaunchFailure, CUDA_ERROR_LAUNCH_FAILED

struct Allocation {
  int device;
  size_t bytes;
};

struct Stream {
  int device;
};

struct Event {
  int device; // the current device (CUDA: context) when it was made
  unsigned flags;
  bool recorded = false;
  double stamp = 0;
};

struct Kernel {
  const char *name;
  int arity;
  // Runs it: false for an argument that is not memory of `device`.
  bool (*run)(int device, const uint64_t *args);
};

struct Module;

// A kernel of one loaded module: launching it on another device's stream,
// or after its module is unloaded, is refused.
struct Function {
  const Kernel *kernel;
  Module *module;
};

struct Module {
  int device;
  std::vector<Function> functions;
};

struct Context {
  int device;
  int references = 0;
};

struct BlasHandle {
  const char *library;
  Stream *stream = nullptr;
};

struct State {
  int current = 0;                        // HIP's current device / CUDA's current context's
  bool cudaContextCurrent = false;        // whether a CUDA context was made current
  std::map<uintptr_t, Allocation> memory; // base address -> allocation
  std::set<Stream *> streams;
  std::set<Event *> events;
  std::set<Module *> modules;
  std::set<BlasHandle *> handles;
  Context contexts[kGpus] = {{0}, {1}};
  std::set<std::pair<int, int>> peerAccess; // (device, peer)
  std::map<std::string, int> failNext;      // entry point -> the code its next call returns
  double clockMs = 0;
  int launches = 0, blasCalls = 0;
  unsigned lastShape[7] = {0}; // the last launch's grid, block, dynamic shared bytes
};

inline State &state() {
  static State s;
  return s;
}

// The code the next call of `call` was told to fail with, or 0.
inline int injected(const char *call) {
  auto &f = state().failNext;
  auto it = f.find(call);
  if (it == f.end())
    return 0;
  int code = it->second;
  f.erase(it);
  return code;
}

#define MOCK_FAIL_IF_TOLD(call)                                                                    \
  if (int code = injected(call))                                                                   \
  return code

// Whether [address, address + bytes) lies in one allocation of `device`.
inline bool inside(int device, uint64_t address, uint64_t bytes) {
  auto &m = state().memory;
  auto it = m.upper_bound(uintptr_t(address));
  if (it == m.begin())
    return false;
  --it;
  return it->second.device == device && address - it->first + bytes <= it->second.bytes;
}

template <typename T> inline T *at(uint64_t address) {
  return reinterpret_cast<T *>(uintptr_t(address));
}

inline bool validStream(Stream *s) { return state().streams.count(s) != 0; }
inline bool validEvent(Event *e) { return state().events.count(e) != 0; }

} // namespace mockgpu
