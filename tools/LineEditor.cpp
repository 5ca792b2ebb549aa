// The REPL's line editor on libedit (see LineEditor.h).
#include "tools/LineEditor.h"

#include "backend/runtime/Interrupt.h"

#include <histedit.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace mdl::tools {

namespace {

volatile std::sig_atomic_t resized = 0;
void onResize(int) { resized = 1; }

/// Written to by the SIGINT handler, read by the editor: [0] read, [1] write.
int wakeup[2] = {-1, -1};
std::atomic<bool> computing{false};
std::atomic<int> interruptsWhileComputing{0};

void onInterrupt(int) {
  int saved = errno;
  backend::interruptFlag().store(1);
  if (wakeup[1] >= 0) {
    ssize_t r = ::write(wakeup[1], "!", 1);
    (void)r;
  }
  if (computing.load()) { // after the terminal's `^C`, the diagnostic on a line of its own
    ssize_t r = ::write(STDOUT_FILENO, "\n", 1);
    (void)r;
  }
  if (computing.load() && ++interruptsWhileComputing >= 3) {
    static const char msg[] =
        "\nerror[E0409]: interrupted three times while a computation ran: mdl repl ends\n";
    ssize_t r = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)r;
    _exit(130);
  }
  errno = saved;
}

/// Empties the wake-up pipe.
void drainWakeups() {
  char buf[64];
  while (wakeup[0] >= 0 && ::read(wakeup[0], buf, sizeof buf) > 0) {
  }
}

/// The longest common prefix of the candidates.
std::string commonPrefix(const std::vector<std::string> &v) {
  std::string p = v.empty() ? "" : v[0];
  for (const std::string &s : v) {
    size_t k = 0;
    while (k < p.size() && k < s.size() && p[k] == s[k])
      ++k;
    p.resize(k);
  }
  return p;
}

} // namespace

struct LineEditor::Impl {
  EditLine *el = nullptr;
  History *hist = nullptr;
  std::string historyFile;
  Completer complete;
  std::string prompt;
  bool interrupted = false;

  ~Impl() {
    if (el)
      el_end(el);
    if (hist)
      history_end(hist);
  }

  static Impl *of(EditLine *el) {
    void *p = nullptr;
    el_get(el, EL_CLIENTDATA, &p);
    return static_cast<Impl *>(p);
  }

  static char *promptOf(EditLine *el) { return const_cast<char *>(of(el)->prompt.c_str()); }

  /// libedit's character reader, replaced: one byte at a time from the
  /// terminal, decoded with the locale (UTF-8); a read interrupted by
  /// Ctrl-C ends the line.
  static int readChar(EditLine *el, wchar_t *wc) {
    Impl *self = of(el);
    std::mbstate_t state{};
    for (;;) {
      struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wakeup[0], POLLIN, 0}};
      int ready = ::poll(fds, wakeup[0] >= 0 ? 2 : 1, -1);
      if (ready > 0 && (fds[1].revents & POLLIN))
        drainWakeups();
      if (backend::interruptRequested()) {
        self->interrupted = true;
        errno = EINTR;
        return -1;
      }
      if (ready < 0 || !(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (ready < 0 && errno != EINTR)
          return -1;
        if (resized) {
          resized = 0;
          el_resize(el);
        }
        continue;
      }
      char c;
      ssize_t n = ::read(STDIN_FILENO, &c, 1);
      if (n == 0)
        return 0;
      if (n < 0) {
        if (errno != EINTR)
          return -1;
        if (backend::interruptRequested()) {
          self->interrupted = true;
          errno = EINTR;
          return -1;
        }
        if (resized) {
          resized = 0;
          el_resize(el);
        }
        continue;
      }
      wchar_t w;
      size_t k = std::mbrtowc(&w, &c, 1, &state);
      if (k == static_cast<size_t>(-2))
        continue; // more bytes of the character to come
      if (k == static_cast<size_t>(-1)) {
        state = std::mbstate_t{}; // an invalid byte is dropped
        continue;
      }
      *wc = k == 0 ? L'\0' : w;
      return 1;
    }
  }

  /// Tab: completes the word before the cursor as far as the candidates
  /// agree, and lists them when they do not.
  static unsigned char completeWord(EditLine *el, int) {
    Impl *self = of(el);
    const LineInfo *li = el_line(el);
    if (!self->complete || !li)
      return CC_ERROR;
    std::string before(li->buffer, li->cursor);
    size_t start = before.size();
    std::vector<std::string> cands = self->complete(before, start);
    start = std::min(start, before.size());
    std::string word = before.substr(start);
    if (cands.empty())
      return CC_REFRESH_BEEP;
    std::string common = commonPrefix(cands);
    if (common.size() > word.size() && common.compare(0, word.size(), word) == 0) {
      el_insertstr(el, common.substr(word.size()).c_str());
      return CC_REFRESH;
    }
    if (cands.size() == 1)
      return CC_REFRESH;
    std::fputs("\n", stdout);
    size_t width = 0;
    for (const std::string &c : cands)
      width = std::max(width, c.size());
    size_t perLine = std::max<size_t>(1, 78 / (width + 2));
    for (size_t i = 0; i < cands.size(); ++i)
      std::fprintf(stdout, "%-*s%s", int(width + 2), cands[i].c_str(),
                   (i + 1) % perLine == 0 || i + 1 == cands.size() ? "\n" : "");
    std::fflush(stdout);
    return CC_REDISPLAY;
  }
};

LineEditor::LineEditor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LineEditor::~LineEditor() = default;

std::unique_ptr<LineEditor> LineEditor::open(const std::string &historyFile, Completer complete) {
  // Characters are decoded with the locale's encoding: UTF-8 where the
  // environment names none.
  if (!std::setlocale(LC_CTYPE, "") || MB_CUR_MAX == 1)
    std::setlocale(LC_CTYPE, "C.UTF-8");
  auto impl = std::make_unique<Impl>();
  impl->historyFile = historyFile;
  impl->complete = std::move(complete);
  impl->el = el_init("mdl", stdin, stdout, stderr);
  impl->hist = history_init();
  if (!impl->el || !impl->hist)
    return nullptr;
  HistEvent ev;
  history(impl->hist, &ev, H_SETSIZE, 1000);
  history(impl->hist, &ev, H_SETUNIQUE, 1);
  if (!historyFile.empty())
    history(impl->hist, &ev, H_LOAD, historyFile.c_str()); // a missing file is fine
  el_set(impl->el, EL_CLIENTDATA, impl.get());
  el_set(impl->el, EL_EDITOR, "emacs");
  el_set(impl->el, EL_SIGNAL, 0);
  el_set(impl->el, EL_PROMPT, &Impl::promptOf);
  el_set(impl->el, EL_HIST, history, impl->hist);
  el_set(impl->el, EL_GETCFN, &Impl::readChar);
  el_set(impl->el, EL_ADDFN, "mdl-complete", "complete a name, operation, keyword or command",
         &Impl::completeWord);
  el_set(impl->el, EL_BIND, "^I", "mdl-complete", nullptr);
  el_source(impl->el, nullptr); // ~/.editrc, as every libedit program
  struct sigaction sa {};
  sa.sa_handler = onResize;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGWINCH, &sa, nullptr);
  return std::unique_ptr<LineEditor>(new LineEditor(std::move(impl)));
}

LineEditor::Status LineEditor::readLine(const std::string &prompt, std::string &line) {
  drainWakeups(); // Ctrl-C pressed before this line was asked for
  impl_->prompt = prompt;
  impl_->interrupted = false;
  int count = 0;
  const char *s = el_gets(impl_->el, &count);
  if (impl_->interrupted || backend::interruptRequested()) {
    el_reset(impl_->el);
    return Status::Interrupted;
  }
  if (!s || count <= 0)
    return Status::End;
  line.assign(s, size_t(count));
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
    line.pop_back();
  return Status::Line;
}

void LineEditor::addHistory(const std::string &line) {
  HistEvent ev;
  if (line.find_first_not_of(" \t") == std::string::npos)
    return;
  history(impl_->hist, &ev, H_ENTER, line.c_str());
  if (!impl_->historyFile.empty())
    history(impl_->hist, &ev, H_SAVE, impl_->historyFile.c_str());
}

void installInterruptHandler() {
  if (wakeup[0] < 0 && ::pipe(wakeup) == 0)
    for (int fd : wakeup)
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART
  sigaction(SIGINT, &sa, nullptr);
}

void setComputing(bool running) {
  interruptsWhileComputing = 0;
  computing = running;
}

std::string defaultHistoryFile() {
  const char *home = std::getenv("HOME");
  if (!home || !*home)
    return "";
  return std::string(home) + "/.mdl_history";
}

} // namespace mdl::tools
