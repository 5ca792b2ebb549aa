// Run-time tensors: a static type plus a reference-counted byte buffer.
//
// Buffers are either owned (64-byte aligned heap memory) or views into a
// memory-mapped weight file; both share the same handle so that kernels do
// not care where data lives. Tensors are always dense and row-major.
#pragma once

#include "ir/Type.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mdl::backend {

/// A block of bytes with an owner that frees it (heap or mmap).
class Buffer {
public:
  Buffer(void *data, size_t bytes, std::shared_ptr<void> owner)
      : data_(data), bytes_(bytes), owner_(std::move(owner)) {}
  /// Allocates `bytes` of 64-byte aligned, uninitialized memory. Returns null
  /// if the allocation fails.
  static std::shared_ptr<Buffer> allocate(size_t bytes);

  void *data() const { return data_; }
  size_t size() const { return bytes_; }

private:
  void *data_;
  size_t bytes_;
  std::shared_ptr<void> owner_;
};

class Tensor {
public:
  Tensor() = default;
  Tensor(ir::TensorType type, std::shared_ptr<Buffer> buf, size_t offset = 0)
      : type_(std::move(type)), buf_(std::move(buf)), offset_(offset) {}

  /// A new tensor with uninitialized contents; empty Tensor (valid() false)
  /// if memory is exhausted.
  static Tensor empty(const ir::TensorType &type);
  /// A new tensor filled with zero bytes.
  static Tensor zeros(const ir::TensorType &type);

  /// A value this process does not hold (another party of a multi-process
  /// device gives it): its type, no data (valid() false).
  static Tensor absent(const ir::TensorType &type) { return Tensor(type, nullptr); }

  bool valid() const { return buf_ != nullptr; }
  const ir::TensorType &type() const { return type_; }
  ir::DType dtype() const { return type_.dtype; }
  int rank() const { return type_.rank(); }
  int64_t dim(int i) const { return type_.dims[i].size; }
  int64_t numElements() const { return type_.numElements(); }
  size_t byteSize() const { return size_t(type_.byteSize()); }

  void *raw() const { return static_cast<char *>(buf_->data()) + offset_; }
  template <typename T> T *data() const { return static_cast<T *>(raw()); }
  const std::shared_ptr<Buffer> &buffer() const { return buf_; }

  /// Same data, another shape with the same number of elements.
  Tensor reshaped(const ir::TensorType &type) const {
    return Tensor(type, buf_, offset_);
  }
  /// A deep copy.
  Tensor clone() const;

  /// Element i (row-major) converted to double / int64, any dtype.
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Stores a double into element i, converting to the dtype.
  void setDouble(int64_t i, double v) const;
  void setInt(int64_t i, int64_t v) const;

private:
  ir::TensorType type_;
  std::shared_ptr<Buffer> buf_;
  size_t offset_ = 0;
};

/// Formats a tensor the way NumPy prints arrays (summarized with "..."
/// beyond `threshold` elements).
std::string formatTensor(const Tensor &t, int64_t threshold = 1000);

} // namespace mdl::backend
