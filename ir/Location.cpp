// The process-wide table of source file names behind ir::Location.
#include "ir/Location.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace mdl::ir {

namespace {
struct FileTable {
  std::mutex mu;
  std::deque<std::string> names{std::string("<unknown>")};
  std::unordered_map<std::string, uint32_t> ids{{"<unknown>", 0}};
};
FileTable &table() {
  static FileTable t;
  return t;
}
} // namespace

uint32_t internFile(const std::string &name) {
  FileTable &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(name);
  if (it != t.ids.end())
    return it->second;
  uint32_t id = static_cast<uint32_t>(t.names.size());
  t.names.push_back(name);
  t.ids.emplace(name, id);
  return id;
}

const std::string &fileName(uint32_t id) {
  FileTable &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return id < t.names.size() ? t.names[id] : t.names[0];
}

std::string Location::str() const {
  if (!valid())
    return fileName(file);
  return fileName(file) + ":" + std::to_string(line) + ":" + std::to_string(col);
}

} // namespace mdl::ir
