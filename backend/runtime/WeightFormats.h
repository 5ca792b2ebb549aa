// Internal to the runtime: the two weight file formats behind Weights.h.
// Safetensors.cpp and Npy.cpp implement them; Weights.cpp picks one per
// file and checks the result against the declaration.
#pragma once

#include "backend/runtime/Tensor.h"

#include <llvm/Support/Error.h>

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

} // namespace mdl::backend::formats
