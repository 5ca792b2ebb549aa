// `mdl graph`: writes the picture of a partitioned program to a file.
//
// The picture is built by GraphBuild.cpp and rendered as DOT text by
// GraphDot.cpp; this file picks the output format from the extension and
// writes it. `.dot` is the text itself; `.svg` and `.png` run Graphviz's
// `dot` (found on PATH, Debian's `graphviz` package) on it. Every format is
// written to a temporary file next to the output and renamed into place, so
// a failure never leaves a half-written picture behind.
#include "tools/Graph.h"
#include "tools/GraphModel.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace mdl::tools {

namespace {

enum class FormatKind { Dot, Svg, Png };

bool formatOf(const std::string &path, FormatKind &out) {
  size_t dot = path.find_last_of('.');
  size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return false;
  std::string ext = path.substr(dot + 1);
  for (char &c : ext)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "dot")
    out = FormatKind::Dot;
  else if (ext == "svg")
    out = FormatKind::Svg;
  else if (ext == "png")
    out = FormatKind::Png;
  else
    return false;
  return true;
}

bool writeText(const std::string &path, const std::string &text,
               const std::string &shownAs, std::string &error) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = "cannot create " + shownAs + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int writeErr = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    writeErr = errno;
  }
  if (!ok) {
    error = "cannot write " + shownAs + ": " + std::strerror(writeErr);
    std::remove(path.c_str());
  }
  return ok;
}

/// Runs `dot -T<format> -o out in`, collecting what it writes on stderr.
bool runDot(const char *format, const std::string &in, const std::string &out,
            std::string &error) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0) {
    error = std::string("cannot run Graphviz's dot: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipeFds[1]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", 0, 0);
  std::string typeArg = std::string("-T") + format;
  std::vector<char *> argv = {
      const_cast<char *>("dot"),      typeArg.data(),
      const_cast<char *>("-o"),       const_cast<char *>(out.c_str()),
      const_cast<char *>(in.c_str()), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (rc != 0) {
    close(pipeFds[0]);
    error =
        rc == ENOENT
            ? "Graphviz's dot was not found on PATH (install it with `apt-get "
              "install graphviz`, or write a .dot file)"
            : std::string("cannot run Graphviz's dot: ") + std::strerror(rc);
    return false;
  }
  std::string messages;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipeFds[0], buf, sizeof buf)) > 0 ||
         (n < 0 && errno == EINTR))
    if (n > 0)
      messages.append(buf, size_t(n));
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return true;
  while (!messages.empty() &&
         (messages.back() == '\n' || messages.back() == '\r'))
    messages.pop_back();
  error = "Graphviz's dot " + typeArg + " failed";
  if (WIFEXITED(status))
    error += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  else if (WIFSIGNALED(status))
    error += " (signal " + std::to_string(WTERMSIG(status)) + ")";
  if (!messages.empty())
    error += ": " + messages;
  return false;
}

bool moveIntoPlace(const std::string &tmp, const std::string &path,
                   std::string &error) {
  if (std::rename(tmp.c_str(), path.c_str()) == 0)
    return true;
  error = "cannot create " + path + ": " + std::strerror(errno);
  std::remove(tmp.c_str());
  return false;
}

} // namespace

bool writeGraph(const ir::Module &m, const std::string &entry,
                const std::string &path, std::string &error) {
  FormatKind format;
  if (!formatOf(path, format)) {
    error =
        "unsupported output '" + path + "': expected a .dot, .svg or .png file";
    return false;
  }
  graph::Graph g;
  if (!graph::buildGraph(m, entry, g, error))
    return false;
  std::string text = graph::renderDot(g, m);

  std::string tmp = path + ".tmp" + std::to_string(getpid());
  if (format == FormatKind::Dot)
    return writeText(tmp, text, path, error) && moveIntoPlace(tmp, path, error);

  std::string tmpDot = tmp + ".dot";
  if (!writeText(tmpDot, text, path, error))
    return false;
  bool ok =
      runDot(format == FormatKind::Svg ? "svg" : "png", tmpDot, tmp, error);
  std::remove(tmpDot.c_str());
  if (!ok) {
    std::remove(tmp.c_str());
    return false;
  }
  return moveIntoPlace(tmp, path, error);
}

} // namespace mdl::tools
