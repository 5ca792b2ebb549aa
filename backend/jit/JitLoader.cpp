// Finds and loads the JIT library (see JitSession.h).
#include "backend/jit/JitSession.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace mdl::backend::jit {

namespace {

struct Loaded {
  JitCreateFn create = nullptr;
  std::string path, problem;
};

const Loaded &library() {
  static Loaded lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = std::getenv("MDL_JIT_LIBRARY");
    lib.path = env && *env ? env : libraryPath("libmdl_jit.so");
    void *h = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      lib.problem = "cannot load the JIT library " + lib.path + ": " +
                    (e ? e : "unknown error");
      return;
    }
    lib.create = reinterpret_cast<JitCreateFn>(dlsym(h, MDL_JIT_CREATE_SYMBOL));
    if (!lib.create)
      lib.problem = lib.path + " is not mdl's JIT library (no " MDL_JIT_CREATE_SYMBOL ")";
  });
  return lib;
}

} // namespace

std::unique_ptr<JitSession> openJitSession(const ir::Module &m, DeviceSet &devices,
                                           ir::DiagnosticEngine &diags, std::ostream &out,
                                           const JitOptions &opts) {
  const Loaded &lib = library();
  std::string problem = lib.problem;
  JitSession *s = nullptr;
  if (lib.create) {
    s = lib.create(kJitInterfaceVersion, m, devices, diags, out, opts);
    if (!s)
      problem = lib.path + " was built for another version of mdl";
  }
  if (!s) {
    auto &d = diags.error("E0900", {}, problem);
    d.notes.push_back({{}, "libmdl_jit.so is built with mdl and belongs beside the mdl binary, "
                           "or in ../lib/mdl/ from it (or set MDL_JIT_LIBRARY); "
                           "--backend=interp runs without it"});
  }
  return std::unique_ptr<JitSession>(s);
}

} // namespace mdl::backend::jit
