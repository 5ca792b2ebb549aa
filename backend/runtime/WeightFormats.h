// Internal to the runtime: the weight file formats behind Weights.h.
// Safetensors.cpp, Npy.cpp and Npz.cpp implement them; Weights.cpp picks one
// per file and checks the result against the declaration.
#pragma once

#include "backend/runtime/Tensor.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>

namespace mdl::backend::formats {

/// `key` of a safetensors file, as a view of the mapped file.
llvm::Expected<Tensor> readSafetensorsKey(const std::string &path,
                                          const std::string &key);
/// The type of `key`, from the header alone.
llvm::Expected<ir::TensorType> safetensorsKeyType(const std::string &path,
                                                  const std::string &key);
/// "keys: a, b, c" (sorted, the first 20) or "the file holds no tensors".
llvm::Expected<std::string> safetensorsKeySummary(const std::string &path);
/// The type of a .npy file's array, from the header alone.
llvm::Expected<ir::TensorType> npyType(const std::string &path);

/// What a .npy header says: the array's type and where its data starts.
struct NpyLayout {
  ir::TensorType type;
  uint64_t dataStart = 0;
};
/// Parses the .npy bytes `data` (errors name `path`). With `wholeFile` the
/// bytes must hold all of the data too; without, only the header is read.
llvm::Expected<NpyLayout> parseNpy(const std::string &path, const uint8_t *data, uint64_t size,
                                   bool wholeFile);

/// An array of a .npz archive (a zip of .npy files, stored or deflated):
/// `key` names it (`w` for the member `w.npy`); an empty key takes the only
/// array of an archive that holds one. The data is read into memory.
llvm::Expected<Tensor> readNpzArray(const std::string &path, const std::string &key);
/// The type of an array of a .npz archive, from its header alone.
llvm::Expected<ir::TensorType> npzArrayType(const std::string &path, const std::string &key);

} // namespace mdl::backend::formats
