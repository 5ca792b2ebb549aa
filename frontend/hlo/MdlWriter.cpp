// The IR-to-mdl-source writer behind `mdl import`.
#include "frontend/hlo/MdlWriter.h"

#include "frontend/hlo/Names.h"
#include "stdlib/Registry.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>

namespace mdl::frontend::hlo {

using namespace ir;
using stdlib::ParamKind;

namespace {

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string intList(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

const char *operatorOf(OpKind k) {
  switch (k) {
  case OpKind::Add: return "+";
  case OpKind::Sub: return "-";
  case OpKind::Mul: return "*";
  case OpKind::Div: return "/";
  case OpKind::Mod: return "%";
  case OpKind::Eq: return "==";
  case OpKind::Ne: return "!=";
  case OpKind::Lt: return "<";
  case OpKind::Le: return "<=";
  case OpKind::Gt: return ">";
  case OpKind::Ge: return ">=";
  case OpKind::And: return "&&";
  case OpKind::Or: return "||";
  default: return nullptr;
  }
}

// A constant whose elements are all the same finite value: `full(T, v)`.
std::optional<std::string> splatValue(const DenseData &d) {
  int64_t n = d.type.numElements();
  size_t es = dtypeSize(d.type.dtype);
  for (int64_t i = 1; i < n; ++i)
    if (std::memcmp(d.bytes.data(), d.bytes.data() + i * int64_t(es), es) != 0)
      return std::nullopt;
  if (n == 0)
    return std::string("0");
  if (isFloat(d.type.dtype)) {
    double v = d.elementAsDouble(0);
    if (!std::isfinite(v) || (v == 0 && std::signbit(v)))
      return std::nullopt;
    return formatReal(v);
  }
  int64_t v = d.elementAsInt(0);
  if (v < -(int64_t(1) << 53) || v > (int64_t(1) << 53))
    return std::nullopt;
  return std::to_string(v);
}

class Writer {
public:
  Writer(const Module &m, const MdlWriteOptions &o) : m_(m), o_(o) {}

  bool run(std::ostream &os, std::string &error) {
    for (const Device &d : m_.devices)
      globals_.insert(d.name);
    for (const Global &g : m_.globals)
      globals_.insert(g.name);
    for (auto &f : m_.functions)
      globals_.insert(f->name);
    std::ostringstream fns;
    for (auto &f : m_.functions) {
      writeFunction(*f, fns);
      if (!error_.empty())
        break;
    }
    if (!error_.empty()) {
      error = error_;
      return false;
    }
    if (!o_.banner.empty())
      os << "# " << o_.banner << "\n";
    bool any = false;
    for (const Device &d : m_.devices) {
      if (d.implicit)
        continue;
      any = true;
      // Every argument by keyword, as the kind's descriptor orders them.
      os << "device " << d.name << " = " << d.kind << "(";
      for (size_t i = 0; i < d.args.size(); ++i) {
        const Attribute &v = d.args[i].value;
        os << (i ? ", " : "") << d.args[i].name << " = "
           << (v.kind() == Attribute::Kind::String ? "\"" + v.asString() + "\""
                                                    : std::to_string(v.asInt()));
      }
      os << ")\n";
    }
    if (any)
      os << "\n";
    for (const Global &g : m_.globals)
      writeGlobal(g, os);
    for (const std::string &p : moved_)
      os << p;
    if (!m_.globals.empty() || !moved_.empty())
      os << "\n";
    os << fns.str();
    for (const std::string &f : helpers_)
      os << "\n" << f;
    if (!error_.empty()) {
      error = error_;
      return false;
    }
    return true;
  }

private:
  std::string loadPath(const std::string &file) const {
    return file == o_.weightsPath ? o_.weightsSpelling : file;
  }

  void writeGlobal(const Global &g, std::ostream &os) {
    const Operation *load = g.init && !g.init->ops.empty() ? g.init->ops[0].get() : nullptr;
    if (!load || load->kind != OpKind::Load) {
      fail("global '" + g.name + "' is not a weight loaded from a file");
      return;
    }
    os << "param " << g.name << " : " << g.type.str() << " = load("
       << quote(loadPath(load->stringAttr("file")));
    if (!load->stringAttr("key").empty())
      os << ", " << quote(load->stringAttr("key"));
    os << ")\n";
  }

  // --- names ------------------------------------------------------------

  std::string bind(const Value *v) {
    std::string base = "v";
    if (o_.names) {
      auto it = o_.names->find(v);
      if (it != o_.names->end())
        base = mdlIdentifier(it->second);
    }
    std::string n = base;
    for (int i = 2; used_.count(n) || globals_.count(n); ++i)
      n = base + "_" + std::to_string(i);
    used_.insert(n);
    allLocals_.insert(n);
    names_[v] = n;
    return n;
  }

  // A new module-level name: not a global, and not a local of any function
  // (which would shadow it there).
  std::string globalName(const std::string &base) {
    std::string n = base;
    for (int i = 2; globals_.count(n) || allLocals_.count(n) || used_.count(n); ++i)
      n = base + "_" + std::to_string(i);
    globals_.insert(n);
    return n;
  }

  std::string name(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    fail("a value is used before it is defined");
    return "?";
  }

  void fail(const std::string &msg) {
    if (error_.empty())
      error_ = msg;
  }

  std::string names(const std::vector<Value *> &vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i)
      s += (i ? ", " : "") + name(vs[i]);
    return s;
  }

  // --- functions ----------------------------------------------------------

  void writeFunction(const Function &f, std::ostream &os) {
    names_.clear();
    used_.clear();
    os << "fn " << f.name << "(";
    for (size_t i = 0; i < f.body->args.size(); ++i) {
      const Value *a = f.body->args[i].get();
      os << (i ? ", " : "") << bind(a) << ": " << a->type.str();
    }
    os << ")";
    if (f.resultTypes.size() == 1)
      os << " -> " << f.resultTypes[0].str();
    else if (f.resultTypes.size() > 1) {
      os << " -> (";
      for (size_t i = 0; i < f.resultTypes.size(); ++i)
        os << (i ? ", " : "") << f.resultTypes[i].str();
      os << ")";
    }
    os << " {\n";
    writeOps(*f.body, 1, os);
    os << "}\n\n";
  }

  void writeOps(const Region &r, int depth, std::ostream &os) {
    for (auto &op : r.ops)
      writeOp(*op, depth, os);
  }

  std::string lhs(const Operation &op) {
    std::vector<Value *> rs;
    for (auto &r : op.results)
      rs.push_back(r.get());
    std::string s;
    for (size_t i = 0; i < rs.size(); ++i)
      s += (i ? ", " : "") + bind(rs[i]);
    return rs.size() == 1 ? s : "(" + s + ")";
  }

  std::string placement(const Operation &op) const {
    if (op.device >= 0 && op.placement == PlacementKind::Explicit &&
        size_t(op.device) < m_.devices.size())
      return " on " + m_.devices[size_t(op.device)].name;
    return "";
  }

  void writeOp(const Operation &op, int depth, std::ostream &os) {
    std::string ind(size_t(depth) * 2, ' ');
    switch (op.kind) {
    case OpKind::Return:
      os << ind << "return" << (op.operands.empty() ? "" : " " + names(op.operands)) << "\n";
      return;
    case OpKind::Yield:
      os << ind << "yield" << (op.operands.empty() ? "" : " " + names(op.operands)) << "\n";
      return;
    case OpKind::If:
      if (op.results.empty())
        return; // no results: nothing observable
      writeIf(op, depth, os);
      return;
    case OpKind::While:
      writeWhile(op, depth, os);
      return;
    default:
      break;
    }
    std::string rhs = expression(op);
    if (op.results.empty() || !error_.empty())
      return;
    os << ind << "let " << lhs(op) << " = " << rhs << placement(op) << "\n";
  }

  void writeIf(const Operation &op, int depth, std::ostream &os) {
    std::string ind(size_t(depth) * 2, ' ');
    std::string cond = name(op.operands[0]);
    std::ostringstream t, e;
    writeOps(*op.regions[0], depth + 1, t);
    writeOps(*op.regions[1], depth + 1, e);
    os << ind << "let " << lhs(op) << " = if " << cond << " {\n"
       << t.str() << ind << "} else {\n" << e.str() << ind << "}\n";
  }

  void writeWhile(const Operation &op, int depth, std::ostream &os) {
    std::string ind(size_t(depth) * 2, ' ');
    const Region &cond = *op.regions[0], &body = *op.regions[1];
    // Carried names: the body's arguments; the condition's arguments get the
    // same names in the helper function.
    std::vector<std::string> carry;
    std::string carries;
    for (size_t i = 0; i < body.args.size(); ++i) {
      carry.push_back(bind(body.args[i].get()));
      carries += (i ? ", " : "") + carry.back() + " = " + name(op.operands[i]);
    }
    std::string test = outlineCondition(cond, carry);
    std::ostringstream b;
    writeOps(body, depth + 1, b);
    os << ind << "let " << lhs(op) << " = while " << test << " carry (" << carries << ") {\n"
       << b.str() << ind << "}\n";
  }

  // The loop condition as a call of a helper function over the carried
  // values (and any outer values it reads).
  std::string outlineCondition(const Region &cond, const std::vector<std::string> &carry) {
    std::vector<const Value *> free;
    std::set<const Value *> defined;
    for (auto &a : cond.args)
      defined.insert(a.get());
    collectFree(cond, defined, free);
    std::string fname = globalName("cond");
    auto savedNames = names_;
    auto savedUsed = used_;
    std::vector<std::string> outerNames;
    for (const Value *v : free)
      outerNames.push_back(name(v));
    names_.clear();
    used_.clear();
    std::ostringstream f;
    f << "fn " << fname << "(";
    for (size_t i = 0; i < cond.args.size(); ++i) {
      names_[cond.args[i].get()] = carry[i];
      used_.insert(carry[i]);
      f << (i ? ", " : "") << carry[i] << ": " << cond.args[i]->type.str();
    }
    for (size_t i = 0; i < free.size(); ++i) {
      std::string n = bind(free[i]);
      f << (cond.args.size() + i ? ", " : "") << n << ": " << free[i]->type.str();
    }
    f << ") -> bool {\n";
    for (auto &op : cond.ops) {
      if (op->kind == OpKind::Yield) {
        f << "  return " << names(op->operands) << "\n";
        continue;
      }
      writeOp(*op, 1, f);
    }
    f << "}\n";
    helpers_.push_back(f.str());
    names_ = std::move(savedNames);
    used_ = std::move(savedUsed);
    std::string call = fname + "(";
    for (size_t i = 0; i < carry.size(); ++i)
      call += (i ? ", " : "") + carry[i];
    for (size_t i = 0; i < outerNames.size(); ++i)
      call += (carry.size() + i ? ", " : "") + outerNames[i];
    return call + ")";
  }

  void collectFree(const Region &r, std::set<const Value *> &defined,
                   std::vector<const Value *> &free) {
    for (auto &a : r.args)
      defined.insert(a.get());
    for (auto &op : r.ops) {
      for (Value *v : op->operands)
        if (!defined.count(v) && std::find(free.begin(), free.end(), v) == free.end())
          free.push_back(v);
      for (auto &sub : op->regions)
        collectFree(*sub, defined, free);
      for (auto &res : op->results)
        defined.insert(res.get());
    }
  }

  // --- expressions ----------------------------------------------------------

  std::string expression(const Operation &op) {
    if (const char *sym = operatorOf(op.kind))
      return name(op.operands[0]) + " " + sym + " " + name(op.operands[1]);
    switch (op.kind) {
    case OpKind::Not:
      return "!" + name(op.operands[0]);
    case OpKind::Constant:
      return constant(op);
    case OpKind::Global:
      return op.stringAttr("name");
    case OpKind::Call:
      return op.stringAttr("callee") + "(" + names(op.operands) + ")";
    case OpKind::Slice:
      return slice(op);
    default:
      break;
    }
    const stdlib::OpInfo &info = stdlib::opInfo(op.kind);
    if (!info.callName) {
      fail(std::string("operation '") + opName(op.kind) + "' has no mdl source form");
      return "";
    }
    return call(op, info);
  }

  std::string constant(const Operation &op) {
    const DenseData &d = op.attr("value")->asDense();
    if (auto v = splatValue(d))
      return "full(" + d.type.str() + ", " + *v + ")";
    std::string err;
    WeightWriter *w = o_.weights ? o_.weights(err) : nullptr;
    if (!w) {
      fail("cannot store a constant in the weight file: " + err);
      return "";
    }
    std::string base = "c";
    if (o_.names) {
      auto it = o_.names->find(op.result());
      if (it != o_.names->end())
        base = mdlIdentifier(it->second);
    }
    std::string pname = globalName(base);
    std::string key = pname;
    for (int i = 2; w->has(key); ++i)
      key = pname + "#" + std::to_string(i);
    w->begin(key, d.type.dtype, d.type.sizes());
    w->write(d.bytes.data(), d.bytes.size());
    if (!w->end(err)) {
      fail(err);
      return "";
    }
    moved_.push_back("param " + pname + " : " + d.type.str() + " = load(" +
                     quote(o_.weightsSpelling) + ", " + quote(key) + ")\n");
    return pname;
  }

  std::string slice(const Operation &op) {
    const auto &start = op.intListAttr("start"), &stop = op.intListAttr("stop"),
               &step = op.intListAttr("step"), &drop = op.intListAttr("drop");
    std::string s = name(op.operands[0]) + "[";
    for (size_t d = 0; d < start.size(); ++d) {
      if (d)
        s += ", ";
      if (std::find(drop.begin(), drop.end(), int64_t(d)) != drop.end()) {
        s += std::to_string(start[d]);
        continue;
      }
      if (start[d] != INT64_MAX)
        s += std::to_string(start[d]);
      s += ":";
      if (stop[d] != INT64_MAX)
        s += std::to_string(stop[d]);
      if (step[d] != 1)
        s += ":" + std::to_string(step[d]);
    }
    return s + "]";
  }

  std::string attrValue(const Attribute &a, ParamKind k) {
    switch (a.kind()) {
    case Attribute::Kind::Int: return std::to_string(a.asInt());
    case Attribute::Kind::Float: return formatReal(a.asFloat());
    case Attribute::Kind::Bool: return a.asBool() ? "true" : "false";
    case Attribute::Kind::String: return quote(a.asString());
    case Attribute::Kind::DType: return dtypeName(a.asDType());
    case Attribute::Kind::Type: return a.asType().str();
    case Attribute::Kind::Symbol: return a.asSymbol();
    case Attribute::Kind::DimList: {
      std::string s = "[";
      for (size_t i = 0; i < a.asDimList().size(); ++i)
        s += (i ? ", " : "") + a.asDimList()[i].str();
      return s + "]";
    }
    case Attribute::Kind::IntList: {
      const auto &v = a.asIntList();
      if (k != ParamKind::IntPairs)
        return intList(v);
      std::string s = "[";
      for (size_t i = 0; i + 1 < v.size(); i += 2)
        s += (i ? ", " : "") + intList({v[i], v[i + 1]});
      return s + "]";
    }
    default:
      fail("an attribute has no mdl source form");
      return "";
    }
  }

  std::string call(const Operation &op, const stdlib::OpInfo &info) {
    size_t tensors = 0, lists = 0;
    for (const stdlib::ParamSpec &p : info.params) {
      tensors += p.kind == ParamKind::Tensor;
      lists += p.kind == ParamKind::TensorList || p.kind == ParamKind::Variadic;
    }
    size_t perList = lists ? (op.operands.size() - tensors) / lists : 0;
    std::string s = std::string(info.callName) + "(";
    size_t next = 0;
    bool first = true;
    auto sep = [&] {
      std::string r = first ? "" : ", ";
      first = false;
      return r;
    };
    for (const stdlib::ParamSpec &p : info.params) {
      if (p.kind == ParamKind::Tensor) {
        s += sep() + name(op.operands[next++]);
      } else if (p.kind == ParamKind::TensorList || p.kind == ParamKind::Variadic) {
        std::string l;
        for (size_t i = 0; i < perList; ++i)
          l += (i ? ", " : "") + name(op.operands[next++]);
        s += sep() + (p.kind == ParamKind::Variadic ? l : "[" + l + "]");
      } else if (const Attribute *a = op.attr(p.name)) {
        s += sep() + p.name + " = " + attrValue(*a, p.kind);
      }
    }
    return s + ")";
  }

  const Module &m_;
  const MdlWriteOptions &o_;
  std::set<std::string> globals_, used_, allLocals_;
  std::unordered_map<const Value *, std::string> names_;
  std::vector<std::string> moved_, helpers_;
  std::string error_;
};

} // namespace

bool writeMdl(const Module &m, std::ostream &os, const MdlWriteOptions &opts, std::string &error) {
  return Writer(m, opts).run(os, error);
}

} // namespace mdl::frontend::hlo
