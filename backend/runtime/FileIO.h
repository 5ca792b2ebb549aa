// Internal to the runtime: memory-mapped input files and streaming output
// files for the weight readers and writers (Safetensors.cpp, Npy.cpp).
//
// Every error names the file: `path: what went wrong`.
#pragma once

#include "backend/runtime/Tensor.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mdl::backend::fileio {

/// `path: message` as an llvm::Error.
llvm::Error error(const std::string &path, const std::string &message);

/// A whole file mapped read-only (MAP_PRIVATE). `owner` unmaps it when the
/// last tensor viewing it is gone. An empty file has data == nullptr.
struct MappedFile {
  const uint8_t *data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<void> owner;
};

llvm::Expected<MappedFile> mapFile(const std::string &path);

/// A tensor of `type` whose bytes start at `offset` in the mapping: a view
/// when the address suits the element size, otherwise an aligned copy. The
/// caller has checked that the bytes lie inside the file.
llvm::Expected<Tensor> tensorAt(const std::string &path, const MappedFile &file,
                                uint64_t offset, const ir::TensorType &type);

/// Byte size of a static shape of `dtype`; false when it overflows int64.
bool byteSizeOf(ir::DType dtype, const std::vector<int64_t> &shape,
                uint64_t &bytes);

/// A file written front to back; errors carry the path and errno's text.
class Writer {
public:
  Writer() = default;
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;
  ~Writer();
  llvm::Error open(const std::string &path);
  llvm::Error write(const void *data, uint64_t bytes);
  llvm::Error close();

private:
  std::string path_;
  int fd_ = -1;
};

} // namespace mdl::backend::fileio
