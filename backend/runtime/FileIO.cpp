// Memory-mapped reading and streaming writing of weight and array files.
#include "backend/runtime/FileIO.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mdl::backend::fileio {

llvm::Error error(const std::string &path, const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

namespace {
std::string errnoText() { return std::strerror(errno); }
} // namespace

llvm::Expected<MappedFile> mapFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return error(path, "cannot open: " + errnoText());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = errnoText();
    ::close(fd);
    return error(path, "cannot stat: " + why);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return error(path, "cannot open: is a directory");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(path, "cannot open: not a regular file");
  }
  MappedFile f;
  f.size = uint64_t(st.st_size);
  if (f.size == 0) { // mmap refuses length 0
    ::close(fd);
    return f;
  }
  void *p = ::mmap(nullptr, size_t(f.size), PROT_READ, MAP_PRIVATE, fd, 0);
  std::string why = p == MAP_FAILED ? errnoText() : "";
  ::close(fd); // the mapping keeps the file alive
  if (p == MAP_FAILED)
    return error(path,
                 "cannot map " + std::to_string(f.size) + " bytes: " + why);
  size_t len = size_t(f.size);
  f.data = static_cast<const uint8_t *>(p);
  f.owner = std::shared_ptr<void>(p, [len](void *q) { ::munmap(q, len); });
  return f;
}

bool byteSizeOf(ir::DType dtype, const std::vector<int64_t> &shape,
                uint64_t &bytes) {
  uint64_t n = ir::dtypeSize(dtype);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n))
      return false;
  bytes = n;
  return n <= uint64_t(INT64_MAX);
}

llvm::Expected<Tensor> tensorAt(const std::string &path, const MappedFile &file,
                                uint64_t offset, const ir::TensorType &type) {
  size_t bytes = size_t(type.byteSize());
  const uint8_t *src = file.data ? file.data + offset : nullptr;
  bool aligned =
      src && reinterpret_cast<uintptr_t>(src) % ir::dtypeSize(type.dtype) == 0;
  // Bools must be 0 or 1 for the kernels; a file with other bytes is copied
  // and normalized rather than trusted.
  bool badBools = false;
  if (type.dtype == ir::DType::Bool)
    for (size_t i = 0; i < bytes && !badBools; ++i)
      badBools = src[i] > 1;
  if (aligned && !badBools) {
    auto buf =
        std::make_shared<Buffer>(const_cast<uint8_t *>(src), bytes, file.owner);
    return Tensor(type, std::move(buf));
  }
  Tensor t = Tensor::empty(type);
  if (!t.valid())
    return error(path, "out of memory copying " + std::to_string(bytes) +
                           " bytes of " + type.str());
  if (bytes)
    std::memcpy(t.raw(), src, bytes);
  if (badBools) {
    uint8_t *p = t.data<uint8_t>();
    for (size_t i = 0; i < bytes; ++i)
      p[i] = p[i] != 0;
  }
  return t;
}

Writer::~Writer() {
  if (fd_ >= 0)
    ::close(fd_);
}

llvm::Error Writer::open(const std::string &path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    return error(path_, "cannot create: " + errnoText());
  return llvm::Error::success();
}

llvm::Error Writer::write(const void *data, uint64_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    // write() moves at most about 2 GiB per call on Linux: loop.
    size_t chunk = size_t(std::min<uint64_t>(bytes, uint64_t(1) << 30));
    ssize_t n = ::write(fd_, p, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return error(path_,
                   "write failed: " +
                       (n < 0 ? errnoText() : std::string("no progress")));
    p += n;
    bytes -= uint64_t(n);
  }
  return llvm::Error::success();
}

llvm::Error Writer::close() {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0)
    return error(path_, "close failed: " + errnoText());
  return llvm::Error::success();
}

} // namespace mdl::backend::fileio
