// Output files: folder creation and the check that an output is not an input.
#include "tools/OutputFiles.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace mdl::tools {

bool makeDirs(const std::string &dir, std::string &error) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty())
      continue;
    if (mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST) {
      error = cur + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = dir + ": not a directory";
    return false;
  }
  return true;
}

bool makeParentDirs(const std::string &path, std::string &error) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0)
    return true;
  return makeDirs(path.substr(0, slash), error);
}

namespace {

/// The absolute path with symbolic links resolved, for a file that may not
/// exist yet (its folder is resolved instead).
std::string resolved(const std::string &path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf))
    return buf;
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (realpath(dir.c_str(), buf))
    return std::string(buf) + "/" + base;
  return path;
}

} // namespace

bool overwritesInput(const std::string &output, const std::vector<std::string> &inputs,
                     std::string &which) {
  struct stat out;
  bool outExists = stat(output.c_str(), &out) == 0;
  for (const std::string &in : inputs) {
    if (in.empty() || in == "-")
      continue;
    struct stat st;
    bool same = outExists && stat(in.c_str(), &st) == 0
                    ? st.st_dev == out.st_dev && st.st_ino == out.st_ino
                    : resolved(in) == resolved(output);
    if (same) {
      which = in;
      return true;
    }
  }
  return false;
}

} // namespace mdl::tools
