// Import resolution: a depth-first walk over import items that parses each
// file once and reports cycles with the chain of files involved.
#include "frontend/Program.h"
#include "frontend/Parser.h"

#include <climits>
#include <cstdlib>
#include <map>
#include <vector>

namespace mdl::frontend {

namespace {

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string canonical(const std::string &path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf))
    return buf;
  return path;
}

class Loader {
public:
  Loader(SourceManager &sm, ir::DiagnosticEngine &diags) : sm_(sm), diags_(diags) {}

  bool visit(const SourceBuffer &buf) {
    std::string key = canonical(buf.path);
    state_[key] = InProgress;
    chain_.push_back(buf.path);
    std::unique_ptr<SourceFile> file = parseSource(buf, diags_);
    bool ok = file != nullptr;
    if (file) {
      SourceFile *raw = file.get();
      prog_->files.push_back(std::move(file));
      for (auto &item : raw->items) {
        if (item->kind != ItemKind::Import)
          continue;
        auto &imp = static_cast<const ImportItem &>(*item);
        std::string path = imp.path.empty() || imp.path[0] == '/'
                               ? imp.path
                               : dirOf(buf.path) + imp.path;
        std::string k = canonical(path);
        auto st = state_.find(k);
        if (st != state_.end() && st->second == Done)
          continue;
        if (st != state_.end() && st->second == InProgress) {
          std::string cycle;
          bool in = false;
          for (const std::string &c : chain_) {
            in |= canonical(c) == k;
            if (in)
              cycle += c + " -> ";
          }
          auto &d = diags_.error("E0105", imp.pathLoc, "import cycle: '" + imp.path +
                                                           "' is already being imported");
          d.notes.push_back({{}, "cycle: " + cycle + path});
          ok = false;
          continue;
        }
        std::string err;
        const SourceBuffer *next = sm_.load(path, err);
        if (!next) {
          diags_.error("E0105", imp.pathLoc, "cannot import '" + imp.path + "': " + err +
                                                 " (looked for " + path + ")");
          ok = false;
          continue;
        }
        ok &= visit(*next);
      }
    }
    chain_.pop_back();
    state_[key] = Done;
    return ok;
  }

  std::unique_ptr<Program> prog_ = std::make_unique<Program>();

private:
  enum State { InProgress, Done };
  SourceManager &sm_;
  ir::DiagnosticEngine &diags_;
  std::map<std::string, State> state_;
  std::vector<std::string> chain_;
};

} // namespace

std::unique_ptr<Program> loadProgramFromBuffer(const SourceBuffer &buf,
                                               SourceManager &sm,
                                               ir::DiagnosticEngine &diags) {
  Loader l(sm, diags);
  if (!l.visit(buf))
    return nullptr;
  return std::move(l.prog_);
}

std::unique_ptr<Program> loadProgram(const std::string &path, SourceManager &sm,
                                     ir::DiagnosticEngine &diags) {
  std::string err;
  const SourceBuffer *buf = sm.load(path, err);
  if (!buf) {
    ir::Location loc;
    loc.file = ir::internFile(path);
    diags.error("E0106", loc, "cannot read source file '" + path + "': " + err);
    return nullptr;
  }
  return loadProgramFromBuffer(*buf, sm, diags);
}

} // namespace mdl::frontend
