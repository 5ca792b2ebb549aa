// A vendor library opened with dlopen (libamdhip64, libcuda, libOpenCL, the
// BLAS libraries): the GPU runtime never links one, so that mdl runs where
// none is installed and reports what is missing instead. A library is
// opened once per process and never closed: devices, streams and modules
// made through it may outlive any one of its users.
#pragma once

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace mdl::backend::hip {

class DynamicLibrary {
public:
  /// Opens the first of `names` that loads (or the file that the
  /// environment variable `override` names, when set). The error lists
  /// what was tried.
  static llvm::Expected<DynamicLibrary> open(const char *override,
                                             const std::vector<const char *> &names);

  /// The file name that loaded.
  const std::string &name() const { return name_; }

  /// Binds `fn` to the symbol `symbol`; an error names the missing symbol.
  template <typename Fn> llvm::Error bind(Fn &fn, const char *symbol) const {
    void *p = lookup(symbol);
    if (!p)
      return missing(symbol);
    fn = reinterpret_cast<Fn>(p);
    return llvm::Error::success();
  }
  /// Binds `fn` to the first of `symbols` the library has (an entry point
  /// that gained a versioned name).
  template <typename Fn>
  llvm::Error bindAny(Fn &fn, std::initializer_list<const char *> symbols) const {
    for (const char *s : symbols)
      if (void *p = lookup(s)) {
        fn = reinterpret_cast<Fn>(p);
        return llvm::Error::success();
      }
    return missing(*symbols.begin());
  }
  /// The symbol's address, or null.
  void *lookup(const char *symbol) const;

private:
  llvm::Error missing(const char *symbol) const;
  void *handle_ = nullptr;
  std::string name_;
};

} // namespace mdl::backend::hip
