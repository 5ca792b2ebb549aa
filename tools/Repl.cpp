// `mdl repl [FILE]`: reads inputs and hands each complete one to the
// session (ReplSession.h). On a terminal, lines are edited with libedit
// (LineEditor.h): a prompt `mdl> `, `...> ` while an input goes on over
// several lines, history, completion, Ctrl-C. Anything else (a pipe, a
// file) is read statement by statement (ReplInput.h) with the same output
// and no prompts, and the exit status says whether any input failed.
#include "tools/Driver.h"

#include "backend/runtime/Interrupt.h"
#include "tools/LineEditor.h"
#include "tools/ReplInput.h"
#include "tools/ReplSession.h"

#include <cerrno>
#include <iostream>
#include <unistd.h>

namespace mdl::tools {

std::string replHelp() { return ReplSession::helpText(); }

namespace {

/// Reads lines from the terminal without editing (when libedit cannot
/// start): Ctrl-C still cancels the line.
LineEditor::Status plainReadLine(const std::string &prompt, std::string &line) {
  std::cout << prompt << std::flush;
  line.clear();
  char c;
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR && !backend::interruptRequested())
      continue;
    if (backend::interruptRequested())
      return LineEditor::Status::Interrupted;
    if (n <= 0)
      return line.empty() ? LineEditor::Status::End : LineEditor::Status::Line;
    if (c == '\n')
      return LineEditor::Status::Line;
    line += c;
  }
}

} // namespace

int replCommand(const DriverOptions &o) {
  bool terminal = ::isatty(STDIN_FILENO);
  ReplSession session(o, std::cout, std::cerr);
  bool failed = false;
  if (!o.file.empty())
    failed |= !session.loadFile(o.file);

  if (!terminal) {
    InputReader reader(STDIN_FILENO);
    while (!session.quitRequested()) {
      std::optional<std::string> input = reader.next();
      if (!input)
        break;
      failed |= !session.handle(*input);
    }
    return failed ? 1 : 0;
  }

  installInterruptHandler();
  std::unique_ptr<LineEditor> editor =
      LineEditor::open(defaultHistoryFile(), [&](const std::string &before, size_t &start) {
        return session.complete(before, start);
      });
  std::cout << "mdl repl: :help lists the commands, Ctrl-D leaves\n" << std::flush;
  std::string pending;
  while (!session.quitRequested()) {
    backend::interruptFlag().store(0);
    std::string prompt = pending.empty() ? "mdl> " : "...> ";
    std::string line;
    LineEditor::Status st = editor ? editor->readLine(prompt, line) : plainReadLine(prompt, line);
    if (st == LineEditor::Status::Interrupted) {
      std::cout << "\n" << std::flush; // the input is dropped
      pending.clear();
      continue;
    }
    if (st == LineEditor::Status::End) {
      std::cout << "\n" << std::flush;
      break;
    }
    if (editor)
      editor->addHistory(line);
    pending += (pending.empty() ? "" : "\n") + line;
    if (classifyInput(pending) == InputKind::Empty) {
      pending.clear();
      continue;
    }
    if (!inputComplete(pending))
      continue;
    session.handle(pending);
    pending.clear();
  }
  return 0;
}

} // namespace mdl::tools
