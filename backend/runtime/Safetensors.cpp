// The safetensors format: reading one key as a view of the mapped file, and
// writing a list of tensors.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {...}, "w1": {"dtype": "F32", "shape": [8, 16],
//    "data_offsets": [begin, end]}, ...}
// then the data section; offsets are relative to its start. Every field is
// validated before any data is touched, with 64-bit arithmetic throughout,
// so a truncated or hostile file gives an error, never a read out of
// bounds.
#include "backend/runtime/FileIO.h"
#include "backend/runtime/WeightFormats.h"
#include "backend/runtime/Weights.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

namespace mdl::backend {

using ir::DType;
using nlohmann::json;

namespace {

constexpr const char *kSupported =
    "BOOL, I8, U8, I32, I64, F16, BF16, F32, F64";

const char *stName(DType t) {
  switch (t) {
  case DType::Bool:
    return "BOOL";
  case DType::I8:
    return "I8";
  case DType::U8:
    return "U8";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  }
  return "?";
}

bool parseStName(const std::string &s, DType &out) {
  for (int i = 0; i < ir::kNumDTypes; ++i)
    if (s == stName(DType(i))) {
      out = DType(i);
      return true;
    }
  return false;
}

struct Header {
  fileio::MappedFile file;
  uint64_t dataStart = 0; // 8 + header length
  json root;              // an object
};

struct Entry {
  ir::TensorType type;
  uint64_t begin = 0; // absolute file offset of the first byte
};

llvm::Expected<Header> readHeader(const std::string &path) {
  auto file = fileio::mapFile(path);
  if (!file)
    return file.takeError();
  Header h;
  h.file = std::move(*file);
  uint64_t size = h.file.size;
  if (size < 8)
    return fileio::error(
        path, "not a safetensors file: " + std::to_string(size) +
                  " bytes is too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | h.file.data[i];
  if (n > size - 8)
    return fileio::error(path, "not a safetensors file: header length " +
                                   std::to_string(n) +
                                   " exceeds the file size (" +
                                   std::to_string(size) + " bytes)");
  const char *text = reinterpret_cast<const char *>(h.file.data + 8);
  try {
    h.root = json::parse(text, text + n);
  } catch (const json::exception &e) {
    std::string what = e.what();
    size_t close = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    return fileio::error(path, "header is not valid JSON: " + what);
  }
  if (!h.root.is_object())
    return fileio::error(path, "header is not a JSON object");
  h.dataStart = 8 + n;
  return h;
}

std::string keyList(const json &root) {
  std::vector<std::string> keys;
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it.key() != "__metadata__")
      keys.push_back(it.key());
  if (keys.empty())
    return "the file holds no tensors";
  std::sort(keys.begin(), keys.end());
  constexpr size_t kShown = 20;
  std::string s = "keys: ";
  for (size_t i = 0; i < keys.size() && i < kShown; ++i)
    s += (i ? ", " : "") + keys[i];
  if (keys.size() > kShown)
    s += ", ... (" + std::to_string(keys.size() - kShown) + " more)";
  return s;
}

bool asCount(const json &j, uint64_t &out) {
  if (!j.is_number_unsigned() &&
      !(j.is_number_integer() && j.get<int64_t>() >= 0))
    return false;
  out = j.get<uint64_t>();
  return out <= uint64_t(INT64_MAX);
}

llvm::Expected<Entry> findEntry(const std::string &path, const Header &h,
                                const std::string &key) {
  std::string where = "key '" + key + "'";
  if (key == "__metadata__")
    return fileio::error(path,
                         "'__metadata__' is the metadata block, not a tensor");
  auto it = h.root.find(key);
  if (it == h.root.end())
    return fileio::error(path, "no " + where + " (" + keyList(h.root) + ")");
  const json &e = *it;
  if (!e.is_object())
    return fileio::error(
        path, where + " is not an object with dtype, shape and data_offsets");
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string())
    return fileio::error(path, where + " has no string 'dtype'");
  Entry out;
  std::string dname = dt->get<std::string>();
  if (!parseStName(dname, out.type.dtype))
    return fileio::error(path, where + " has dtype " + dname +
                                   ", which mdl does not support (supported: " +
                                   kSupported + ")");
  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array())
    return fileio::error(path, where + " has no 'shape' list");
  std::vector<int64_t> shape;
  for (const json &d : *sh) {
    uint64_t v;
    if (!asCount(d, v))
      return fileio::error(path, where + " has a malformed shape " +
                                     sh->dump() +
                                     " (expected non-negative integers)");
    shape.push_back(int64_t(v));
  }
  out.type = ir::TensorType::of(out.type.dtype, shape);
  auto off = e.find("data_offsets");
  uint64_t b, en;
  if (off == e.end() || !off->is_array() || off->size() != 2 ||
      !asCount((*off)[0], b) || !asCount((*off)[1], en) || b > en)
    return fileio::error(
        path, where + " has malformed data_offsets (expected [begin, end] "
                      "with 0 <= begin <= end)");
  uint64_t dataSize = h.file.size - h.dataStart;
  if (en > dataSize)
    return fileio::error(
        path, where + " data_offsets [" + std::to_string(b) + ", " +
                  std::to_string(en) + "] lie outside the data section (" +
                  std::to_string(dataSize) + " bytes); is the file truncated?");
  uint64_t bytes;
  if (!fileio::byteSizeOf(out.type.dtype, shape, bytes))
    return fileio::error(path, where + " has shape " + out.type.str() +
                                   ", too large to address");
  if (bytes != en - b)
    return fileio::error(path, where + " is " + out.type.str() + " (" +
                                   std::to_string(bytes) +
                                   " bytes), but its data_offsets span " +
                                   std::to_string(en - b) + " bytes");
  out.begin = h.dataStart + b;
  return out;
}

} // namespace

namespace formats {

llvm::Expected<Tensor> readSafetensorsKey(const std::string &path,
                                          const std::string &key) {
  auto h = readHeader(path);
  if (!h)
    return h.takeError();
  auto e = findEntry(path, *h, key);
  if (!e)
    return e.takeError();
  return fileio::tensorAt(path, h->file, e->begin, e->type);
}

llvm::Expected<ir::TensorType> safetensorsKeyType(const std::string &path,
                                                  const std::string &key) {
  auto h = readHeader(path);
  if (!h)
    return h.takeError();
  auto e = findEntry(path, *h, key);
  if (!e)
    return e.takeError();
  return e->type;
}

llvm::Expected<std::string> safetensorsKeySummary(const std::string &path) {
  auto h = readHeader(path);
  if (!h)
    return h.takeError();
  return keyList(h->root);
}

} // namespace formats

llvm::Error
writeSafetensors(const std::string &path,
                 const std::vector<std::pair<std::string, Tensor>> &tensors) {
  std::set<std::string> seen;
  std::string header = "{";
  uint64_t offset = 0;
  for (const auto &[key, t] : tensors) {
    if (key == "__metadata__")
      return fileio::error(path, "'__metadata__' cannot name a tensor");
    if (!seen.insert(key).second)
      return fileio::error(path, "key '" + key + "' appears twice");
    if (!t.valid() || !t.type().isStatic())
      return fileio::error(path, "key '" + key + "' has no data to write");
    std::string quoted;
    try {
      quoted = json(key).dump();
    } catch (const json::exception &) {
      return fileio::error(path, "key '" + key + "' is not valid UTF-8");
    }
    uint64_t bytes = t.byteSize();
    if (header.size() > 1)
      header += ',';
    header += quoted + ":{\"dtype\":\"" + stName(t.dtype()) + "\",\"shape\":[";
    for (int i = 0; i < t.rank(); ++i)
      header += (i ? "," : "") + std::to_string(t.dim(i));
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += '}';
  // Pad with spaces so the data section starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = uint8_t(uint64_t(header.size()) >> (8 * i));

  fileio::Writer w;
  if (llvm::Error err = w.open(path))
    return err;
  if (llvm::Error err = w.write(len, 8))
    return err;
  if (llvm::Error err = w.write(header.data(), header.size()))
    return err;
  for (const auto &kv : tensors)
    if (llvm::Error err = w.write(kv.second.raw(), kv.second.byteSize()))
      return err;
  return w.close();
}

} // namespace mdl::backend
