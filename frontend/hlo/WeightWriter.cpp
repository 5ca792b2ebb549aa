// Streaming safetensors output: data behind a reserved header area, the
// header written last.
#include "frontend/hlo/WeightWriter.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mdl::frontend::hlo {

namespace {

constexpr uint64_t kReserve = 256 * 1024;
constexpr size_t kBuffer = 1 << 20;

const char *stName(ir::DType t) {
  switch (t) {
  case ir::DType::Bool: return "BOOL";
  case ir::DType::I8: return "I8";
  case ir::DType::U8: return "U8";
  case ir::DType::I32: return "I32";
  case ir::DType::I64: return "I64";
  case ir::DType::F16: return "F16";
  case ir::DType::BF16: return "BF16";
  case ir::DType::F32: return "F32";
  case ir::DType::F64: return "F64";
  }
  return "F32";
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

bool writeAll(int fd, const char *p, uint64_t n, uint64_t off) {
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, off_t(off));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= uint64_t(w);
    off += uint64_t(w);
  }
  return true;
}

} // namespace

WeightWriter::~WeightWriter() {
  if (fd_ >= 0)
    close(fd_);
}

bool WeightWriter::open(const std::string &path, std::string &error) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  reserved_ = kReserve;
  buf_.reserve(kBuffer);
  return true;
}

bool WeightWriter::has(const std::string &key) const {
  for (const Entry &e : entries_)
    if (e.key == key)
      return true;
  return false;
}

void WeightWriter::begin(const std::string &key, ir::DType dtype,
                         const std::vector<int64_t> &dims) {
  Entry e;
  e.key = key;
  e.dtype = dtype;
  e.dims = dims;
  e.begin = e.end = dataSize_;
  entries_.push_back(std::move(e));
  inTensor_ = true;
}

bool WeightWriter::flush() {
  if (buf_.empty() || ioError_)
    return !ioError_;
  uint64_t off = 8 + reserved_ + dataSize_ - buf_.size();
  if (!writeAll(fd_, buf_.data(), buf_.size(), off)) {
    ioError_ = true;
    ioMessage_ = path_ + ": " + std::strerror(errno);
  }
  buf_.clear();
  return !ioError_;
}

void WeightWriter::write(const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    size_t room = kBuffer - buf_.size();
    size_t n = bytes < room ? bytes : room;
    buf_.insert(buf_.end(), p, p + n);
    dataSize_ += n;
    p += n;
    bytes -= n;
    if (buf_.size() == kBuffer)
      flush();
  }
}

bool WeightWriter::end(std::string &error) {
  inTensor_ = false;
  Entry &e = entries_.back();
  e.end = dataSize_;
  uint64_t want = ir::dtypeSize(e.dtype);
  for (int64_t d : e.dims)
    want *= uint64_t(d);
  if (ioError_) {
    error = ioMessage_;
    return false;
  }
  if (e.end - e.begin != want) {
    error = "internal: tensor '" + e.key + "' has " + std::to_string(e.end - e.begin) +
            " bytes, its shape needs " + std::to_string(want);
    return false;
  }
  return true;
}

std::string WeightWriter::header() const {
  std::string h = "{";
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry &e = entries_[i];
    if (i)
      h += ",";
    h += jsonString(e.key) + ":{\"dtype\":\"" + stName(e.dtype) + "\",\"shape\":[";
    for (size_t k = 0; k < e.dims.size(); ++k)
      h += (k ? "," : "") + std::to_string(e.dims[k]);
    h += "],\"data_offsets\":[" + std::to_string(e.begin) + "," + std::to_string(e.end) + "]}";
  }
  return h + "}";
}

bool WeightWriter::finish(std::string &error) {
  if (fd_ < 0)
    return true;
  if (!flush()) {
    error = ioMessage_;
    return false;
  }
  std::string h = header();
  bool ok = true;
  if (h.size() <= reserved_) {
    h.append(size_t(reserved_ - h.size()), ' ');
  } else {
    // The header outgrew its reservation: move the data behind a larger one.
    uint64_t newReserve = (uint64_t(h.size()) + 4095) / 4096 * 4096;
    uint64_t shift = newReserve - reserved_;
    std::vector<char> chunk(kBuffer);
    for (uint64_t done = 0; ok && done < dataSize_;) {
      uint64_t n = std::min<uint64_t>(kBuffer, dataSize_ - done);
      uint64_t from = 8 + reserved_ + dataSize_ - done - n; // back to front
      ssize_t r = pread(fd_, chunk.data(), n, off_t(from));
      ok = r == ssize_t(n) && writeAll(fd_, chunk.data(), n, from + shift);
      done += n;
    }
    h.append(size_t(newReserve - h.size()), ' ');
    reserved_ = newReserve;
  }
  char len[8];
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i)
    len[i] = char((n >> (8 * i)) & 0xff);
  ok = ok && writeAll(fd_, len, 8, 0) && writeAll(fd_, h.data(), h.size(), 8) &&
       ftruncate(fd_, off_t(8 + reserved_ + dataSize_)) == 0;
  if (!ok)
    error = path_ + ": " + std::strerror(errno);
  close(fd_);
  fd_ = -1;
  return ok;
}

} // namespace mdl::frontend::hlo
