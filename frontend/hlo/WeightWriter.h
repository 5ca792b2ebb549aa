// A streaming safetensors writer for the constants of an imported HLO module.
//
// Tensors are written one after another while their literals are parsed;
// none is ever held whole in memory. The data section goes straight into the
// final file behind a reserved header area; `finish` writes the JSON header
// into that area, padded with spaces (the format allows it). Only when the
// header outgrows the reservation is the data copied once into a new file.
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mdl::frontend::hlo {

class WeightWriter {
public:
  WeightWriter() = default;
  WeightWriter(const WeightWriter &) = delete;
  WeightWriter &operator=(const WeightWriter &) = delete;
  ~WeightWriter();

  /// Creates (truncates) the file. False with a message on failure.
  bool open(const std::string &path, std::string &error);
  bool isOpen() const { return fd_ >= 0; }
  const std::string &path() const { return path_; }

  /// Starts a tensor; exactly its byte size must follow through write().
  void begin(const std::string &key, ir::DType dtype, const std::vector<int64_t> &dims);
  void write(const void *data, size_t bytes);
  /// Ends the current tensor; false (with a message) when the byte count
  /// does not match the shape or a write failed.
  bool end(std::string &error);
  /// Writes the header and closes the file.
  bool finish(std::string &error);
  /// True when a key was already written.
  bool has(const std::string &key) const;
  size_t count() const { return entries_.size(); }
  /// Bytes of tensor data written so far.
  uint64_t dataBytes() const { return dataSize_; }

private:
  struct Entry {
    std::string key;
    ir::DType dtype;
    std::vector<int64_t> dims;
    uint64_t begin = 0, end = 0;
  };
  bool flush();
  std::string header() const;

  std::string path_;
  int fd_ = -1;
  uint64_t reserved_ = 0; // bytes reserved for the JSON header
  uint64_t dataSize_ = 0; // bytes of data written (and buffered)
  std::vector<char> buf_;
  std::vector<Entry> entries_;
  bool inTensor_ = false;
  bool ioError_ = false;
  std::string ioMessage_;
};

} // namespace mdl::frontend::hlo
