// The device-kind registry: one descriptor per kind of device (cpu, hip,
// mpc, or a kind added from outside), registered explicitly by the tool's
// main before anything is compiled (never by static constructors).
//
// A descriptor holds what the compiler needs to know about a kind, read by
// Sema (the arguments a declaration takes), lowering, the IR parser,
// affinity and transfer insertion (what the kind implements, whether its
// values are secret), the placement summary and the graph. What a kind is
// at run time (how a segment is compiled, the C ABI of its runtime) is the
// backend's half of the plug-in: backend/runtime/DeviceBackend.h.
#pragma once

#include "ir/IR.h"
#include "stdlib/Registry.h"

#include <functional>
#include <string>
#include <vector>

namespace mdl::stdlib {

/// Where a kind's values live, as placement sees it.
enum class MemoryModel {
  Host,   // host memory: results reach the caller without a copy (cpu)
  Device, // memory of its own: moving a value in or out is a copy (hip)
  Secret, // secret-shared: values enter shared and leave only by reveal (mpc)
};

struct DeviceKindInfo {
  /// The name declarations use: `device g = NAME(...)`.
  std::string name;
  /// One line for messages and `--help`: "HIP kernels on a GPU".
  std::string summary;
  /// The declaration's arguments, in positional order, each an Int or a
  /// String with its default (ParamSpec::dflt) or required.
  std::vector<ParamSpec> args;
  MemoryModel memory = MemoryModel::Device;
  /// The argument that numbers devices of this kind (`ordinal` for hip),
  /// or empty; a kind with one is what an imported XLA device N becomes.
  std::string ordinalArg;
  /// The compile-time half's answer: does this kind implement `kind`?
  std::function<bool(ir::OpKind)> supports;
  /// Whether the JIT's preparation of segments (canonicalize's
  /// decompositions of softmax and layernorm, fuse's loops) applies to this
  /// kind's segments. False for a kind whose compile-time half wants them as
  /// written: the mpc kind, whose softmax is cheaper whole (one reciprocal
  /// per row rather than a division per element) and which never runs the
  /// JIT's loops.
  bool jitPreparesSegments = true;
  /// Checks an argument's value (already of the argument's kind): empty
  /// when it is good, else why not ("ordinals start at 0"). Optional.
  std::function<std::string(const std::string &arg, const ir::Attribute &value)> checkArg;
};

/// The descriptor of a kind of numbered accelerators (`hip(0)`): one
/// required argument `ordinal` (0 or more), device memory, the kind an XLA
/// device ordinal can become.
DeviceKindInfo ordinalDeviceKind(const std::string &name, const std::string &summary);

/// Registers a kind. Returns false (and changes nothing) when a kind of
/// that name is registered already.
bool registerDeviceKind(DeviceKindInfo info);
/// The kind named `name`, or null.
const DeviceKindInfo *findDeviceKind(const std::string &name);
/// The descriptor of a declared device (its kind must be registered).
const DeviceKindInfo &kindOf(const ir::Device &d);
/// Every registered kind's name, in registration order.
std::vector<std::string> deviceKindNames();
/// The kind of the implicit device of a program that declares none: the
/// first registered kind with host memory; null when there is none.
const DeviceKindInfo *hostDeviceKind();
/// The kind an XLA device ordinal becomes: the first registered kind with
/// memory of its own and an ordinal argument; null when there is none.
const DeviceKindInfo *acceleratorDeviceKind();
/// The user-callable operations a kind implements, sorted (for E0303).
std::vector<std::string> supportedCallNames(const DeviceKindInfo &kind);
/// Whether the JIT's canonicalize and fuse apply to segments on device `d`
/// of `m` (DeviceKindInfo::jitPreparesSegments; true off any device).
bool jitPreparesSegments(const ir::Module &m, int d);
/// Whether values on `d` are secret-shared.
inline bool isSecret(const ir::Device &d) { return kindOf(d).memory == MemoryModel::Secret; }
/// Whether `d` holds its values in host memory.
inline bool isHostMemory(const ir::Device &d) { return kindOf(d).memory == MemoryModel::Host; }

} // namespace mdl::stdlib
