// The export of libmdl_jit.so: a JitSession over a JitRunner (see
// JitSession.h for why the JIT is a library of its own).
#include "backend/jit/JitRunner.h"

namespace mdl::backend::jit {
namespace {

class RunnerSession final : public JitSession {
public:
  RunnerSession(const ir::Module &m, DeviceSet &devices, ir::DiagnosticEngine &diags,
                std::ostream &out, const JitOptions &opts)
      : runner_(m, devices, diags, out, opts) {}
  bool compile() override { return runner_.compile(); }
  bool load(const std::vector<Tensor> &globals) override { return runner_.load(globals); }
  std::optional<std::vector<Tensor>> call(const std::string &fn,
                                          const std::vector<Tensor> &args) override {
    return runner_.call(fn, args);
  }
  const JitStats &stats() const override { return runner_.stats(); }

private:
  JitRunner runner_;
};

} // namespace
} // namespace mdl::backend::jit

extern "C" __attribute__((visibility("default"))) mdl::backend::jit::JitSession *
mdl_jit_create_session(int version, const mdl::ir::Module &m, mdl::backend::DeviceSet &devices,
                       mdl::ir::DiagnosticEngine &diags, std::ostream &out,
                       const mdl::backend::jit::JitOptions &opts) {
  if (version != mdl::backend::jit::kJitInterfaceVersion)
    return nullptr;
  return new mdl::backend::jit::RunnerSession(m, devices, diags, out, opts);
}
