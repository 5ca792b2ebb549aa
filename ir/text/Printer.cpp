// The deterministic IR printer.
#include "ir/text/Printer.h"
#include "ir/Half.h"
#include "stdlib/OpKind.h"

#include <cstring>
#include <sstream>
#include <unordered_map>

namespace mdl::ir {

namespace {

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}

bool plainSymbol(const std::string &s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
      return false;
  return !std::isdigit(static_cast<unsigned char>(s[0]));
}

std::string symbol(const std::string &s) {
  return "@" + (plainSymbol(s) ? s : quote(s));
}

std::string denseElement(const DenseData &d, int64_t i) {
  switch (d.type.dtype) {
  case DType::Bool: return d.elementAsInt(i) ? "true" : "false";
  case DType::I8: case DType::U8: case DType::I32: case DType::I64:
    return std::to_string(d.elementAsInt(i));
  case DType::F64: return formatReal(d.elementAsDouble(i));
  default: return formatFloat(static_cast<float>(d.elementAsDouble(i)));
  }
}

void printDenseRec(const DenseData &d, int dim, int64_t &pos, std::string &out) {
  if (dim == d.type.rank()) {
    out += denseElement(d, pos++);
    return;
  }
  out += '[';
  int64_t n = d.type.dims[dim].size;
  for (int64_t i = 0; i < n; ++i) {
    if (i)
      out += ", ";
    printDenseRec(d, dim + 1, pos, out);
  }
  out += ']';
}

class FunctionPrinter {
public:
  FunctionPrinter(const Module &m, std::ostream &os, PrintOptions opts,
                  uint32_t mainFile)
      : m_(m), os_(os), opts_(opts), mainFile_(mainFile) {}

  void printFunction(const Function &f) {
    ids_.clear();
    next_ = 0;
    os_ << "func " << symbol(f.name);
    if (!f.symbols.empty()) {
      os_ << "<";
      for (size_t i = 0; i < f.symbols.size(); ++i)
        os_ << (i ? ", " : "") << f.symbols[i];
      os_ << ">";
    }
    os_ << "(";
    for (size_t i = 0; i < f.body->args.size(); ++i) {
      if (i)
        os_ << ", ";
      printArg(*f.body->args[i]);
    }
    os_ << ") -> (";
    for (size_t i = 0; i < f.resultTypes.size(); ++i) {
      os_ << (i ? ", " : "") << f.resultTypes[i].str();
      if (i < f.resultDevices.size() && f.resultDevices[i] >= 0)
        os_ << " on " << deviceName(f.resultDevices[i]);
    }
    os_ << ")";
    printAttrDict(f.attrs);
    printLoc(f.loc);
    os_ << " {\n";
    for (auto &op : f.body->ops)
      printOp(*op, 1);
    os_ << "}\n";
  }

  void printGlobal(const Global &g) {
    ids_.clear();
    next_ = 0;
    os_ << (g.isParam ? "param " : "const ") << symbol(g.name) << " : "
        << g.type.str();
    if (g.pinnedDevice >= 0)
      os_ << " on " << symbol(m_.devices[g.pinnedDevice].name);
    printLoc(g.loc);
    os_ << " {\n";
    if (g.init)
      for (auto &op : g.init->ops)
        printOp(*op, 1);
    os_ << "}\n";
  }

  void printLoc(const Location &l) {
    if (!opts_.locations || !l.valid())
      return;
    os_ << " loc(";
    if (l.file != mainFile_)
      os_ << quote(fileName(l.file)) << ":";
    os_ << l.line << ":" << l.col << ")";
  }

private:
  std::string name(const Value *v) {
    auto it = ids_.find(v);
    if (it == ids_.end())
      return "%<unknown>";
    return "%" + std::to_string(it->second);
  }

  std::string define(const Value *v) {
    ids_[v] = next_++;
    return name(v);
  }

  std::string deviceName(int d) {
    if (d < 0 || d >= int(m_.devices.size()))
      return "@<none>";
    return symbol(m_.devices[d].name);
  }

  void printArg(const Value &v) {
    os_ << define(&v) << ": " << v.type.str();
    if (v.device >= 0)
      os_ << " on " << deviceName(v.device);
  }

  void printAttrDict(const std::vector<NamedAttr> &attrs) {
    if (attrs.empty())
      return;
    os_ << " {";
    for (size_t i = 0; i < attrs.size(); ++i)
      os_ << (i ? ", " : "") << attrs[i].name << " = "
          << printAttribute(attrs[i].value);
    os_ << "}";
  }

  void indent(int depth) {
    for (int i = 0; i < depth; ++i)
      os_ << "  ";
  }

  void printOp(const Operation &op, int depth) {
    indent(depth);
    // Results are numbered before regions so numbering follows the text.
    std::string lhs;
    for (size_t i = 0; i < op.results.size(); ++i)
      lhs += (i ? ", " : "") + define(op.results[i].get());
    if (!lhs.empty())
      os_ << lhs << " = ";
    os_ << opName(op.kind);
    for (size_t i = 0; i < op.operands.size(); ++i)
      os_ << (i ? ", " : " ") << name(op.operands[i]);
    printAttrDict(op.attrs);
    if (!op.results.empty()) {
      os_ << " : ";
      for (size_t i = 0; i < op.results.size(); ++i)
        os_ << (i ? ", " : "") << op.results[i]->type.str();
    }
    if (op.device >= 0) {
      os_ << " on " << deviceName(op.device);
      if (op.placement == PlacementKind::Inferred)
        os_ << " inferred";
      else if (op.placement == PlacementKind::Replicated)
        os_ << " replicated";
    }
    for (auto &r : op.regions) {
      os_ << " {\n";
      if (!r->args.empty()) {
        indent(depth + 1);
        os_ << "^(";
        for (size_t i = 0; i < r->args.size(); ++i) {
          if (i)
            os_ << ", ";
          printArg(*r->args[i]);
        }
        os_ << "):\n";
      }
      for (auto &inner : r->ops)
        printOp(*inner, depth + 1);
      indent(depth);
      os_ << "}";
    }
    printLoc(op.loc);
    os_ << "\n";
  }

  const Module &m_;
  std::ostream &os_;
  PrintOptions opts_;
  uint32_t mainFile_;
  std::unordered_map<const Value *, unsigned> ids_;
  unsigned next_ = 0;
};

uint32_t mainFileOf(const Module &m) {
  for (auto &f : m.functions)
    if (f->loc.valid())
      return f->loc.file;
  for (auto &g : m.globals)
    if (g.loc.valid())
      return g.loc.file;
  for (auto &d : m.devices)
    if (d.loc.valid())
      return d.loc.file;
  return 0;
}

} // namespace

std::string printAttribute(const Attribute &a) {
  using K = Attribute::Kind;
  switch (a.kind()) {
  case K::Int: return std::to_string(a.asInt());
  case K::Float: return formatReal(a.asFloat());
  case K::Bool: return a.asBool() ? "true" : "false";
  case K::String: return quote(a.asString());
  case K::IntList: {
    std::string s = "[";
    const auto &v = a.asIntList();
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }
  case K::DimList: {
    std::string s = "shape[";
    const auto &v = a.asDimList();
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + v[i].str();
    return s + "]";
  }
  case K::DType: return dtypeName(a.asDType());
  case K::Type: return "tensor<" + a.asType().str() + ">";
  case K::Dense: {
    const DenseData &d = a.asDense();
    std::string s = "dense<" + d.type.str() + " ";
    int64_t pos = 0;
    printDenseRec(d, 0, pos, s);
    return s + ">";
  }
  case K::Symbol: return symbol(a.asSymbol());
  }
  return "?";
}

void printModule(const Module &m, std::ostream &os, PrintOptions opts) {
  uint32_t mainFile = mainFileOf(m);
  if (opts.locations && mainFile)
    os << "module " << quote(fileName(mainFile)) << "\n";
  FunctionPrinter fp(m, os, opts, mainFile);
  for (const Device &d : m.devices) {
    os << "device " << symbol(d.name) << " = " << d.kind << "(";
    for (size_t i = 0; i < d.args.size(); ++i)
      os << (i ? ", " : "") << d.args[i].name << " = "
         << printAttribute(d.args[i].value);
    os << ")";
    if (d.implicit)
      os << " implicit";
    fp.printLoc(d.loc);
    os << "\n";
  }
  for (const Global &g : m.globals)
    fp.printGlobal(g);
  for (auto &f : m.functions)
    fp.printFunction(*f);
}

std::string printModule(const Module &m, PrintOptions opts) {
  std::ostringstream os;
  printModule(m, os, opts);
  return os.str();
}

void printFunction(const Module &m, const Function &f, std::ostream &os,
                   PrintOptions opts) {
  FunctionPrinter fp(m, os, opts, mainFileOf(m));
  fp.printFunction(f);
}

} // namespace mdl::ir
