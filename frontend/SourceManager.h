// The source manager: owns the text of every file the compiler reads and
// answers "what is on line N of file F" for diagnostics with carets.
#pragma once

#include "ir/Location.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mdl::frontend {

/// One loaded file.
struct SourceBuffer {
  uint32_t fileId = 0;
  std::string path;
  std::string text;
  std::vector<size_t> lineStarts; // offset of each line's first byte

  /// Text of a 1-based line without its newline.
  std::string_view line(uint32_t n) const;
  /// The byte offset of a location's start in `text` (clamped to the text).
  size_t offset(const ir::Location &loc) const;
};

class SourceManager {
public:
  /// The name under which standard input (`-`) appears in diagnostics.
  static constexpr const char *kStdinName = "<stdin>";

  /// Reads a file from disk: a regular file, or anything readable to its
  /// end (a pipe, a FIFO, /dev/stdin); `-` is standard input, named
  /// kStdinName. A UTF-8 byte-order mark at the start is dropped. On
  /// failure returns null and sets `error`.
  const SourceBuffer *load(const std::string &path, std::string &error);
  /// Registers text that does not come from a file (REPL input, tests).
  const SourceBuffer *addBuffer(const std::string &name, std::string text);
  /// The buffer of a file id, or null if the file was not loaded here.
  const SourceBuffer *get(uint32_t fileId) const;

private:
  std::unordered_map<uint32_t, std::unique_ptr<SourceBuffer>> buffers_;
};

} // namespace mdl::frontend
