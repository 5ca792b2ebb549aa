// Weight and array files: safetensors, NumPy .npy (memory-mapped) and .npz,
// validated against declarations; .npy and safetensors writing for results
// and for `mdl import`.
//
// There is no size limit: files are mapped, never read into memory, and all
// offsets are 64-bit.
#pragma once

#include "backend/runtime/Tensor.h"

#include <llvm/Support/Error.h>

#include <string>
#include <utility>
#include <vector>

namespace mdl::backend {

/// Loads a weight: `key` from a safetensors file, the array of a `.npy`
/// file when `key` is empty, or an array of a `.npz` archive (`key` may be
/// empty when it holds one). The tensor is a view of the mapped file. If
/// `expected` is given, dtype and shape must match it; the error message
/// names the file, the key, the expected and the found type, e.g.
///   mlp.safetensors: key 'w1' is f32[8, 16], but the declaration says f32[8, 32]
llvm::Expected<Tensor> loadWeight(const std::string &path, const std::string &key,
                                  const ir::TensorType *expected);

/// Reads only the header of a weight and returns its type (for `mdl check`,
/// which validates declarations without touching the data).
llvm::Expected<ir::TensorType> weightType(const std::string &path,
                                          const std::string &key);

/// Reads a .npy file (memory-mapped).
llvm::Expected<Tensor> readNpy(const std::string &path);
/// Reads an input array: a .npy file, or the one array of a .npz archive.
llvm::Expected<Tensor> readArray(const std::string &path);
/// Writes a tensor as a .npy file (version 1.0 header, little-endian, C order).
llvm::Error writeNpy(const std::string &path, const Tensor &t);
/// Writes tensors as a safetensors file (keys in the given order).
llvm::Error writeSafetensors(const std::string &path,
                             const std::vector<std::pair<std::string, Tensor>> &tensors);

} // namespace mdl::backend
