// A device kind as a plug-in: one object per kind, with a compile-time half
// (which operations the kind implements, compiling a segment into an
// artifact, whether a segment may be compiled into host code instead) and
// a run-time half (the C ABI of DeviceInterface.h). Each kind lives in one
// folder under backend/ and is registered by one call from the tool's main
// (tools/Registration.cpp); a kind added from outside is a shared library
// whose `mdl_register_device_kinds` registers it the same way
// (tests/plugin/ is the worked example).
//
// Registering a backend also registers its descriptor with the compiler
// (stdlib/DeviceKinds.h): Sema, the passes and the IR parser see the kind.
#pragma once

#include "backend/runtime/DeviceInterface.h"
#include "backend/runtime/Tensor.h"
#include "ir/IR.h"
#include "stdlib/DeviceKinds.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mdl::backend {

/// A compiled segment: what the compile-time half hands the run-time half.
class Artifact {
public:
  virtual ~Artifact() = default;
  /// Its C view, valid while the artifact lives.
  virtual mdl_artifact view() const = 0;
};

/// The runtime a declared device gets.
struct RuntimeChoice {
  const mdl_device_interface *iface = nullptr;
  /// When `iface` is null: why ("no HIP runtime (libmdl_hip.so: ...)").
  std::string problem;
  /// When `iface` is null: true when this build has no runtime for the kind
  /// at all (E0406), false when one exists but is not usable here (E0403,
  /// or the kind's fallback).
  bool absent = false;
};

class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;

  /// What the compiler knows of the kind (name, arguments, memory model,
  /// supported operations).
  virtual stdlib::DeviceKindInfo descriptor() const = 0;

  // --- compile-time half ---
  /// Whether the kind implements operations of `kind`.
  virtual bool supports(ir::OpKind kind) const = 0;
  /// Whether a backend may compile this kind's segments straight into host
  /// code (the JIT) rather than hand them to `runtime` as artifacts: an
  /// explicit capability of the kind (a secret-sharing kind never allows
  /// it, whatever its memory is), given the runtime it runs on.
  virtual bool inlineIntoHost(const mdl_device_interface &runtime) const = 0;
  /// Compiles a `segment` operation (its region: static types, no control
  /// flow, no devices) into an artifact its runtime runs, for `target`: what
  /// the runtime asks for (mdl_device_interface::target; "" for the kind's
  /// portable artifacts) or what `mdl compile --gpu-arch` names. Null with
  /// `error`, also for a target the kind does not know.
  virtual std::unique_ptr<Artifact> compile(const ir::Operation &segment,
                                            const std::string &target,
                                            std::string &error) const = 0;

  /// What `mdl compile` writes for an artifact this kind compiled: files,
  /// each a name suffix (".hsaco", ".ptx", ".program") and its bytes, and
  /// the segment's manifest entry (a JSON object, as text). False when the
  /// kind writes nothing for its artifacts.
  virtual bool describeArtifact(const Artifact &artifact,
                                std::vector<std::pair<std::string, std::string>> &files,
                                std::string &manifestJson) const {
    return false;
  }

  // --- run-time half ---
  /// The runtime for devices of this kind (found, loaded or absent).
  virtual RuntimeChoice runtime() = 0;
  /// Whether a device of this kind whose runtime is unavailable may run on
  /// the host device kind instead (with a note; --fallback=error refuses).
  virtual bool fallsBackToHost() const { return false; }
};

/// Registers a kind's backend and its descriptor. False (nothing changes)
/// when a kind of that name exists already.
bool registerDeviceBackend(std::unique_ptr<DeviceBackend> backend);
/// The backend of kind `name`, or null.
DeviceBackend *deviceBackend(const std::string &name);

/// Entry point of a shared library that adds device kinds from outside:
/// `extern "C" bool mdl_register_device_kinds(unsigned abiVersion,
/// std::string &error)`, called with MDL_DEVICE_ABI_VERSION; it registers
/// its kinds with registerDeviceBackend (it is built against these headers,
/// and refuses another version).
#define MDL_REGISTER_KINDS_SYMBOL "mdl_register_device_kinds"
using RegisterKindsFn = bool (*)(unsigned abiVersion, std::string &error);

/// Typed buffer descriptors (each keeps its shape alive in `shapes`).
struct BufferList {
  std::vector<mdl_buffer> buffers;
  std::vector<std::vector<int64_t>> shapes;
  void add(void *data, const ir::TensorType &type);
};

/// The dtype code of the ABI for an element type, and back.
mdl_dtype abiDType(ir::DType t);
ir::DType dtypeOfAbi(int32_t code);

/// A buffer's element type and shape (its byteSize() is the bytes of a
/// contiguous copy).
ir::TensorType bufferType(const mdl_buffer &b);
/// A tensor of `b`'s type over the host memory at `data`, which it does not
/// own (a runtime's view of a host-side copy, or of its own host memory).
Tensor hostTensor(const mdl_buffer &b, const void *data);

/// Where a runtime's error message "LINE:COL: message" points: `fallback`
/// with that line and column (or `fallback` itself when the message has
/// none); `rest` receives the message without the prefix.
ir::Location deviceErrorLocation(const std::string &msg, const ir::Location &fallback,
                                 std::string &rest);

} // namespace mdl::backend
