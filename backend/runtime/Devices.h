// Opening the run-time devices of a placed program.
//
// Each declared device that the program uses gets the runtime of its kind
// (DeviceBackend::runtime): the CPU's own, a GPU runtime loaded with dlopen
// (so `mdl` runs on machines without one), or, for a kind that falls back
// to the host when its runtime is unavailable, the host kind's runtime,
// with one note (N0803; E0403 under --fallback=error). A kind with no
// runtime in this build is refused (E0406). `--device-map A=B` runs device
// A on B's runtime.
#pragma once

#include "backend/runtime/DeviceBackend.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mdl::backend {

/// The directory of the running binary.
std::string executableDir();

/// Where mdl's library `file` (libmdl_jit.so, a device runtime) is: beside
/// the binary (the build tree), else in `../lib/mdl/` from it (an installed
/// mdl: bin/mdl and lib/mdl/). When neither exists, the first of them, for
/// the error message.
std::string libraryPath(const std::string &file);

/// An argument a run adds to the declared ones of every device it opens:
/// options of one run rather than of the program (`--timings`,
/// `--mpc-party I` as `mpc_party`; a kind's own arguments carry its prefix).
/// A runtime ignores the arguments it does not know.
struct RunArg {
  std::string name;
  ir::Attribute value; // an integer or a string
};

struct DeviceOptions {
  bool fallbackError = false;                                // --fallback=error
  std::vector<std::pair<std::string, std::string>> deviceMap; // --device-map A=B
  std::vector<RunArg> runArgs;
};

/// One opened device.
struct DeviceRuntime {
  const mdl_device_interface *iface = nullptr;
  mdl_device *dev = nullptr;
  /// The kind whose compile-time half makes the artifacts this runtime
  /// runs: the device's own kind, or the host kind it fell back to (or was
  /// mapped onto).
  DeviceBackend *backend = nullptr;
  std::string description; // "gpu0: hip(0) on the CPU (fallback)"
  bool fallback = false;
};

/// A segment compiled by its runtime's compile-time half and loaded on the
/// runtime (the interpreter's and the JIT's segments alike); unloaded when
/// destroyed.
class LoadedSegment {
public:
  LoadedSegment() = default;
  LoadedSegment(const LoadedSegment &) = delete;
  LoadedSegment &operator=(const LoadedSegment &) = delete;
  ~LoadedSegment();

  /// Compiles `segment` with `rt.backend` and loads the artifact on `rt`;
  /// false with `error` when either fails.
  bool load(DeviceRuntime &rt, const ir::Operation &segment, std::string &error);
  bool loaded() const { return program_ != nullptr; }
  /// Runs it on typed buffers of the device (outputs allocated by the
  /// caller). On failure reports E0405 at the operation the runtime names
  /// ("LINE:COL: ..."), else at `loc`, and returns false.
  bool run(const BufferList &in, const BufferList &out, const ir::Location &loc,
           ir::DiagnosticEngine &diags);

private:
  DeviceRuntime *runtime_ = nullptr;
  std::unique_ptr<Artifact> artifact_;
  mdl_program *program_ = nullptr;
};

class DeviceSet {
public:
  DeviceSet() = default;
  DeviceSet(const DeviceSet &) = delete;
  DeviceSet &operator=(const DeviceSet &) = delete;
  ~DeviceSet();

  /// Opens the devices `m` uses. Returns false after reporting errors.
  bool open(const ir::Module &m, const DeviceOptions &opts, ir::DiagnosticEngine &diags);

  /// The runtime of module device `d` (after --device-map).
  DeviceRuntime &runtime(int d) { return *runtimes_.at(size_t(d)); }
  bool isOpen(int d) const { return d >= 0 && size_t(d) < runtimes_.size() && runtimes_[size_t(d)]; }

private:
  std::vector<std::shared_ptr<DeviceRuntime>> runtimes_;
  std::vector<std::shared_ptr<DeviceRuntime>> owned_;
};

/// Parses `A=B` device-map entries; false with `error` on a malformed one.
bool parseDeviceMap(const std::vector<std::string> &specs,
                    std::vector<std::pair<std::string, std::string>> &out, std::string &error);

} // namespace mdl::backend
