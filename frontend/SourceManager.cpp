// Loading source files and indexing their lines.
#include "frontend/SourceManager.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

namespace mdl::frontend {

std::string_view SourceBuffer::line(uint32_t n) const {
  if (n == 0 || n > lineStarts.size())
    return {};
  size_t b = lineStarts[n - 1];
  size_t e = n < lineStarts.size() ? lineStarts[n] : text.size();
  while (e > b && (text[e - 1] == '\n' || text[e - 1] == '\r'))
    --e;
  return std::string_view(text).substr(b, e - b);
}

size_t SourceBuffer::offset(const ir::Location &loc) const {
  if (lineStarts.empty() || loc.line == 0)
    return 0;
  size_t line = std::min<size_t>(loc.line, lineStarts.size());
  return std::min(text.size(), lineStarts[line - 1] + (loc.col ? loc.col - 1 : 0));
}

const SourceBuffer *SourceManager::addBuffer(const std::string &name,
                                             std::string text) {
  auto buf = std::make_unique<SourceBuffer>();
  buf->fileId = ir::internFile(name);
  buf->path = name;
  buf->text = std::move(text);
  buf->lineStarts.push_back(0);
  for (size_t i = 0; i < buf->text.size(); ++i)
    if (buf->text[i] == '\n' && i + 1 <= buf->text.size())
      buf->lineStarts.push_back(i + 1);
  if (!buf->text.empty() && buf->text.back() == '\n')
    buf->lineStarts.pop_back();
  const SourceBuffer *raw = buf.get();
  buffers_[raw->fileId] = std::move(buf);
  return raw;
}

namespace {

/// Everything a stream holds, to its end (pipes, FIFOs, terminals: their
/// size is not known in advance).
bool readAll(std::istream &in, std::string &text, std::string &error) {
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    error = std::strerror(errno);
    return false;
  }
  text = ss.str();
  return true;
}

/// A UTF-8 byte-order mark says nothing to the language: it is dropped.
void dropByteOrderMark(std::string &text) {
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    text.erase(0, 3);
}

} // namespace

const SourceBuffer *SourceManager::load(const std::string &path,
                                        std::string &error) {
  std::string text;
  if (path == "-") {
    if (!readAll(std::cin, text, error))
      return nullptr;
    dropByteOrderMark(text);
    return addBuffer(kStdinName, std::move(text));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "is a directory";
    return nullptr;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return nullptr;
  }
  if (S_ISREG(st.st_mode)) {
    text.resize(static_cast<size_t>(st.st_size));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
  } else if (!readAll(in, text, error)) { // /dev/stdin, a FIFO, a terminal
    return nullptr;
  }
  dropByteOrderMark(text);
  return addBuffer(path, std::move(text));
}

const SourceBuffer *SourceManager::get(uint32_t fileId) const {
  auto it = buffers_.find(fileId);
  return it == buffers_.end() ? nullptr : it->second.get();
}

} // namespace mdl::frontend
