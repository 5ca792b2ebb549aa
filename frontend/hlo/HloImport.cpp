// The HLO import entry points: map the file, read it (streaming large
// literals into the weight file, with a progress bar on a terminal), then
// translate to IR.
//
// Memory stays bounded for any input size: the text is memory-mapped and
// read front to back, and the pages already read are released as the
// reader moves on, so resident memory holds the module's structure (small
// next to its constants) and a few megabytes of text and output buffers.
#include "frontend/hlo/HloImporter.h"

#include "frontend/hlo/HloReader.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mdl::frontend::hlo {

namespace {

constexpr size_t kProgressMin = size_t(64) << 20;
constexpr size_t kReleaseBehind = size_t(1) << 20;

/// Prints `importing FILE  [=====>    ] 45%  1.2/3.0 GB  210 MB/s`.
class Progress {
public:
  Progress(const std::string &name, size_t total, bool enabled)
      : name_(name), total_(total), enabled_(enabled && total >= kProgressMin && isatty(2)),
        start_(std::chrono::steady_clock::now()) {}
  ~Progress() {
    if (shown_)
      std::fprintf(stderr, "\n");
  }
  void update(size_t at) {
    if (!enabled_)
      return;
    auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200) && at < total_)
      return;
    last_ = now;
    shown_ = true;
    double secs = std::chrono::duration<double>(now - start_).count();
    double frac = total_ ? double(at) / double(total_) : 1.0;
    int filled = int(frac * 30);
    char bar[31];
    for (int i = 0; i < 30; ++i)
      bar[i] = i < filled ? '=' : i == filled ? '>' : ' ';
    bar[30] = 0;
    std::fprintf(stderr, "\rimporting %s [%s] %3d%%  %.2f/%.2f GB  %.0f MB/s ", name_.c_str(), bar,
                 int(frac * 100), double(at) / 1e9, double(total_) / 1e9,
                 secs > 0 ? double(at) / 1e6 / secs : 0.0);
    std::fflush(stderr);
  }

private:
  std::string name_;
  size_t total_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

bool readAndTranslate(const char *data, size_t size, const std::string &name,
                      ir::DiagnosticEngine &diags, const HloImportOptions &opts,
                      HloImportResult &out, const std::function<void(size_t)> &release) {
  uint32_t fileId = ir::internFile(name);
  HloReadOptions ro;
  std::string weightsError;
  ro.weights = [&](std::string &err) -> WeightWriter * {
    if (!out.weights) {
      if (opts.weightsOut.empty()) {
        err = "no weight file was given";
        return nullptr;
      }
      auto w = std::make_unique<WeightWriter>();
      if (!w->open(opts.weightsOut, err))
        return nullptr;
      out.weights = std::move(w);
    }
    return out.weights.get();
  };
  std::string base = name.substr(name.find_last_of('/') + 1);
  Progress bar(base, size, opts.progress);
  ro.progress = [&](size_t at) {
    bar.update(at);
    if (release)
      release(at);
  };
  HloModule m;
  if (auto err = readHloText(data, data + size, ro, m)) {
    ir::Location loc{fileId, err->pos.line, err->pos.col, 1};
    diags.error("E0602", loc, "malformed HLO: " + err->message);
    return false;
  }
  bar.update(size);
  TranslateOptions to;
  to.weightsFile = out.weights ? out.weights->path() : opts.weightsOut;
  // Absolute, so that a program written elsewhere (`mdl import -o`) finds it.
  if (!opts.elidedWeights.empty()) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(opts.elidedWeights, ec);
    to.elidedWeights = ec ? opts.elidedWeights : abs.lexically_normal().string();
  }
  to.fillElidedZeros = opts.fillElidedZeros;
  Translator t(m, fileId, to, diags);
  out.module = t.run();
  out.names = std::move(t.names());
  return out.module != nullptr;
}

} // namespace

bool importHloText(const char *data, size_t size, const std::string &name,
                   ir::DiagnosticEngine &diags, const HloImportOptions &opts,
                   HloImportResult &out) {
  return readAndTranslate(data, size, name, diags, opts, out, nullptr);
}

bool importHlo(const std::string &path, ir::DiagnosticEngine &diags, const HloImportOptions &opts,
               HloImportResult &out) {
  ir::Location loc;
  loc.file = ir::internFile(path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    diags.error("E0106", loc, "cannot read HLO file '" + path + "': " +
                                  (fd < 0 || errno ? std::strerror(errno) : "not a regular file"));
    if (fd >= 0)
      close(fd);
    return false;
  }
  size_t size = size_t(st.st_size);
  if (size == 0) {
    close(fd);
    loc.line = loc.col = 1;
    diags.error("E0602", loc, "malformed HLO: the file is empty");
    return false;
  }
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    diags.error("E0106", loc, "cannot map HLO file '" + path + "': " + std::strerror(errno));
    return false;
  }
  madvise(map, size, MADV_SEQUENTIAL);
  const char *data = static_cast<const char *>(map);
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t released = 0;
  // Pages well behind the reader are dropped from memory (they are re-read
  // from the file if an error message ever needs them).
  auto release = [&](size_t at) {
    if (at < kReleaseBehind)
      return;
    size_t upto = (at - kReleaseBehind) / page * page;
    if (upto > released) {
      madvise(const_cast<char *>(data) + released, upto - released, MADV_DONTNEED);
      released = upto;
    }
  };
  bool ok = readAndTranslate(data, size, path, diags, opts, out, release);
  munmap(map, size);
  return ok;
}

std::unique_ptr<ir::Module> importHloFile(const std::string &path, ir::DiagnosticEngine &diags,
                                          const HloImportOptions &opts) {
  HloImportResult r;
  bool ok = importHlo(path, diags, opts, r);
  if (r.weights) {
    std::string err;
    if (!r.weights->finish(err)) {
      ir::Location loc;
      loc.file = ir::internFile(path);
      diags.error("E0106", loc, "cannot write the weight file: " + err);
      ok = false;
    }
  }
  return ok ? std::move(r.module) : nullptr;
}

} // namespace mdl::frontend::hlo
