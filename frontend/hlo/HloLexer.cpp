// The HLO reader's cursor: comment and whitespace skipping, names,
// integers, strings and balanced raw-value scanning, all bounds-checked.
#include "frontend/hlo/HloLexer.h"

#include <charconv>
#include <cstring>
#include <vector>

namespace mdl::frontend::hlo {

void Cursor::skipSpace() {
  while (p_ < end_) {
    char c = *p_;
    if (c == '\n') {
      newlineAt(p_);
      ++p_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++p_;
    } else if (c == '/' && p_ + 1 < end_ && p_[1] == '/') {
      while (p_ < end_ && *p_ != '\n')
        ++p_;
    } else if (c == '/' && p_ + 1 < end_ && p_[1] == '*') {
      skipBlockComment();
    } else {
      return;
    }
  }
}

void Cursor::skipBlockComment() {
  HloPos start = pos();
  p_ += 2;
  while (p_ < end_) {
    if (*p_ == '*' && p_ + 1 < end_ && p_[1] == '/') {
      p_ += 2;
      return;
    }
    if (*p_ == '\n')
      newlineAt(p_);
    ++p_;
  }
  failAt(start, "unterminated block comment");
}

std::string Cursor::found() {
  skipSpace();
  if (p_ >= end_)
    return "end of file";
  unsigned char c = static_cast<unsigned char>(*p_);
  if (c < 32 || c >= 127) {
    static const char *hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }
  if (isNameChar(*p_) || *p_ == '%') {
    const char *q = p_ + (*p_ == '%' ? 1 : 0);
    while (q < end_ && isNameChar(*q) && q - p_ < 40)
      ++q;
    return "'" + std::string(p_, q) + "'";
  }
  return std::string("'") + *p_ + "'";
}

void Cursor::expect(char c, const std::string &context) {
  if (accept(c))
    return;
  fail(std::string("expected '") + c + "' " + context + ", found " + found());
}

bool Cursor::acceptArrow() {
  skipSpace();
  if (p_ + 1 < end_ && p_[0] == '-' && p_[1] == '>') {
    p_ += 2;
    return true;
  }
  return false;
}

std::string_view Cursor::name() {
  skipSpace();
  const char *s = p_;
  if (p_ < end_ && *p_ == '%')
    ++p_;
  while (p_ < end_ && isNameChar(*p_)) {
    // `->` ends a name (`b01f_01io->b01f` is read by rawValue, not here).
    if (*p_ == '-' && p_ + 1 < end_ && p_[1] == '>')
      break;
    ++p_;
  }
  if (p_ == s + (s < end_ && *s == '%' ? 1 : 0)) {
    p_ = s;
    return {};
  }
  return std::string_view(s, size_t(p_ - s));
}

int64_t Cursor::integer(const char *context) {
  skipSpace();
  const char *s = p_;
  int64_t v = 0;
  auto r = std::from_chars(p_, end_, v);
  if (r.ec != std::errc() || r.ptr == s)
    fail(std::string("expected an integer ") + context + ", found " + found());
  p_ = r.ptr;
  return v;
}

void Cursor::skipString(char quote) {
  HloPos start = pos();
  ++p_;
  while (p_ < end_) {
    char c = *p_;
    if (c == '\\') {
      p_ = p_ + 2 <= end_ ? p_ + 2 : end_;
      continue;
    }
    if (c == '\n')
      newlineAt(p_);
    ++p_;
    if (c == quote)
      return;
  }
  failAt(start, "unterminated string");
}

std::string_view Cursor::quoted() {
  skipSpace();
  if (here() != '"')
    fail("expected a string, found " + found());
  const char *s = p_;
  skipString('"');
  return std::string_view(s + 1, size_t(p_ - s - 2));
}

namespace {
char closerOf(char c) { return c == '(' ? ')' : c == '[' ? ']' : '}'; }
} // namespace

void Cursor::skipBalanced() {
  std::vector<char> stack;
  HloPos start = pos();
  while (p_ < end_) {
    char c = *p_;
    if (c == '"' || c == '\'') {
      skipString(c);
      continue;
    }
    if (c == '/' && p_ + 1 < end_ && (p_[1] == '*' || p_[1] == '/')) {
      skipSpace();
      continue;
    }
    if (c == '\n')
      newlineAt(p_);
    if (c == '(' || c == '[' || c == '{') {
      if (stack.size() >= size_t(kMaxNesting))
        fail("brackets nested more than " + std::to_string(kMaxNesting) + " deep");
      stack.push_back(closerOf(c));
    } else if (c == ')' || c == ']' || c == '}') {
      if (stack.empty() || stack.back() != c)
        fail(std::string("unbalanced '") + c + "'");
      stack.pop_back();
      if (stack.empty()) {
        ++p_;
        return;
      }
    } else if (stack.empty()) {
      fail("expected a bracket, found " + found());
    }
    ++p_;
  }
  failAt(start, "unterminated bracket");
}

std::string_view Cursor::rawValue() {
  skipBlanks();
  const char *s = p_;
  HloPos start = pos();
  std::vector<char> stack;
  while (p_ < end_) {
    char c = *p_;
    if (c == '"' || c == '\'') {
      skipString(c);
      continue;
    }
    if (c == '/' && p_ + 1 < end_ && (p_[1] == '*' || p_[1] == '/')) {
      if (stack.empty())
        break; // a comment after the value
      skipSpace();
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (stack.size() >= size_t(kMaxNesting))
        fail("brackets nested more than " + std::to_string(kMaxNesting) + " deep");
      stack.push_back(closerOf(c));
      ++p_;
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      if (stack.empty())
        break;
      if (stack.back() != c)
        fail(std::string("unbalanced '") + c + "' in an attribute value");
      stack.pop_back();
      ++p_;
      continue;
    }
    if (stack.empty() && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
      // A value may continue after blanks on the same line:
      // `mesh['a'=2] {'a'}`, `literal=s32[] 1`.
      const char *q = p_;
      while (q < end_ && (*q == ' ' || *q == '\t' || *q == '\r'))
        ++q;
      if (c != ',' && c != '\n' && q < end_ && q != p_ && !std::strchr(",\n})]/", *q)) {
        p_ = q;
        continue;
      }
      break;
    }
    if (c == '\n')
      newlineAt(p_);
    ++p_;
  }
  if (!stack.empty())
    failAt(start, "unterminated attribute value");
  if (p_ == s)
    fail("expected an attribute value, found " + found());
  return std::string_view(s, size_t(p_ - s));
}

} // namespace mdl::frontend::hlo
