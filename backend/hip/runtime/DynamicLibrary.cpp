// Opening vendor libraries (see DynamicLibrary.h).
#include "backend/hip/runtime/DynamicLibrary.h"

#include <cstdlib>
#include <dlfcn.h>

namespace mdl::backend::hip {

llvm::Expected<DynamicLibrary> DynamicLibrary::open(const char *override,
                                                    const std::vector<const char *> &names) {
  std::vector<std::string> tried;
  const char *env = override ? std::getenv(override) : nullptr;
  if (env && *env)
    tried.push_back(env);
  else
    tried.assign(names.begin(), names.end());
  std::string why;
  for (const std::string &name : tried) {
    // RTLD_LOCAL: a vendor library's symbols never resolve mdl's, nor the
    // other way round.
    if (void *h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      DynamicLibrary lib;
      lib.handle_ = h;
      lib.name_ = name;
      return lib;
    }
    const char *e = dlerror();
    if (why.empty() && e)
      why = e;
  }
  std::string list;
  for (const std::string &name : tried)
    list += (list.empty() ? "" : ", ") + name;
  // dlerror's first line ("libcuda.so.1: cannot open shared object file: No
  // such file or directory") says why the preferred name failed.
  bool notFound = why.find("No such file") != std::string::npos;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 notFound ? list + " not found" : list + ": " + why);
}

void *DynamicLibrary::lookup(const char *symbol) const {
  return handle_ ? dlsym(handle_, symbol) : nullptr;
}

llvm::Error DynamicLibrary::bindAll(std::initializer_list<EntryPoint> entries) const {
  for (const EntryPoint &e : entries) {
    void *address = lookup(e.symbol_);
    if (!address && e.older_)
      address = lookup(e.older_);
    if (!address)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     name_ + " has no '" + e.symbol_ +
                                         "' (an incompatible version?)");
    e.assign_(e.slot_, address);
  }
  return llvm::Error::success();
}

} // namespace mdl::backend::hip
