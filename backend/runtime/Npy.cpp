// The NumPy .npy format: reading (memory-mapped) and writing.
//
// Layout: "\x93NUMPY", a major and a minor version byte, the header length
// (2 bytes little-endian in version 1.x, 4 bytes in 2.x and 3.x), then the
// header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline; the data follows in C order.
//
// bf16 has no NumPy type code. ml_dtypes' bfloat16 arrays are saved by
// np.save as two-byte void ('<V2'), so mdl writes bf16 as '<V2' and reads
// '<V2' (or '|V2') back as bf16; NumPy reads such a file as raw 2-byte
// records that `.view(ml_dtypes.bfloat16)` turns back into numbers.
#include "backend/runtime/FileIO.h"
#include "backend/runtime/WeightFormats.h"
#include "backend/runtime/Weights.h"

#include <cstring>
#include <map>

namespace mdl::backend {

using ir::DType;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr const char *kSupported =
    "<f2 <f4 <f8 |b1 |i1 |u1 <i4 <i8, and <V2 for bf16";

// A value of the Python literal subset that .npy headers use.
struct PyValue {
  enum Kind { Str, Int, Bool, None, Seq, Dict } kind = None;
  std::string str;
  int64_t i = 0;
  bool b = false;
  std::vector<PyValue> items;                        // tuple or list
  std::vector<std::pair<std::string, PyValue>> dict; // in order
};

class PyParser {
public:
  PyParser(const char *p, const char *end) : p_(p), end_(end) {}

  bool parse(PyValue &out) {
    if (!value(out, 0))
      return false;
    skipSpace();
    return p_ == end_;
  }

private:
  void skipSpace() {
    while (p_ < end_ &&
           (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r'))
      ++p_;
  }
  bool word(const char *w) {
    size_t n = std::strlen(w);
    if (size_t(end_ - p_) < n || std::memcmp(p_, w, n) != 0)
      return false;
    p_ += n;
    return true;
  }

  bool value(PyValue &v, int depth) {
    if (depth > 16) // headers are shallow; this bounds the recursion
      return false;
    skipSpace();
    if (p_ == end_)
      return false;
    char c = *p_;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      ++p_;
      while (p_ < end_ && *p_ != c)
        v.str += *p_++;
      if (p_ == end_)
        return false;
      ++p_;
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Int;
      bool neg = c == '-';
      if (neg)
        ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9')
        return false;
      uint64_t n = 0;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        if (__builtin_mul_overflow(n, uint64_t(10), &n) ||
            __builtin_add_overflow(n, uint64_t(*p_ - '0'), &n) ||
            n > uint64_t(INT64_MAX))
          return false;
        ++p_;
      }
      if (p_ < end_ && *p_ == 'L') // Python 2 long suffix in old files
        ++p_;
      v.i = neg ? -int64_t(n) : int64_t(n);
      return true;
    }
    if (word("True")) {
      v.kind = PyValue::Bool;
      v.b = true;
      return true;
    }
    if (word("False")) {
      v.kind = PyValue::Bool;
      return true;
    }
    if (word("None")) {
      v.kind = PyValue::None;
      return true;
    }
    if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      v.kind = PyValue::Seq;
      ++p_;
      for (;;) {
        skipSpace();
        if (p_ < end_ && *p_ == close) {
          ++p_;
          return true;
        }
        PyValue item;
        if (!value(item, depth + 1))
          return false;
        v.items.push_back(std::move(item));
        skipSpace();
        if (p_ < end_ && *p_ == ',')
          ++p_;
        else if (p_ == end_ || *p_ != close)
          return false;
      }
    }
    if (c == '{') {
      v.kind = PyValue::Dict;
      ++p_;
      for (;;) {
        skipSpace();
        if (p_ < end_ && *p_ == '}') {
          ++p_;
          return true;
        }
        PyValue key, item;
        if (!value(key, depth + 1) || key.kind != PyValue::Str)
          return false;
        skipSpace();
        if (p_ == end_ || *p_ != ':')
          return false;
        ++p_;
        if (!value(item, depth + 1))
          return false;
        v.dict.emplace_back(key.str, std::move(item));
        skipSpace();
        if (p_ < end_ && *p_ == ',')
          ++p_;
        else if (p_ == end_ || *p_ != '}')
          return false;
      }
    }
    return false;
  }

  const char *p_, *end_;
};

const char *descrOf(DType t) {
  switch (t) {
  case DType::Bool:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<V2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  }
  return "?";
}

llvm::Error parseDescr(const std::string &path, const std::string &d,
                       DType &out) {
  if (d.size() >= 2) {
    char order = d[0];
    std::string code = d.substr(1);
    static const std::map<std::string, DType> codes = {
        {"b1", DType::Bool}, {"i1", DType::I8},  {"u1", DType::U8},
        {"i4", DType::I32},  {"i8", DType::I64}, {"f2", DType::F16},
        {"V2", DType::BF16}, {"f4", DType::F32}, {"f8", DType::F64}};
    auto it = codes.find(code);
    if (it != codes.end() &&
        (order == '<' || order == '|' || order == '=' || order == '>')) {
      bool oneByte = ir::dtypeSize(it->second) == 1;
      // Byte order only matters for multi-byte numbers ('V2' is raw bytes
      // that mdl itself wrote little-endian).
      if (order == '>' && !oneByte)
        return fileio::error(path, "big-endian data ('" + d +
                                       "') is not supported (convert with "
                                       "a.astype(a.dtype.newbyteorder('<')))");
      out = it->second;
      return llvm::Error::success();
    }
  }
  return fileio::error(path, "dtype '" + d + "' is not supported (supported: " +
                                 kSupported + ")");
}

} // namespace

namespace formats {

llvm::Expected<NpyLayout> parseNpy(const std::string &path, const uint8_t *d, uint64_t size,
                                   bool wholeFile) {
  NpyLayout h;
  if (size < 10 || std::memcmp(d, kMagic, 6) != 0)
    return fileio::error(path, "not a .npy file (bad magic)");
  int major = d[6], minor = d[7];
  uint64_t len, start;
  if (major == 1) {
    len = uint64_t(d[8]) | uint64_t(d[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fileio::error(path, "truncated .npy header");
    len = uint64_t(d[8]) | uint64_t(d[9]) << 8 | uint64_t(d[10]) << 16 |
          uint64_t(d[11]) << 24;
    start = 12;
  } else {
    return fileio::error(path, "unsupported .npy format version " +
                                   std::to_string(major) + "." +
                                   std::to_string(minor));
  }
  if (len > size - start)
    return fileio::error(
        path, "truncated .npy header: it needs " + std::to_string(start + len) +
                  " bytes, the file has " + std::to_string(size));
  const char *text = reinterpret_cast<const char *>(d + start);
  PyValue dict;
  if (!PyParser(text, text + len).parse(dict) || dict.kind != PyValue::Dict)
    return fileio::error(
        path, "malformed .npy header (expected a dict such as "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)})");
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[k, v] : dict.dict) {
    if (k == "descr")
      descr = &v;
    else if (k == "fortran_order")
      fortran = &v;
    else if (k == "shape")
      shape = &v;
  }
  if (!descr || !fortran || !shape)
    return fileio::error(path, std::string("malformed .npy header: no '") +
                                   (!descr     ? "descr"
                                    : !fortran ? "fortran_order"
                                               : "shape") +
                                   "' entry");
  if (descr->kind != PyValue::Str)
    return fileio::error(path,
                         "structured dtypes are not supported (supported: " +
                             std::string(kSupported) + ")");
  if (llvm::Error err = parseDescr(path, descr->str, h.type.dtype))
    return err;
  std::vector<int64_t> dims;
  if (shape->kind != PyValue::Seq)
    return fileio::error(path, "malformed .npy header: 'shape' is not a tuple");
  for (const PyValue &v : shape->items) {
    if (v.kind != PyValue::Int || v.i < 0)
      return fileio::error(path,
                           "malformed .npy header: 'shape' holds a non-size");
    dims.push_back(v.i);
  }
  h.type = ir::TensorType::of(h.type.dtype, dims);
  if (fortran->kind != PyValue::Bool)
    return fileio::error(
        path, "malformed .npy header: 'fortran_order' is not True or False");
  int big = 0;
  for (int64_t n : dims)
    big += n > 1;
  // With at most one dimension longer than 1, both orders are the same bytes.
  if (fortran->b && big > 1)
    return fileio::error(path, "Fortran-order arrays are not supported (save "
                               "np.ascontiguousarray(a) instead)");
  uint64_t bytes;
  if (!fileio::byteSizeOf(h.type.dtype, dims, bytes))
    return fileio::error(path,
                         "array " + h.type.str() + " is too large to address");
  h.dataStart = start + len;
  if (wholeFile && bytes > size - h.dataStart)
    return fileio::error(
        path, "truncated data: " + h.type.str() + " needs " +
                  std::to_string(bytes) + " bytes, the file has " +
                  std::to_string(size - h.dataStart) + " after its header");
  return h;
}

llvm::Expected<ir::TensorType> npyType(const std::string &path) {
  auto file = fileio::mapFile(path);
  if (!file)
    return file.takeError();
  auto h = parseNpy(path, file->data, file->size, true);
  if (!h)
    return h.takeError();
  return h->type;
}

} // namespace formats

llvm::Expected<Tensor> readNpy(const std::string &path) {
  auto file = fileio::mapFile(path);
  if (!file)
    return file.takeError();
  auto h = formats::parseNpy(path, file->data, file->size, true);
  if (!h)
    return h.takeError();
  return fileio::tensorAt(path, *file, h->dataStart, h->type);
}

llvm::Error writeNpy(const std::string &path, const Tensor &t) {
  if (!t.valid() || !t.type().isStatic())
    return fileio::error(path, "no data to write");
  std::string dict = std::string("{'descr': '") + descrOf(t.dtype()) +
                     "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank(); ++i)
    dict += (i ? ", " : "") + std::to_string(t.dim(i));
  dict += t.rank() == 1 ? ",), }" : "), }";
  // Version 1.0 unless the header outgrows its 2-byte length field. Pad
  // with spaces and end in '\n' so the data starts 64-byte aligned.
  int version = dict.size() + 1 + 10 > 65535 ? 2 : 1;
  size_t prefix = version == 1 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  std::string header = dict;
  header.append(total - prefix - dict.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += char(version);
  out += char(0);
  uint64_t len = header.size();
  for (size_t i = 0; i < prefix - 8; ++i)
    out += char(uint8_t(len >> (8 * i)));
  out += header;

  fileio::Writer w;
  if (llvm::Error err = w.open(path))
    return err;
  if (llvm::Error err = w.write(out.data(), out.size()))
    return err;
  if (llvm::Error err = w.write(t.raw(), t.byteSize()))
    return err;
  return w.close();
}

} // namespace mdl::backend
