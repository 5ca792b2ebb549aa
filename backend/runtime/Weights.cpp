// Loading weights: picks the file format from the call (`load(file.npy)` is
// NumPy, `load(file.npz, key)` a NumPy archive, `load(file, key)`
// safetensors) and checks the loaded type against the declaration.
#include "backend/runtime/Weights.h"

#include "backend/runtime/FileIO.h"
#include "backend/runtime/WeightFormats.h"

namespace mdl::backend {

namespace {

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Rejects a key on a .npy file and a missing key on anything else.
llvm::Error checkKeyUse(const std::string &path, const std::string &key) {
  if (!key.empty() && endsWith(path, ".npy"))
    return fileio::error(path,
                         "a .npy file holds one array and takes no key (got '" +
                             key + "')");
  if (key.empty() && endsWith(path, ".safetensors")) {
    auto keys = formats::safetensorsKeySummary(path);
    if (!keys)
      return keys.takeError();
    return fileio::error(path, "a safetensors file needs a key: load(\"" +
                                   path + "\", \"KEY\") (" + *keys + ")");
  }
  return llvm::Error::success();
}

// Symbolic or unknown declared dimensions match any size.
bool matches(const ir::TensorType &found, const ir::TensorType &expected) {
  if (found.dtype != expected.dtype || found.rank() != expected.rank())
    return false;
  for (int i = 0; i < found.rank(); ++i)
    if (expected.dims[i].isStatic() &&
        expected.dims[i].size != found.dims[i].size)
      return false;
  return true;
}

llvm::Error checkType(const std::string &path, const std::string &key,
                      const ir::TensorType &found,
                      const ir::TensorType *expected) {
  if (!expected || matches(found, *expected))
    return llvm::Error::success();
  std::string what = key.empty() ? "the array" : "key '" + key + "'";
  return fileio::error(path, what + " is " + found.str() +
                                 ", but the declaration says " +
                                 expected->str());
}

} // namespace

llvm::Expected<Tensor> loadWeight(const std::string &path,
                                  const std::string &key,
                                  const ir::TensorType *expected) {
  if (llvm::Error err = checkKeyUse(path, key))
    return err;
  auto t = endsWith(path, ".npz") ? formats::readNpzArray(path, key)
           : key.empty()          ? readNpy(path)
                                  : formats::readSafetensorsKey(path, key);
  if (!t)
    return t.takeError();
  if (llvm::Error err = checkType(path, key, t->type(), expected))
    return err;
  return t;
}

llvm::Expected<ir::TensorType> weightType(const std::string &path,
                                          const std::string &key) {
  if (llvm::Error err = checkKeyUse(path, key))
    return err;
  if (endsWith(path, ".npz"))
    return formats::npzArrayType(path, key);
  return key.empty() ? formats::npyType(path)
                     : formats::safetensorsKeyType(path, key);
}

llvm::Expected<Tensor> readArray(const std::string &path) {
  return endsWith(path, ".npz") ? formats::readNpzArray(path, "") : readNpy(path);
}

} // namespace mdl::backend
