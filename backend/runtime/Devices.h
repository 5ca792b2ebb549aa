// Opening the run-time devices of a program.
//
// Each declared device that the placed program uses gets a runtime: `cpu`
// devices the CPU interface, `hip` devices the HIP plugin (libmdl_hip.so,
// loaded at run time so `mdl` runs on machines without a GPU) or, when no
// GPU runtime is present, the CPU with one note (N0803; an error, E0403,
// under --fallback=error). `mpc` devices have no runtime in this build
// (E0406). `--device-map A=B` runs device A on B's runtime.
#pragma once

#include "backend/runtime/DeviceInterface.h"
#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <memory>
#include <ostream>
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

struct DeviceOptions {
  bool fallbackError = false;                                // --fallback=error
  std::vector<std::pair<std::string, std::string>> deviceMap; // --device-map A=B
  std::string hipPlugin; // path of the HIP plugin; empty: $MDL_HIP_PLUGIN, then beside mdl
};

/// One opened device.
struct DeviceRuntime {
  const mdl_device_interface *iface = nullptr;
  mdl_device *dev = nullptr;
  std::string description; // "gpu0: hip(0) on CPU (fallback)"
  bool fallback = false;
};

class DeviceSet {
public:
  DeviceSet() = default;
  DeviceSet(const DeviceSet &) = delete;
  DeviceSet &operator=(const DeviceSet &) = delete;
  ~DeviceSet();

  /// Opens the devices `m` uses. `cpu` is the CPU device interface (passed
  /// in by the tool, which registers backends explicitly). A device that
  /// falls back to the CPU is reported as a note (N0803). Returns false
  /// after reporting errors.
  bool open(const ir::Module &m, const DeviceOptions &opts, const mdl_device_interface *cpu,
            ir::DiagnosticEngine &diags);

  /// The runtime of module device `d` (after --device-map).
  DeviceRuntime &runtime(int d) { return *runtimes_.at(size_t(d)); }
  bool isOpen(int d) const { return d >= 0 && size_t(d) < runtimes_.size() && runtimes_[size_t(d)]; }

private:
  std::vector<std::shared_ptr<DeviceRuntime>> runtimes_;
  std::vector<std::shared_ptr<DeviceRuntime>> owned_;
  void *pluginHandle_ = nullptr;
};

/// Parses `A=B` device-map entries; false with `error` on a malformed one.
bool parseDeviceMap(const std::vector<std::string> &specs,
                    std::vector<std::pair<std::string, std::string>> &out, std::string &error);

} // namespace mdl::backend
