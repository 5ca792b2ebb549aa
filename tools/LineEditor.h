// Line editing for the REPL on a terminal, with BSD libedit (Debian's
// libedit-dev, not GNU readline): emacs key bindings, history kept in a
// file, tab completion through a callback, and Ctrl-C that cancels the line
// being edited.
//
// Ctrl-C: the REPL's SIGINT handler sets the interrupt flag
// (backend/runtime/Interrupt.h) and writes a byte to a pipe. libedit's own
// signal handling is off; the editor reads characters itself, waiting on
// the terminal and that pipe, so Ctrl-C ends the line at once whichever
// thread received the signal, and readLine says so.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mdl::tools {

class LineEditor {
public:
  /// The candidates that may replace the word ending at the end of
  /// `before` (the line up to the cursor); sets `wordStart` to where that
  /// word starts in `before`.
  using Completer =
      std::function<std::vector<std::string>(const std::string &before, size_t &wordStart)>;

  /// Opens the editor on standard input and output (a terminal). History
  /// is read from and saved to `historyFile` (none when empty). Null when
  /// libedit cannot start (the REPL then reads lines without editing).
  static std::unique_ptr<LineEditor> open(const std::string &historyFile, Completer complete);
  ~LineEditor();

  enum class Status {
    Line,        // a line was entered
    Interrupted, // Ctrl-C: the line was abandoned
    End,         // Ctrl-D on an empty line, or the end of input
  };
  /// Reads one line (without its newline) after showing `prompt`.
  Status readLine(const std::string &prompt, std::string &line);
  /// Adds a line to the history and saves the history file.
  void addHistory(const std::string &line);

  struct Impl;

private:
  explicit LineEditor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The history file: $HOME/.mdl_history, or "" without $HOME.
std::string defaultHistoryFile();

/// Makes Ctrl-C (SIGINT, whichever thread receives it) set the interrupt
/// flag and wake a LineEditor that is reading a line. Three Ctrl-C while a
/// computation runs (see setComputing) end the process.
void installInterruptHandler();
/// Says whether a computation runs (the REPL session, around each call).
void setComputing(bool running);

} // namespace mdl::tools
