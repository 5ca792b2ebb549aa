// What the mpc kind's compile-time half hands its runtime: one segment as a
// protocol program over shared values (MpcCompile.cpp makes it,
// MpcRuntime.cpp runs it).
#pragma once

#include "backend/mpc/Program.h"
#include "backend/runtime/DeviceBackend.h"

#include <memory>
#include <string>

namespace mdl::backend::mpc {

/// The artifact format of protocol programs.
constexpr const char *kProtocolFormat = "rep3-program";

struct ProtocolArtifact : Artifact {
  Program program;
  mdl_artifact view() const override { return {kProtocolFormat, this, 0}; }
};

/// Whether the protocol implements operations of `kind` (the kind's
/// answer to supports()).
bool mpcImplements(ir::OpKind kind);

/// Translates a segment into a protocol program; null with `error` (which
/// starts with "LINE:COL: ") when it cannot.
std::unique_ptr<Artifact> compileProtocol(const ir::Operation &segment, std::string &error);

/// The runtime of mpc devices (the C ABI): parties as threads of this
/// process, or this process as one party of three over TLS when the device
/// is opened with the run arguments mpc_party, mpc_peers and mpc_tls.
const mdl_device_interface *mpcRuntime();

} // namespace mdl::backend::mpc
