// How the REPL cuts what is typed or piped into inputs, and what kind each
// input is. An input ends at the end of a line where no bracket or brace
// is open and the line does not end in an operator, a comma or another
// token that continues a statement (LANGUAGE.md: newlines are ignored
// there); piped input also continues when the next line starts with a
// token that cannot start a statement (`else`, `{`, `carry`, `->`), which
// the terminal cannot know before that line is typed.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mdl::tools {

/// Whether `c` may appear in an identifier (letters, digits, `_`).
bool isIdentChar(char c);

/// What an input is, from its first word.
enum class InputKind {
  Empty,       // blanks and comments only
  Command,     // `:help`, `:type EXPR`, ...
  Definitions, // device, param, const, fn, import items
  Statements,  // let, on, expressions
};

/// The kind of a complete input.
InputKind classifyInput(const std::string &text);

/// Whether `text` is a complete input (see the file comment). A command is
/// complete at the end of its line unless a bracket is open.
bool inputComplete(const std::string &text);

/// Whether a line that follows a complete input continues it (`else`, `{`,
/// `carry`, `->` at its start).
bool lineContinuesInput(const std::string &line);

/// The identifiers of `text` outside strings and comments, in order, with
/// repetitions: the names an input may read (the REPL passes the values
/// bound by `let` that an input names).
std::vector<std::string> identifiersOf(const std::string &text);

/// Reads complete inputs from a file descriptor that is not a terminal (a
/// pipe, a file): line by line until an input is complete. The line after
/// a complete input is looked at, for the continuations of
/// lineContinuesInput, only when it can be read without waiting: a script
/// or a file reads as a file would, and a program that writes one input and
/// waits for its result is not kept waiting.
class InputReader {
public:
  explicit InputReader(int fd) : fd_(fd) {}
  /// The next input (without its last newline), or nullopt at the end of
  /// the input. An incomplete input at the end is returned as it is (its
  /// errors are reported when it is compiled).
  std::optional<std::string> next();

private:
  /// The next line; with `wait` false, only when it is already there.
  bool readLine(std::string &line, bool wait);
  int fd_;
  std::string buffer_; // read, not yet returned
  bool eof_ = false;
};

} // namespace mdl::tools
