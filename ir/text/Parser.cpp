// A recursive-descent reader for the IR text form.
//
// The grammar mirrors the printer exactly (see Printer.h); values are
// resolved by their %N names in text order, which is SSA order because
// regions are structured.
#include "ir/text/Parser.h"
#include "ir/Saturate.h"
#include "ir/Half.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/OpKind.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace mdl::ir {

namespace {

enum class Tok { End, Ident, Sym, Val, Int, Float, Str, Punct, Arrow };

struct Token {
  Tok kind = Tok::End;
  std::string text; // identifier, symbol name, value number, string, punct
  int64_t ival = 0;
  double fval = 0;
  unsigned line = 1, col = 1;
};

class Lexer {
public:
  explicit Lexer(std::string_view s) : s_(s) {}

  bool next(Token &t, std::string &err) {
    skipSpace();
    t = Token();
    t.line = line_;
    t.col = col_;
    if (p_ >= s_.size()) {
      t.kind = Tok::End;
      return true;
    }
    char c = s_[p_];
    if (c == '@') {
      adv();
      t.kind = Tok::Sym;
      if (p_ < s_.size() && s_[p_] == '"')
        return readString(t, err);
      t.text = readWord();
      if (t.text.empty())
        return fail(err, t, "expected a symbol name after '@'");
      return true;
    }
    if (c == '%') {
      adv();
      t.kind = Tok::Val;
      t.text = readWord();
      return true;
    }
    if (c == '"') {
      t.kind = Tok::Str;
      return readString(t, err);
    }
    if (c == '-' && p_ + 1 < s_.size() && s_[p_ + 1] == '>') {
      adv();
      adv();
      t.kind = Tok::Arrow;
      t.text = "->";
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+')
      return readNumber(t, err);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.text = readWord();
      if (t.text == "inf" || t.text == "nan") {
        t.kind = Tok::Float;
        t.fval = t.text == "inf" ? std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::quiet_NaN();
        return true;
      }
      t.kind = Tok::Ident;
      return true;
    }
    t.kind = Tok::Punct;
    t.text = std::string(1, c);
    adv();
    return true;
  }

private:
  bool fail(std::string &err, const Token &t, const std::string &m) {
    err = std::to_string(t.line) + ":" + std::to_string(t.col) + ": " + m;
    return false;
  }
  void adv() {
    if (s_[p_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++p_;
  }
  void skipSpace() {
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/') {
        while (p_ < s_.size() && s_[p_] != '\n')
          adv();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        adv();
      } else {
        break;
      }
    }
  }
  std::string readWord() {
    size_t b = p_;
    while (p_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_' ||
            s_[p_] == '.'))
      adv();
    return std::string(s_.substr(b, p_ - b));
  }
  bool readString(Token &t, std::string &err) {
    adv(); // opening quote
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_];
      if (c == '\\' && p_ + 1 < s_.size()) {
        adv();
        char e = s_[p_];
        if (e == 'n') out += '\n';
        else if (e == 't') out += '\t';
        else if (e == 'x' && p_ + 2 < s_.size()) {
          int v = std::stoi(std::string(s_.substr(p_ + 1, 2)), nullptr, 16);
          adv();
          adv();
          out += char(v);
        } else out += e;
        adv();
        continue;
      }
      out += c;
      adv();
    }
    if (p_ >= s_.size())
      return fail(err, t, "unterminated string");
    adv();
    t.text = std::move(out);
    if (t.kind != Tok::Sym)
      t.kind = Tok::Str;
    return true;
  }
  bool readNumber(Token &t, std::string &err) {
    size_t b = p_;
    if (s_[p_] == '-' || s_[p_] == '+')
      adv();
    if (p_ + 2 < s_.size() + 0 && s_.substr(p_, 3) == "inf") {
      adv(); adv(); adv();
      t.kind = Tok::Float;
      t.fval = s_[b] == '-' ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
      return true;
    }
    bool isFloat = false;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        adv();
      } else if (c == '.' || c == 'e' || c == 'E') {
        isFloat = true;
        adv();
        if ((c == 'e' || c == 'E') && p_ < s_.size() &&
            (s_[p_] == '-' || s_[p_] == '+'))
          adv();
      } else {
        break;
      }
    }
    std::string text(s_.substr(b, p_ - b));
    const char *first = text.data() + (text[0] == '+' ? 1 : 0);
    const char *last = text.data() + text.size();
    if (isFloat) {
      t.kind = Tok::Float;
      auto r = std::from_chars(first, last, t.fval);
      if (r.ec != std::errc() || r.ptr != last)
        return fail(err, t, "malformed number '" + text + "'");
    } else {
      t.kind = Tok::Int;
      auto r = std::from_chars(first, last, t.ival);
      if (r.ec != std::errc() || r.ptr != last)
        return fail(err, t, "malformed integer '" + text + "'");
    }
    return true;
  }

  std::string_view s_;
  size_t p_ = 0;
  unsigned line_ = 1, col_ = 1;
};

class Parser {
public:
  Parser(std::string_view text, std::string &err) : lex_(text), err_(err) {}

  std::unique_ptr<Module> run() {
    auto m = std::make_unique<Module>();
    m_ = m.get();
    if (!advance())
      return nullptr;
    if (isIdent("module")) {
      if (!advance() || !expectKind(Tok::Str, "a file name"))
        return nullptr;
      mainFile_ = internFile(tok_.text);
      if (!advance())
        return nullptr;
    }
    while (tok_.kind != Tok::End) {
      bool ok = isIdent("device")  ? parseDevice()
                : isIdent("param") ? parseGlobal(true)
                : isIdent("const") ? parseGlobal(false)
                : isIdent("func")  ? parseFunction()
                                   : error("expected 'device', 'param', 'const' or 'func'");
      if (!ok)
        return nullptr;
    }
    m->reindex();
    return m;
  }

private:
  // --- token helpers ---
  bool advance() { return lex_.next(tok_, err_); }
  bool error(const std::string &m) {
    if (err_.empty())
      err_ = std::to_string(tok_.line) + ":" + std::to_string(tok_.col) + ": " + m;
    return false;
  }
  bool isIdent(const char *s) const { return tok_.kind == Tok::Ident && tok_.text == s; }
  bool isPunct(char c) const {
    return tok_.kind == Tok::Punct && tok_.text.size() == 1 && tok_.text[0] == c;
  }
  bool expectKind(Tok k, const char *what) {
    return tok_.kind == k ? true : error(std::string("expected ") + what);
  }
  bool eatPunct(char c) {
    if (!isPunct(c))
      return error(std::string("expected '") + c + "'");
    return advance();
  }
  bool eatIdent(const char *s) {
    if (!isIdent(s))
      return error(std::string("expected '") + s + "'");
    return advance();
  }

  // --- pieces ---
  bool parseLoc(Location &loc) {
    if (!isIdent("loc"))
      return true;
    if (!advance() || !eatPunct('('))
      return false;
    loc.file = mainFile_;
    if (tok_.kind == Tok::Str) {
      loc.file = internFile(tok_.text);
      if (!advance() || !eatPunct(':'))
        return false;
    }
    if (!expectKind(Tok::Int, "a line number"))
      return false;
    loc.line = uint32_t(tok_.ival);
    if (!advance() || !eatPunct(':') || !expectKind(Tok::Int, "a column"))
      return false;
    loc.col = uint32_t(tok_.ival);
    return advance() && eatPunct(')');
  }

  bool parseType(TensorType &t) {
    if (tok_.kind != Tok::Ident)
      return error("expected a type");
    auto dt = parseDType(tok_.text);
    if (!dt)
      return error("unknown element type '" + tok_.text + "'");
    t = TensorType(*dt, {});
    if (!advance())
      return false;
    if (!isPunct('['))
      return true;
    if (!advance())
      return false;
    while (true) {
      if (tok_.kind == Tok::Int)
        t.dims.push_back(Dim::of(tok_.ival));
      else if (tok_.kind == Tok::Ident)
        t.dims.push_back(Dim::symbol(tok_.text));
      else if (isPunct('?'))
        t.dims.push_back(Dim::unknown());
      else
        return error("expected a dimension");
      if (!advance())
        return false;
      if (isPunct(']'))
        return advance();
      if (!eatPunct(','))
        return false;
    }
  }

  bool parseDenseRec(const TensorType &t, int dim, std::vector<uint8_t> &bytes) {
    if (dim == t.rank()) {
      double v;
      int64_t iv = 0;
      bool isInt = false;
      if (tok_.kind == Tok::Int) {
        iv = tok_.ival;
        v = double(iv);
        isInt = true;
      } else if (tok_.kind == Tok::Float) {
        v = tok_.fval;
      } else if (isIdent("true") || isIdent("false")) {
        v = isIdent("true");
        iv = int64_t(v);
        isInt = true;
      } else {
        return error("expected a literal element");
      }
      appendElement(t.dtype, v, isInt ? iv : saturateToInt64(v), bytes);
      return advance();
    }
    if (!eatPunct('['))
      return false;
    int64_t n = t.dims[dim].size;
    for (int64_t i = 0; i < n; ++i) {
      if (i && !eatPunct(','))
        return false;
      if (!parseDenseRec(t, dim + 1, bytes))
        return false;
    }
    return eatPunct(']');
  }

  static void appendElement(DType dt, double v, int64_t iv,
                            std::vector<uint8_t> &b) {
    auto put = [&](const void *p, size_t n) {
      const uint8_t *c = static_cast<const uint8_t *>(p);
      b.insert(b.end(), c, c + n);
    };
    switch (dt) {
    case DType::Bool: { uint8_t x = iv != 0; put(&x, 1); break; }
    case DType::I8: { int8_t x = int8_t(iv); put(&x, 1); break; }
    case DType::U8: { uint8_t x = uint8_t(iv); put(&x, 1); break; }
    case DType::I32: { int32_t x = int32_t(iv); put(&x, 4); break; }
    case DType::I64: { put(&iv, 8); break; }
    case DType::F16: { uint16_t x = floatToHalf(float(v)); put(&x, 2); break; }
    case DType::BF16: { uint16_t x = floatToBf16(float(v)); put(&x, 2); break; }
    case DType::F32: { float x = float(v); put(&x, 4); break; }
    case DType::F64: { put(&v, 8); break; }
    }
  }

  bool parseAttr(Attribute &a) {
    switch (tok_.kind) {
    case Tok::Int: a = Attribute::integer(tok_.ival); return advance();
    case Tok::Float: a = Attribute::real(tok_.fval); return advance();
    case Tok::Str: a = Attribute::string(tok_.text); return advance();
    case Tok::Sym: a = Attribute::symbol(tok_.text); return advance();
    default: break;
    }
    if (isIdent("true") || isIdent("false")) {
      a = Attribute::boolean(isIdent("true"));
      return advance();
    }
    if (isPunct('[')) {
      std::vector<int64_t> v;
      if (!advance())
        return false;
      while (!isPunct(']')) {
        if (!v.empty() && !eatPunct(','))
          return false;
        if (!expectKind(Tok::Int, "an integer"))
          return false;
        v.push_back(tok_.ival);
        if (!advance())
          return false;
      }
      a = Attribute::intList(std::move(v));
      return advance();
    }
    if (isIdent("shape")) {
      if (!advance() || !eatPunct('['))
        return false;
      Shape s;
      while (!isPunct(']')) {
        if (!s.empty() && !eatPunct(','))
          return false;
        if (tok_.kind == Tok::Int)
          s.push_back(Dim::of(tok_.ival));
        else if (tok_.kind == Tok::Ident)
          s.push_back(Dim::symbol(tok_.text));
        else if (isPunct('?'))
          s.push_back(Dim::unknown());
        else
          return error("expected a dimension");
        if (!advance())
          return false;
      }
      a = Attribute::dimList(std::move(s));
      return advance();
    }
    if (isIdent("tensor")) {
      TensorType t;
      if (!advance() || !eatPunct('<') || !parseType(t) || !eatPunct('>'))
        return false;
      a = Attribute::type(std::move(t));
      return true;
    }
    if (isIdent("dense")) {
      auto d = std::make_shared<DenseData>();
      if (!advance() || !eatPunct('<') || !parseType(d->type))
        return false;
      if (!d->type.isStatic())
        return error("dense data needs a static type");
      if (!parseDenseRec(d->type, 0, d->bytes) || !eatPunct('>'))
        return false;
      a = Attribute::dense(std::move(d));
      return true;
    }
    if (tok_.kind == Tok::Ident) {
      if (auto dt = parseDType(tok_.text)) {
        a = Attribute::dtype(*dt);
        return advance();
      }
    }
    return error("expected an attribute value");
  }

  bool parseAttrDict(std::vector<NamedAttr> &attrs) {
    if (!eatPunct('{'))
      return false;
    while (!isPunct('}')) {
      if (!attrs.empty() && !eatPunct(','))
        return false;
      if (!expectKind(Tok::Ident, "an attribute name"))
        return false;
      std::string name = tok_.text;
      Attribute a;
      if (!advance() || !eatPunct('=') || !parseAttr(a))
        return false;
      attrs.push_back({name, std::move(a)});
    }
    return advance();
  }

  bool parseDeviceRef(int &dev) {
    if (!expectKind(Tok::Sym, "a device"))
      return false;
    dev = m_->findDevice(tok_.text);
    if (dev < 0)
      return error("unknown device @" + tok_.text);
    return advance();
  }

  bool defineValue(const std::string &name, Value *v) {
    if (!values_.emplace(name, v).second)
      return error("value %" + name + " defined twice");
    return true;
  }

  bool parseArg(Region &r) {
    if (!expectKind(Tok::Val, "an argument"))
      return false;
    std::string name = tok_.text;
    TensorType t;
    if (!advance() || !eatPunct(':') || !parseType(t))
      return false;
    Value *v = r.addArg(t);
    if (isIdent("on")) {
      if (!advance() || !parseDeviceRef(v->device))
        return false;
    }
    return defineValue(name, v);
  }

  bool parseRegionBody(Region &r) {
    while (!isPunct('}')) {
      if (tok_.kind == Tok::End)
        return error("expected '}'");
      if (!parseOp(r))
        return false;
    }
    return advance();
  }

  bool parseRegion(Region &r) {
    if (!eatPunct('{'))
      return false;
    if (isPunct('^')) {
      if (!advance() || !eatPunct('('))
        return false;
      while (!isPunct(')')) {
        if (!r.args.empty() && !eatPunct(','))
          return false;
        if (!parseArg(r))
          return false;
      }
      if (!advance() || !eatPunct(':'))
        return false;
    }
    return parseRegionBody(r);
  }

  // An attribute dictionary starts `{ name =`; a region does not.
  bool atAttrDict() {
    if (!isPunct('{'))
      return false;
    Lexer save = lex_;
    Token t1, t2;
    std::string e;
    bool dict = lex_.next(t1, e) && t1.kind == Tok::Ident &&
                lex_.next(t2, e) && t2.kind == Tok::Punct && t2.text == "=";
    lex_ = save;
    return dict;
  }

  bool parseOp(Region &r) {
    std::vector<std::string> resultNames;
    if (tok_.kind == Tok::Val) {
      while (true) {
        resultNames.push_back(tok_.text);
        if (!advance())
          return false;
        if (isPunct(',')) {
          if (!advance() || !expectKind(Tok::Val, "a result name"))
            return false;
          continue;
        }
        break;
      }
      if (!eatPunct('='))
        return false;
    }
    if (!expectKind(Tok::Ident, "an operation name"))
      return false;
    OpKind kind;
    if (!parseOpName(tok_.text, kind))
      return error("unknown operation '" + tok_.text + "'");
    auto op = std::make_unique<Operation>(kind);
    if (!advance())
      return false;
    if (tok_.kind == Tok::Val) {
      while (true) {
        auto it = values_.find(tok_.text);
        if (it == values_.end())
          return error("use of undefined value %" + tok_.text);
        op->operands.push_back(it->second);
        if (!advance())
          return false;
        if (!isPunct(','))
          break;
        if (!advance())
          return false;
      }
    }
    if (atAttrDict() && !parseAttrDict(op->attrs))
      return false;
    std::vector<TensorType> types;
    if (isPunct(':')) {
      if (!advance())
        return false;
      while (true) {
        TensorType t;
        if (!parseType(t))
          return false;
        types.push_back(std::move(t));
        if (!isPunct(','))
          break;
        if (!advance())
          return false;
      }
    }
    if (types.size() != resultNames.size())
      return error("operation has " + std::to_string(resultNames.size()) +
                   " results but " + std::to_string(types.size()) + " types");
    if (isIdent("on")) {
      if (!advance() || !parseDeviceRef(op->device))
        return false;
      op->placement = PlacementKind::Explicit;
      if (isIdent("inferred")) {
        op->placement = PlacementKind::Inferred;
        if (!advance())
          return false;
      } else if (isIdent("replicated")) {
        op->placement = PlacementKind::Replicated;
        if (!advance())
          return false;
      }
    }
    // Results are defined before regions, matching the printer's numbering.
    for (size_t i = 0; i < types.size(); ++i) {
      Value *v = op->addResult(types[i]);
      v->device = op->device;
      if (!defineValue(resultNames[i], v))
        return false;
    }
    while (isPunct('{')) {
      if (!parseRegion(*op->addRegion()))
        return false;
    }
    if (!parseLoc(op->loc))
      return false;
    r.push(std::move(op));
    return true;
  }

  bool parseDevice() {
    Device d;
    if (!advance() || !expectKind(Tok::Sym, "a device name"))
      return false;
    d.name = tok_.text;
    if (!advance() || !eatPunct('=') || !expectKind(Tok::Ident, "a device kind"))
      return false;
    if (!stdlib::findDeviceKind(tok_.text))
      return error("unknown device kind '" + tok_.text + "'");
    d.kind = tok_.text;
    if (!advance() || !eatPunct('('))
      return false;
    while (!isPunct(')')) {
      if (!d.args.empty() && !eatPunct(','))
        return false;
      if (!expectKind(Tok::Ident, "an argument name"))
        return false;
      std::string n = tok_.text;
      Attribute a;
      if (!advance() || !eatPunct('=') || !parseAttr(a))
        return false;
      d.args.push_back({n, std::move(a)});
    }
    if (!advance())
      return false;
    if (isIdent("implicit")) {
      d.implicit = true;
      if (!advance())
        return false;
    }
    if (!parseLoc(d.loc))
      return false;
    m_->devices.push_back(std::move(d));
    return true;
  }

  bool parseGlobal(bool isParam) {
    Global g;
    g.isParam = isParam;
    if (!advance() || !expectKind(Tok::Sym, "a global name"))
      return false;
    g.name = tok_.text;
    if (!advance() || !eatPunct(':') || !parseType(g.type))
      return false;
    if (isIdent("on")) {
      if (!advance() || !parseDeviceRef(g.pinnedDevice))
        return false;
    }
    if (!parseLoc(g.loc))
      return false;
    values_.clear();
    g.init = std::make_unique<Region>();
    if (!eatPunct('{') || !parseRegionBody(*g.init))
      return false;
    m_->globals.push_back(std::move(g));
    return true;
  }

  bool parseFunction() {
    auto f = std::make_unique<Function>();
    values_.clear();
    if (!advance() || !expectKind(Tok::Sym, "a function name"))
      return false;
    f->name = tok_.text;
    if (!advance())
      return false;
    if (isPunct('<')) {
      if (!advance())
        return false;
      while (!isPunct('>')) {
        if (!f->symbols.empty() && !eatPunct(','))
          return false;
        if (!expectKind(Tok::Ident, "a symbol"))
          return false;
        f->symbols.push_back(tok_.text);
        if (!advance())
          return false;
      }
      if (!advance())
        return false;
    }
    if (!eatPunct('('))
      return false;
    while (!isPunct(')')) {
      if (!f->body->args.empty() && !eatPunct(','))
        return false;
      if (!parseArg(*f->body))
        return false;
    }
    if (!advance())
      return false;
    if (tok_.kind != Tok::Arrow)
      return error("expected '->'");
    if (!advance() || !eatPunct('('))
      return false;
    while (!isPunct(')')) {
      if (!f->resultTypes.empty() && !eatPunct(','))
        return false;
      TensorType t;
      if (!parseType(t))
        return false;
      f->resultTypes.push_back(std::move(t));
      int dev = -1;
      if (isIdent("on")) {
        if (!advance() || !parseDeviceRef(dev))
          return false;
        f->resultDevices.resize(f->resultTypes.size(), -1);
        f->resultDevices.back() = dev;
      }
    }
    if (!f->resultDevices.empty())
      f->resultDevices.resize(f->resultTypes.size(), -1);
    if (!advance())
      return false;
    if (atAttrDict() && !parseAttrDict(f->attrs))
      return false;
    if (!parseLoc(f->loc))
      return false;
    if (!eatPunct('{') || !parseRegionBody(*f->body))
      return false;
    m_->addFunction(std::move(f));
    return true;
  }

  Lexer lex_;
  std::string &err_;
  Token tok_;
  Module *m_ = nullptr;
  uint32_t mainFile_ = 0;
  std::unordered_map<std::string, Value *> values_;
};

} // namespace

std::unique_ptr<Module> parseModule(std::string_view text, std::string &error) {
  error.clear();
  Parser p(text, error);
  auto m = p.run();
  if (!error.empty())
    return nullptr;
  return m;
}

} // namespace mdl::ir
