// Loading source files and indexing their lines.
#include "frontend/SourceManager.h"

#include <cerrno>
#include <cstring>
#include <fstream>
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

const SourceBuffer *SourceManager::load(const std::string &path,
                                        std::string &error) {
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
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return addBuffer(path, std::move(text));
}

const SourceBuffer *SourceManager::get(uint32_t fileId) const {
  auto it = buffers_.find(fileId);
  return it == buffers_.end() ? nullptr : it->second.get();
}

} // namespace mdl::frontend
