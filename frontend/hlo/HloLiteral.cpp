// Constant literals: parsed element by element straight into their storage
// bytes, either a small inline buffer or the weight file, so a literal of
// any size costs a fixed amount of memory.
//
// Accepted forms: a scalar (`0`, `-inf`, `nan`, `true`, `1.5e-3`), nested
// braces in row-major order (`{ {1, 2}, {3, 4} }`, `{}` for no elements),
// the elided `{...}`, and the old form with a shape before the braces
// (`f32[2] {1, 2}`). Element spellings are those of XLA's printer: decimal
// or exponent floats, `inf`/`nan` with an optional sign and payload,
// integers (unsigned 64-bit values too), and `true`/`false`/`1`/`0` for
// pred. The element count must match the shape exactly.
#include "frontend/hlo/HloReader.h"

#include "ir/Half.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace mdl::frontend::hlo {

using ir::DType;

namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kProgressEvery = 1u << 20;

/// Where the element bytes go: the instruction's inline buffer or the file.
class Sink {
public:
  Sink(std::vector<uint8_t> *inlineBytes, WeightWriter *file)
      : inline_(inlineBytes), file_(file) {}
  void put(const void *p, size_t n) {
    if (used_ + n > kChunk)
      flush();
    std::memcpy(buf_ + used_, p, n);
    used_ += n;
  }
  void flush() {
    if (inline_)
      inline_->insert(inline_->end(), buf_, buf_ + used_);
    else
      file_->write(buf_, used_);
    used_ = 0;
  }

private:
  std::vector<uint8_t> *inline_;
  WeightWriter *file_;
  unsigned char buf_[kChunk];
  size_t used_ = 0;
};

bool isDelimiter(char c) {
  return c == ',' || c == '{' || c == '}' || c == '(' || c == ')' || c == ' ' ||
         c == '\t' || c == '\r' || c == '\n';
}

// The end of the element spelling at p: up to a delimiter, with a NaN
// payload `nan(0x7fc00000)` kept whole.
const char *tokenEnd(const char *p, const char *end) {
  const char *e = p;
  while (e < end && !isDelimiter(*e))
    ++e;
  if (e < end && *e == '(' && e - p >= 3 && (e[-1] == 'n' || e[-1] == 'N')) {
    while (e < end && *e != ')' && *e != '\n')
      ++e;
    if (e < end && *e == ')')
      ++e;
  }
  return e;
}

// Converts one element spelling [b, e) into `out` (dtypeSize bytes);
// false when it is not a valid spelling for the type.
bool convertElement(DType dt, const char *b, const char *e, unsigned char *out) {
  if (b < e && *b == '+')
    ++b;
  switch (dt) {
  case DType::Bool: {
    std::string_view s(b, size_t(e - b));
    if (s == "true" || s == "1")
      *out = 1;
    else if (s == "false" || s == "0")
      *out = 0;
    else
      return false;
    return true;
  }
  case DType::I8:
  case DType::U8:
  case DType::I32:
  case DType::I64: {
    int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec == std::errc::result_out_of_range && *b != '-') {
      uint64_t u = 0;
      r = std::from_chars(b, e, u);
      v = int64_t(u);
    }
    if (r.ec != std::errc() || r.ptr != e) {
      // Integers printed as floats (`1.0`) in hand-written files.
      double d = 0;
      auto rf = std::from_chars(b, e, d);
      if (rf.ec != std::errc() || rf.ptr != e || !(d > -9.2e18 && d < 9.2e18))
        return false;
      v = int64_t(d);
    }
    std::memcpy(out, &v, ir::dtypeSize(dt)); // little-endian: the low bytes wrap
    return true;
  }
  case DType::F64: {
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ec == std::errc::result_out_of_range && r.ptr == e)
      d = std::strtod(std::string(b, e).c_str(), nullptr); // to inf or 0, like strtod
    else if (r.ec != std::errc() || r.ptr != e)
      return false;
    std::memcpy(out, &d, 8);
    return true;
  }
  default: {
    float f = 0;
    auto r = std::from_chars(b, e, f);
    if (r.ec == std::errc::result_out_of_range && r.ptr == e)
      f = std::strtof(std::string(b, e).c_str(), nullptr); // to inf or 0, like strtof
    else if (r.ec != std::errc() || r.ptr != e)
      return false;
    if (dt == DType::F32) {
      std::memcpy(out, &f, 4);
    } else {
      uint16_t h = dt == DType::F16 ? ir::floatToHalf(f) : ir::floatToBf16(f);
      std::memcpy(out, &h, 2);
    }
    return true;
  }
  }
}

// Skips to the `)` that closes the literal (the `(` was consumed) and
// consumes it.
void skipToClose(Cursor &c) {
  int depth = 1;
  while (true) {
    c.skipSpace();
    char ch = c.here();
    if (!ch)
      c.fail("unterminated constant literal");
    if (ch == '(' || ch == '{' || ch == '[') {
      if (++depth > kMaxNesting)
        c.fail("constant literal nested too deeply");
    } else if (ch == ')' || ch == '}' || ch == ']') {
      --depth;
    }
    c.advance();
    if (depth == 0) {
      if (ch != ')')
        c.fail("unbalanced constant literal");
      return;
    }
  }
}

// The scanning loop: elements of `dt` from the cursor to the end of the
// braces (or one scalar), `want` of them, into `sink`.
int64_t parseElements(Cursor &c, DType dt, int64_t want, Sink &sink,
                      const HloReadOptions &opts) {
  size_t esize = ir::dtypeSize(dt);
  unsigned char elem[8];
  c.skipSpace();
  if (c.here() != '{') {
    const char *b = c.ptr(), *e = tokenEnd(b, c.end());
    if (e == b || !convertElement(dt, b, e, elem))
      c.fail("expected a " + std::string(ir::dtypeName(dt)) + " literal, found " + c.found());
    sink.put(elem, esize);
    c.jumpTo(e);
    return 1;
  }
  int64_t count = 0;
  int depth = 0;
  const char *p = c.ptr();
  const char *end = c.end();
  const char *nextReport = p + kProgressEvery;
  while (true) {
    if (p >= end) {
      c.jumpTo(p);
      c.fail("unterminated constant literal");
    }
    char ch = *p;
    if (ch == ' ' || ch == ',' || ch == '\t' || ch == '\r') {
      ++p;
    } else if (ch == '\n') {
      c.newlineAt(p);
      ++p;
    } else if (ch == '{') {
      if (++depth > kMaxNesting) {
        c.jumpTo(p);
        c.fail("constant literal nested too deeply");
      }
      ++p;
    } else if (ch == '}') {
      ++p;
      if (--depth == 0)
        break;
    } else if (ch == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*')) {
      c.jumpTo(p);
      c.skipSpace();
      p = c.ptr();
    } else {
      const char *e = tokenEnd(p, end);
      if (count >= want || e == p || !convertElement(dt, p, e, elem)) {
        c.jumpTo(p);
        if (count >= want)
          c.fail("constant literal has more than the " + std::to_string(want) +
                 " elements of its shape");
        c.fail("expected a " + std::string(ir::dtypeName(dt)) + " literal element, found " +
               c.found());
      }
      sink.put(elem, esize);
      ++count;
      p = e;
      if (p >= nextReport) {
        nextReport = p + kProgressEvery;
        if (opts.progress)
          opts.progress(size_t(p - c.begin()));
      }
    }
  }
  c.jumpTo(p);
  return count;
}

bool isElided(Cursor &c) {
  c.skipSpace();
  if (c.here() != '{')
    return false;
  Cursor probe = c;
  probe.advance();
  probe.skipSpace();
  return probe.at(0) == '.' && probe.at(1) == '.' && probe.at(2) == '.';
}

} // namespace

void readLiteral(Cursor &c, HloInstruction &inst, const HloReadOptions &opts,
                 const std::string &key) {
  const HloShape &s = inst.shape;
  HloLiteral &lit = inst.literal;
  std::optional<DType> dt = s.isTuple || s.buffer || s.dynamic ? std::nullopt
                                                              : storageType(s.type);
  if (!dt) {
    lit.kind = HloLiteral::Kind::Unsupported;
    lit.why = s.isTuple ? "tuple constant" : "constant of type " + s.str();
    skipToClose(c);
    return;
  }
  c.skipSpace();
  // The old form repeats the shape before the value: `f32[2] {1, 2}`.
  if (std::isalpha(static_cast<unsigned char>(c.here()))) {
    Cursor probe = c;
    std::string_view w = probe.name();
    if (!w.empty() && probe.here() == '[') {
      probe.advance();
      while (probe.here() && probe.here() != ']')
        probe.advance();
      probe.advance();
      if (probe.here() == '{') { // a layout
        Cursor lay = probe;
        lay.skipBalanced();
        lay.skipSpace();
        if (lay.here() == '{' || lay.here() == ')')
          probe = lay;
      }
      c = probe;
    }
  }
  if (isElided(c)) {
    lit.kind = HloLiteral::Kind::Elided;
    skipToClose(c);
    return;
  }
  int64_t want = s.numElements();
  uint64_t bytes = uint64_t(want) * ir::dtypeSize(*dt);
  HloPos start = c.pos();
  int64_t got;
  if (bytes <= opts.inlineLimit) {
    lit.kind = HloLiteral::Kind::Inline;
    lit.bytes.reserve(size_t(bytes));
    Sink sink(&lit.bytes, nullptr);
    got = parseElements(c, *dt, want, sink, opts);
    sink.flush();
  } else {
    std::string err;
    WeightWriter *w = opts.weights ? opts.weights(err) : nullptr;
    if (!w)
      Cursor::failAt(start, "cannot store a " + std::to_string(bytes) +
                                "-byte constant: " + (err.empty() ? "no weight file" : err));
    lit.kind = HloLiteral::Kind::Weight;
    lit.key = key;
    w->begin(key, *dt, s.dims);
    Sink sink(nullptr, w);
    got = parseElements(c, *dt, want, sink, opts);
    sink.flush();
    if (got == want && !w->end(err))
      Cursor::failAt(start, err);
  }
  if (got != want)
    Cursor::failAt(start, "constant literal has " + std::to_string(got) + " elements, but " +
                              s.str() + " has " + std::to_string(want));
  c.expect(')', "after the constant literal");
}

} // namespace mdl::frontend::hlo
