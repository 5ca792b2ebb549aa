// The `mpc` device kind (see MpcKind.h).
#include "backend/mpc/MpcKind.h"
#include "backend/mpc/Certificates.h"
#include "backend/mpc/MpcArtifact.h"
#include "backend/mpc/Ring.h"

namespace mdl::backend::mpc {

namespace {

class MpcBackend : public DeviceBackend {
public:
  stdlib::DeviceKindInfo descriptor() const override {
    using stdlib::ParamKind;
    stdlib::DeviceKindInfo k;
    k.name = "mpc";
    k.summary = "secret-shared computation among `parties` parties, in fixed point";
    k.args = {stdlib::ParamSpec{"parties", ParamKind::Int, ir::Attribute::integer(3), false},
              stdlib::ParamSpec{"protocol", ParamKind::String, ir::Attribute::string("rep3"),
                                false},
              stdlib::ParamSpec{"frac_bits", ParamKind::Int,
                                ir::Attribute::integer(kDefaultFracBits), false}};
    k.memory = stdlib::MemoryModel::Secret;
    k.jitPreparesSegments = false; // softmax, layernorm and gelu whole
    // What the protocol implements, said at check time rather than at run
    // time: rep3 among three parties, 8 to 30 fractional bits (fewer make
    // the approximations useless, more leave too little integer range and
    // make truncation failures likely; docs/mpc.md).
    k.checkArg = [](const std::string &arg, const ir::Attribute &v) -> std::string {
      if (arg == "parties" && v.asInt() != 3)
        return "the rep3 protocol runs among exactly 3 parties";
      if (arg == "frac_bits" && (v.asInt() < 8 || v.asInt() > 30))
        return "8 to 30 fractional bits";
      if (arg == "protocol" && v.asString() != "rep3")
        return "\"rep3\" is the only protocol implemented";
      return "";
    };
    return k;
  }
  bool supports(ir::OpKind k) const override { return mpcImplements(k); }
  // Secret values are never computed as plaintext host code.
  bool inlineIntoHost(const mdl_device_interface &) const override { return false; }
  std::unique_ptr<Artifact> compile(const ir::Operation &segment, const std::string &target,
                                    std::string &error) const override {
    if (!target.empty()) {
      error = "the mpc kind makes no code for target '" + target + "'";
      return nullptr;
    }
    return compileProtocol(segment, error);
  }
  RuntimeChoice runtime() override { return {mpcRuntime(), "", false}; }
};

} // namespace

bool registerMpcKind() { return registerDeviceBackend(std::make_unique<MpcBackend>()); }

bool writeTestCertificates(const std::string &dir, std::string &error) {
  if (llvm::Error e = createTestCertificates(dir)) {
    error = llvm::toString(std::move(e));
    return false;
  }
  return true;
}

} // namespace mdl::backend::mpc
