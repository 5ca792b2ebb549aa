// A vendor library opened with dlopen (libamdhip64, libcuda, libOpenCL, the
// BLAS libraries): the GPU runtime never links one, so that mdl runs where
// none is installed and reports what is missing instead. A library is
// opened once per process and never closed: devices, streams and modules
// made through it may outlive any one of its users. Each API declares the
// entry points it calls as a table of function pointers, bound here in one
// go (EntryPoint, bindAll), so that a library without one of them is
// refused when it is opened, never when the call is made.
#pragma once

#include <llvm/Support/Error.h>

#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace mdl::backend::hip {

/// One entry point of a table: the function pointer it sets, the symbol's
/// name and, for an entry point that gained a versioned name, the name it
/// had before (tried second, for older libraries).
class EntryPoint {
public:
  template <typename Fn>
  EntryPoint(Fn &fn, const char *symbol, const char *older = nullptr)
      : slot_(&fn), symbol_(symbol), older_(older), assign_([](void *slot, void *address) {
          *static_cast<Fn *>(slot) = reinterpret_cast<Fn>(address);
        }) {
    static_assert(std::is_pointer_v<Fn> && std::is_function_v<std::remove_pointer_t<Fn>>,
                  "an entry point is bound to a function pointer");
  }

private:
  friend class DynamicLibrary;
  void *slot_;
  const char *symbol_, *older_;
  void (*assign_)(void *slot, void *address);
};

class DynamicLibrary {
public:
  /// Opens the first of `names` that loads (or the file that the
  /// environment variable `override` names, when set). The error lists
  /// what was tried.
  static llvm::Expected<DynamicLibrary> open(const char *override,
                                             const std::vector<const char *> &names);

  /// The file name that loaded.
  const std::string &name() const { return name_; }

  /// Binds every entry point of a table. The error names the first symbol
  /// the library lacks (for one with an older name, its current name):
  /// "libcuda.so.1 has no 'cuLaunchKernel' (an incompatible version?)".
  llvm::Error bindAll(std::initializer_list<EntryPoint> entries) const;

  /// The symbol's address, or null.
  void *lookup(const char *symbol) const;

private:
  void *handle_ = nullptr;
  std::string name_;
};

/// Opens a library as DynamicLibrary::open does and binds `table` to it
/// (`table.bindAll(library)` lists its entry points): how every GPU API and
/// BLAS library is opened, once per process.
template <typename Table>
llvm::Expected<DynamicLibrary> openAndBind(Table &table, const char *override,
                                           const std::vector<const char *> &names) {
  auto lib = DynamicLibrary::open(override, names);
  if (!lib)
    return lib.takeError();
  if (llvm::Error e = table.bindAll(*lib))
    return e;
  return lib;
}

} // namespace mdl::backend::hip
