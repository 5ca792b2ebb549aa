// Cutting REPL input into complete inputs (see ReplInput.h). A small
// scanner of its own, not the parser: it must decide on a line that is not
// finished yet, and it never fails (any bytes are some kind of input).
#include "tools/ReplInput.h"

#include <cctype>
#include <cerrno>
#include <poll.h>
#include <unistd.h>

namespace mdl::tools {

namespace {

bool identStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

/// What the scanner saw: the depth of open brackets and the last token
/// outside comments and strings.
struct Scan {
  int depth = 0;
  std::string last; // the last token (an identifier, or operator characters)
  std::string first;
  std::vector<std::string> identifiers;
};

Scan scan(const std::string &text) {
  Scan s;
  size_t i = 0, n = text.size();
  auto token = [&](std::string t) {
    if (s.first.empty())
      s.first = t;
    s.last = std::move(t);
  };
  while (i < n) {
    char c = text[i];
    if (c == '#') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '"') { // strings end at their quote or at the end of the line
      ++i;
      while (i < n && text[i] != '"' && text[i] != '\n')
        i += text[i] == '\\' && i + 1 < n && text[i + 1] != '\n' ? 2 : 1;
      if (i < n && text[i] == '"')
        ++i;
      token("\"");
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (identStart(c)) {
      size_t b = i;
      while (i < n && isIdentChar(text[i]))
        ++i;
      s.identifiers.push_back(text.substr(b, i - b));
      token(s.identifiers.back());
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        // `0..3`: the dots belong to the range
        if (text[i] == '.' && i + 1 < n && text[i + 1] == '.')
          break;
        ++i;
      }
      token("0");
      continue;
    }
    if (c == '(' || c == '[' || c == '{')
      ++s.depth;
    else if ((c == ')' || c == ']' || c == '}') && s.depth > 0)
      --s.depth;
    // Operators of two characters count as one token.
    static const char *const pairs[] = {"==", "!=", "<=", ">=", "&&", "||", "->", ".."};
    std::string op(1, c);
    for (const char *p : pairs)
      if (i + 1 < n && c == p[0] && text[i + 1] == p[1])
        op = p;
    i += op.size();
    token(op);
  }
  return s;
}

/// Tokens after which a newline does not end a statement.
bool continuesAfter(const std::string &t) {
  static const char *const ops[] = {
      "+",  "-",  "*",  "/", "%", "@",  "=",  "==", "!=", "<",  "<=",   ">",
      ">=", "&&", "||", ",", "!", "->", "..", ":",  "on", "in", "else", "carry"};
  for (const char *o : ops)
    if (t == o)
      return true;
  return false;
}

/// The first word of a line (an identifier, or one or two characters of
/// punctuation).
std::string firstWord(const std::string &line) {
  size_t i = 0;
  while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
    ++i;
  size_t b = i;
  while (i < line.size() && isIdentChar(line[i]))
    ++i;
  if (i > b)
    return line.substr(b, i - b);
  return line.substr(b, 2);
}

} // namespace

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

InputKind classifyInput(const std::string &text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    ++i;
  if (i < text.size() && text[i] == ':')
    return InputKind::Command;
  Scan s = scan(text);
  if (s.first.empty())
    return InputKind::Empty;
  static const char *const items[] = {"device", "param", "const", "fn", "import"};
  for (const char *w : items)
    if (s.first == w)
      return InputKind::Definitions;
  return InputKind::Statements;
}

bool inputComplete(const std::string &text) {
  Scan s = scan(text);
  if (s.depth > 0)
    return false;
  if (classifyInput(text) == InputKind::Command)
    return true;
  return !continuesAfter(s.last);
}

bool lineContinuesInput(const std::string &line) {
  std::string w = firstWord(line);
  return w == "else" || w == "carry" || w == "->" || (!w.empty() && w[0] == '{');
}

std::vector<std::string> identifiersOf(const std::string &text) { return scan(text).identifiers; }

bool InputReader::readLine(std::string &line, bool wait) {
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos || (eof_ && !buffer_.empty())) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl == std::string::npos ? std::string::npos : nl + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      return true;
    }
    if (eof_)
      return false;
    struct pollfd p = {fd_, POLLIN, 0};
    if (!wait && ::poll(&p, 1, 0) <= 0)
      return false;
    char chunk[65536];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      eof_ = true;
    else
      buffer_.append(chunk, size_t(n));
  }
}

std::optional<std::string> InputReader::next() {
  std::string text, line;
  while (readLine(line, true)) {
    if (text.empty() && classifyInput(line) == InputKind::Empty)
      continue; // blank lines and comments between inputs
    text += (text.empty() ? "" : "\n") + line;
    // Complete: one line of look-ahead, so that `}` and then `else {` on
    // the next line are one input, as in a file.
    while (inputComplete(text)) {
      std::string ahead;
      if (classifyInput(text) == InputKind::Command || !readLine(ahead, false))
        return text;
      if (!lineContinuesInput(ahead)) {
        buffer_.insert(0, ahead + "\n"); // given back
        return text;
      }
      text += "\n" + ahead;
    }
  }
  if (text.empty())
    return std::nullopt;
  return text;
}

} // namespace mdl::tools
