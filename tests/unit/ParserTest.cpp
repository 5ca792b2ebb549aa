// Tests of the parser (frontend/Parser.h): the AST built for every
// construct, precedence, the layout rules, locations, the wording of syntax
// errors, and robustness against hostile input (random bytes, truncation,
// deep nesting, large files).
//
// Most shape checks compare an S-expression dump of the AST, e.g.
// `(+ a (* b c))`, which keeps the expected trees readable.
#include "frontend/Parser.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace mdl;
using namespace mdl::frontend;

namespace {

// --- AST dump ----------------------------------------------------------------

const char *opName(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or:
    return "||";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::MatMul:
    return "@";
  }
  return "?";
}

std::string dump(const TypeNode &t) {
  std::string s = ir::dtypeName(t.dtype);
  if (!t.hasShape)
    return s;
  s += "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i)
      s += ",";
    s += t.dims[i].size ? std::to_string(*t.dims[i].size) : t.dims[i].sym;
  }
  return s + "]";
}

std::string dump(const Expr *e);
std::string dump(const Stmt &s);

std::string dump(const Block &b) {
  std::string s = "{";
  for (size_t i = 0; i < b.stmts.size(); ++i)
    s += (i ? "; " : "") + dump(*b.stmts[i]);
  return s + "}";
}

std::string dumpArgs(const std::vector<Arg> &args) {
  std::string s;
  for (const Arg &a : args)
    s += " " + (a.keyword ? a.keyword->name + "=" : "") + dump(a.value.get());
  return s;
}

std::string dumpCarries(const std::vector<Carry> &cs) {
  if (cs.empty())
    return "";
  std::string s = " (carry";
  for (const Carry &c : cs)
    s += " " + c.name.name + "=" + dump(c.init.get());
  return s + ")";
}

std::string dump(const Expr *e) {
  if (!e)
    return "_";
  switch (e->kind) {
  case ExprKind::IntLit:
    return std::to_string(static_cast<const IntLit *>(e)->value);
  case ExprKind::FloatLit: {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf,
                           static_cast<const FloatLit *>(e)->value);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".einf") == std::string::npos)
      s += ".";
    return s;
  }
  case ExprKind::BoolLit:
    return static_cast<const BoolLit *>(e)->value ? "true" : "false";
  case ExprKind::StringLit:
    return "\"" + static_cast<const StringLit *>(e)->value + "\"";
  case ExprKind::Name:
    return static_cast<const NameExpr *>(e)->name;
  case ExprKind::TensorLit: {
    std::string s = "[";
    const auto &els = static_cast<const TensorLit *>(e)->elements;
    for (size_t i = 0; i < els.size(); ++i)
      s += (i ? " " : "") + dump(els[i].get());
    return s + "]";
  }
  case ExprKind::Type:
    return dump(static_cast<const TypeExpr *>(e)->type);
  case ExprKind::Unary: {
    auto *u = static_cast<const UnaryExpr *>(e);
    return std::string("(") + (u->op == UnaryOp::Neg ? "neg " : "not ") +
           dump(u->operand.get()) + ")";
  }
  case ExprKind::Binary: {
    auto *b = static_cast<const BinaryExpr *>(e);
    return std::string("(") + opName(b->op) + " " + dump(b->lhs.get()) + " " +
           dump(b->rhs.get()) + ")";
  }
  case ExprKind::Call: {
    auto *c = static_cast<const CallExpr *>(e);
    return "(call " + c->callee.name + dumpArgs(c->args) + ")";
  }
  case ExprKind::Index: {
    auto *x = static_cast<const IndexExpr *>(e);
    std::string s = "(index " + dump(x->base.get());
    for (const IndexItem &it : x->items) {
      if (it.kind == IndexItem::Kind::Single)
        s += " " + dump(it.index.get());
      else if (it.kind == IndexItem::Kind::Ellipsis)
        s += " ...";
      else
        s += " (: " + dump(it.start.get()) + " " + dump(it.stop.get()) + " " +
             dump(it.step.get()) + ")";
    }
    return s + ")";
  }
  case ExprKind::If: {
    auto *i = static_cast<const IfExpr *>(e);
    return "(if " + dump(i->cond.get()) + " " + dump(i->thenBlock) +
           (i->elseBlock ? " " + dump(*i->elseBlock) : "") + ")";
  }
  case ExprKind::For: {
    auto *f = static_cast<const ForExpr *>(e);
    return "(for " + f->var.name + " " + dump(f->lo.get()) + " " +
           dump(f->hi.get()) + dumpCarries(f->carries) + " " + dump(f->body) +
           ")";
  }
  case ExprKind::While: {
    auto *w = static_cast<const WhileExpr *>(e);
    return "(while " + dump(w->cond.get()) + dumpCarries(w->carries) + " " +
           dump(w->body) + ")";
  }
  case ExprKind::On: {
    auto *o = static_cast<const OnExpr *>(e);
    return "(on " + dump(o->expr.get()) + " " + o->device.name + ")";
  }
  }
  return "?";
}

std::string dump(const Stmt &s) {
  switch (s.kind) {
  case StmtKind::Let: {
    auto &l = static_cast<const LetStmt &>(s);
    std::string names;
    for (size_t i = 0; i < l.names.size(); ++i)
      names += (i ? " " : "") + l.names[i].name;
    if (l.destructure)
      names = "(" + names + ")";
    return "(let " + names + (l.annotation ? " : " + dump(*l.annotation) : "") +
           " " + dump(l.value.get()) + ")";
  }
  case StmtKind::On: {
    auto &o = static_cast<const OnStmt &>(s);
    return "(on " + o.device.name + " " + dump(o.body) + ")";
  }
  case StmtKind::Return:
  case StmtKind::Yield: {
    auto &v = static_cast<const ValuesStmt &>(s);
    std::string r = s.kind == StmtKind::Return ? "(return" : "(yield";
    for (const auto &e : v.values)
      r += " " + dump(e.get());
    return r + ")";
  }
  case StmtKind::Expr:
    return dump(static_cast<const ExprStmt &>(s).expr.get());
  }
  return "?";
}

std::string dump(const Item &item) {
  switch (item.kind) {
  case ItemKind::Import:
    return "(import \"" + static_cast<const ImportItem &>(item).path + "\")";
  case ItemKind::Device: {
    auto &d = static_cast<const DeviceItem &>(item);
    return "(device " + d.name.name + " " + d.deviceKind.name +
           dumpArgs(d.args) + ")";
  }
  case ItemKind::Const:
    return "(const " + item.name.name + " " +
           dump(static_cast<const ConstItem &>(item).value.get()) + ")";
  case ItemKind::Param: {
    auto &p = static_cast<const ParamItem &>(item);
    return "(param " + p.name.name + " " + dump(p.type) +
           (p.device ? " on " + p.device->name : "") + " " +
           dump(p.init.get()) + ")";
  }
  case ItemKind::Fn: {
    auto &f = static_cast<const FnItem &>(item);
    std::string s = "(fn " + f.name.name + " (";
    for (size_t i = 0; i < f.params.size(); ++i)
      s +=
          (i ? " " : "") + f.params[i].name.name + ":" + dump(f.params[i].type);
    s += ")";
    if (f.hasResults) {
      s += " ->";
      for (const TypeNode &t : f.results)
        s += " " + dump(t);
    }
    return s + " " + dump(f.body) + ")";
  }
  }
  return "?";
}

std::string dump(const SourceFile &f) {
  std::string s;
  for (size_t i = 0; i < f.items.size(); ++i)
    s += (i ? "\n" : "") + dump(*f.items[i]);
  return s;
}

// --- Helpers -----------------------------------------------------------------

struct Parsed {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  const SourceBuffer *buf = nullptr;
  std::unique_ptr<SourceFile> file;
  std::vector<ir::Diagnostic> diags;
};

Parsed parse(const std::string &text, const std::string &name = "test.mdl") {
  Parsed p;
  p.buf = p.sources->addBuffer(name, text);
  ir::DiagnosticEngine diags;
  p.file = parseSource(*p.buf, diags);
  diags.flush();
  p.diags = diags.all();
  return p;
}

/// The dump of a source that must parse.
std::string ok(const std::string &text) {
  Parsed p = parse(text);
  std::string errors;
  for (const auto &d : p.diags)
    errors += d.loc.str() + ": " + d.message + "\n";
  EXPECT_TRUE(p.file) << "unexpected errors for:\n" << text << "\n" << errors;
  EXPECT_TRUE(p.diags.empty()) << errors;
  return p.file ? dump(*p.file) : "<error>";
}

/// The dump of the single statement of `fn f() { STMT }`.
std::string stmt(const std::string &body) {
  Parsed p = parse("fn f() {\n" + body + "\n}\n");
  if (!p.file || p.file->items.size() != 1) {
    std::string errors;
    for (const auto &d : p.diags)
      errors += d.loc.str() + ": " + d.message + "\n";
    ADD_FAILURE() << "no parse for: " << body << "\n" << errors;
    return "<error>";
  }
  auto &fn = static_cast<const FnItem &>(*p.file->items[0]);
  std::string s;
  for (size_t i = 0; i < fn.body.stmts.size(); ++i)
    s += (i ? "; " : "") + dump(*fn.body.stmts[i]);
  return s;
}

/// The dump of an expression (as the value of `return`).
std::string expr(const std::string &e) {
  std::string s = stmt("return " + e);
  if (s.rfind("(return ", 0) == 0)
    return s.substr(8, s.size() - 9);
  return s;
}

/// The diagnostics of a source that must fail; all must be E0001.
std::vector<ir::Diagnostic> errors(const std::string &text) {
  Parsed p = parse(text);
  EXPECT_FALSE(p.file) << "expected a syntax error in:\n" << text;
  EXPECT_FALSE(p.diags.empty());
  for (const auto &d : p.diags) {
    EXPECT_EQ(d.code, "E0001") << d.message;
    EXPECT_GE(d.loc.line, 1u) << d.message;
  }
  return p.diags;
}

/// The first error's message for a source that must fail.
std::string firstError(const std::string &text) {
  auto d = errors(text);
  return d.empty() ? "" : d[0].message;
}

std::string conformanceDir() {
  if (const char *env = std::getenv("MDL_CONFORMANCE_DIR"))
    return env;
#ifdef MDL_CONFORMANCE_DIR
  return MDL_CONFORMANCE_DIR;
#else
  return "/work/shared/conformance";
#endif
}

std::vector<std::filesystem::path> mdlFiles(const std::string &sub) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto &e :
       std::filesystem::directory_iterator(conformanceDir() + "/" + sub, ec))
    if (e.path().extension() == ".mdl")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Parses with no expectation except that it returns, and that a null
/// result comes with at least one E0001.
void parseAnything(const std::string &text) {
  Parsed p = parse(text, "fuzz.mdl");
  if (!p.file) {
    ASSERT_FALSE(p.diags.empty());
  }
  for (const auto &d : p.diags) {
    ASSERT_EQ(d.code, "E0001");
    ASSERT_GE(d.loc.line, 1u);
  }
  ASSERT_LE(p.diags.size(), static_cast<size_t>(kMaxSyntaxErrors));
}

const Expr *returnValue(const SourceFile &f, size_t item = 0) {
  auto &fn = static_cast<const FnItem &>(*f.items.at(item));
  auto &ret = static_cast<const ValuesStmt &>(*fn.body.stmts.back());
  return ret.values.at(0).get();
}

// --- Items and types ---------------------------------------------------------

TEST(ParserItems, EveryItemForm) {
  EXPECT_EQ(ok("import \"layers.mdl\""), "(import \"layers.mdl\")");
  EXPECT_EQ(ok("device gpu0 = hip(0)"), "(device gpu0 hip 0)");
  EXPECT_EQ(ok("device host = cpu()"), "(device host cpu)");
  EXPECT_EQ(ok("device host = cpu(threads = 8)"),
            "(device host cpu threads=8)");
  EXPECT_EQ(
      ok("device sec = mpc(parties = 3, protocol = \"rep3\", frac_bits = 18)"),
      "(device sec mpc parties=3 protocol=\"rep3\" frac_bits=18)");
  EXPECT_EQ(ok("const scale = 0.5"), "(const scale 0.5)");
  EXPECT_EQ(ok("const t = [[1.0, 2.0], [3.0, 4.0]] * scale"),
            "(const t (* [[1. 2.] [3. 4.]] scale))");
  EXPECT_EQ(ok("param w1 : f32[784, 256] = load(\"mlp.safetensors\", \"w1\")"),
            "(param w1 f32[784,256] (call load \"mlp.safetensors\" \"w1\"))");
  EXPECT_EQ(ok("param b : f32[4] on gpu0 = zeros"),
            "(param b f32[4] on gpu0 zeros)");
  EXPECT_EQ(ok("param s : f32 = fill(0.5)"), "(param s f32 (call fill 0.5))");
  EXPECT_EQ(ok("param w : f32[2, 2] = random_normal(seed = 1, std = 0.05)"),
            "(param w f32[2,2] (call random_normal seed=1 std=0.05))");
  EXPECT_EQ(ok("param t : i64[2] = [1, 2]"), "(param t i64[2] [1 2])");
  EXPECT_EQ(ok("fn f() {}"), "(fn f () {})");
  EXPECT_EQ(ok("fn f(x: f32[B, 784], n: i64) -> f32[B, 10] { return x }"),
            "(fn f (x:f32[B,784] n:i64) -> f32[B,10] {(return x)})");
  EXPECT_EQ(ok("fn f(x: f32) -> (f32, i64[3]) { return x, 1 }"),
            "(fn f (x:f32) -> f32 i64[3] {(return x 1)})");
}

TEST(ParserItems, ItemKindsNamesAndLocations) {
  Parsed p = parse("device gpu0 = hip(0)\n\nparam w : f32[4] on gpu0 = zeros\n"
                   "fn main(x: bf16[2]) -> f32 {\n  return 1.0\n}\n");
  ASSERT_TRUE(p.file);
  ASSERT_EQ(p.file->items.size(), 3u);
  EXPECT_EQ(p.file->path, "test.mdl");
  EXPECT_EQ(p.file->fileId, p.buf->fileId);
  auto &dev = static_cast<const DeviceItem &>(*p.file->items[0]);
  EXPECT_EQ(dev.kind, ItemKind::Device);
  EXPECT_EQ(dev.name.name, "gpu0");
  EXPECT_EQ(dev.name.loc.line, 1u);
  EXPECT_EQ(dev.name.loc.col, 8u);
  EXPECT_EQ(dev.name.loc.len, 4u);
  EXPECT_EQ(dev.deviceKind.loc.col, 15u);
  EXPECT_EQ(dev.loc.col, 1u);
  EXPECT_EQ(dev.loc.len, 20u);
  auto &param = static_cast<const ParamItem &>(*p.file->items[1]);
  EXPECT_EQ(param.kind, ItemKind::Param);
  EXPECT_EQ(param.loc.line, 3u);
  EXPECT_EQ(param.type.dtype, ir::DType::F32);
  EXPECT_TRUE(param.type.hasShape);
  ASSERT_EQ(param.type.dims.size(), 1u);
  EXPECT_EQ(param.type.dims[0].size, 4);
  EXPECT_EQ(param.type.dims[0].loc.col, 15u);
  EXPECT_EQ(param.type.loc.col, 11u);
  EXPECT_EQ(param.type.loc.len, 6u); // f32[4]
  ASSERT_TRUE(param.device);
  EXPECT_EQ(param.device->loc.col, 21u);
  auto &fn = static_cast<const FnItem &>(*p.file->items[2]);
  EXPECT_EQ(fn.kind, ItemKind::Fn);
  EXPECT_EQ(fn.name.name, "main");
  EXPECT_EQ(fn.loc.line, 4u);
  EXPECT_EQ(fn.loc.len, 28u); // the whole first line
  EXPECT_EQ(fn.params[0].type.dtype, ir::DType::BF16);
  EXPECT_TRUE(fn.hasResults);
  EXPECT_FALSE(fn.results[0].hasShape);
  EXPECT_EQ(fn.body.open.line, 4u);
  EXPECT_EQ(fn.body.open.col, 28u);
  EXPECT_EQ(fn.body.close.line, 6u);
  EXPECT_EQ(fn.body.close.col, 1u);
  EXPECT_EQ(fn.body.stmts[0]->loc.line, 5u);
  EXPECT_EQ(fn.body.stmts[0]->loc.col, 3u);
}

TEST(ParserItems, AllElementTypesAndSymbolicDims) {
  EXPECT_EQ(ok("fn f(a: bool, b: i8, c: u8, d: i32, e: i64, g: f16, h: bf16, "
               "i: f32, j: f64[N, 3, M]) {}"),
            "(fn f (a:bool b:i8 c:u8 d:i32 e:i64 g:f16 h:bf16 i:f32 "
            "j:f64[N,3,M]) {})");
  Parsed p = parse("fn f(x: f32[B, 4]) {}");
  ASSERT_TRUE(p.file);
  auto &fn = static_cast<const FnItem &>(*p.file->items[0]);
  EXPECT_FALSE(fn.hasResults);
  EXPECT_EQ(fn.params[0].type.dims[0].sym, "B");
  EXPECT_FALSE(fn.params[0].type.dims[0].size);
  EXPECT_EQ(fn.params[0].type.dims[1].size, 4);
}

TEST(ParserItems, TypesInArgumentPosition) {
  EXPECT_EQ(expr("zeros(f32[3, 4])"), "(call zeros f32[3,4])");
  EXPECT_EQ(expr("cast(x, f16)"), "(call cast x f16)");
  EXPECT_EQ(expr("full(f32[B, 2], -1e9)"), "(call full f32[B,2] (neg 1e+09))");
  Parsed p = parse("fn f() { return cast(x, f16) }");
  ASSERT_TRUE(p.file);
  auto *call = static_cast<const CallExpr *>(returnValue(*p.file));
  ASSERT_EQ(call->args[1].value->kind, ExprKind::Type);
  auto *t = static_cast<const TypeExpr *>(call->args[1].value.get());
  EXPECT_EQ(t->type.dtype, ir::DType::F16);
  EXPECT_FALSE(t->type.hasShape);
  EXPECT_EQ(t->loc.col, 25u);
  EXPECT_EQ(t->loc.len, 3u);
}

// --- Statements --------------------------------------------------------------

TEST(ParserStatements, EveryStatementForm) {
  EXPECT_EQ(stmt("let x = 1"), "(let x 1)");
  EXPECT_EQ(stmt("let x : f32[4] = y"), "(let x : f32[4] y)");
  EXPECT_EQ(stmt("let (a, b) = f(x)"), "(let (a b) (call f x))");
  EXPECT_EQ(stmt("let (a) = f(x)"), "(let (a) (call f x))");
  EXPECT_EQ(stmt("on gpu0 {\n  let h = relu(x)\n}"),
            "(on gpu0 {(let h (call relu x))})");
  EXPECT_EQ(stmt("return a, b"), "(return a b)");
  EXPECT_EQ(stmt("return"), "(return)");
  EXPECT_EQ(stmt("yield v * 0.5, k + 1"), "(yield (* v 0.5) (+ k 1))");
  EXPECT_EQ(stmt("print(x, y)"), "(call print x y)");
}

TEST(ParserStatements, LetKindsAndDestructure) {
  Parsed p = parse("fn f() {\n  let (m, s) = stats(x)\n  let y : f32 = m\n}");
  ASSERT_TRUE(p.file);
  auto &fn = static_cast<const FnItem &>(*p.file->items[0]);
  ASSERT_EQ(fn.body.stmts.size(), 2u);
  auto &l0 = static_cast<const LetStmt &>(*fn.body.stmts[0]);
  EXPECT_EQ(l0.kind, StmtKind::Let);
  EXPECT_TRUE(l0.destructure);
  ASSERT_EQ(l0.names.size(), 2u);
  EXPECT_EQ(l0.names[1].name, "s");
  EXPECT_EQ(l0.names[1].loc.col, 11u);
  EXPECT_FALSE(l0.annotation);
  auto &l1 = static_cast<const LetStmt &>(*fn.body.stmts[1]);
  EXPECT_FALSE(l1.destructure);
  ASSERT_TRUE(l1.annotation);
  EXPECT_EQ(l1.annotation->dtype, ir::DType::F32);
}

TEST(ParserStatements, ControlFlowExpressions) {
  EXPECT_EQ(stmt("let y = if n > 0 { yield x * 2.0 } else { yield x }"),
            "(let y (if (> n 0) {(yield (* x 2.))} {(yield x)}))");
  EXPECT_EQ(stmt("if c { print(x) }"), "(if c {(call print x)})");
  EXPECT_EQ(stmt("let s = for i in 0..n carry (acc = zeros(f32[4])) {\n"
                 "  yield acc + x[i]\n}"),
            "(let s (for i 0 n (carry acc=(call zeros f32[4])) "
            "{(yield (+ acc (index x i)))}))");
  EXPECT_EQ(stmt("for i in 0..3 { print(i) }"), "(for i 0 3 {(call print i)})");
  EXPECT_EQ(stmt("let (v, k) = while k < 10 carry (v = x, k = 0) {\n"
                 "  yield v * 0.5, k + 1\n}"),
            "(let (v k) (while (< k 10) (carry v=x k=0) "
            "{(yield (* v 0.5) (+ k 1))}))");
  EXPECT_EQ(stmt("let r = for i in a - 1..b + 1 { yield i }"),
            "(let r (for i (- a 1) (+ b 1) {(yield i)}))");
}

TEST(ParserStatements, ElseIfChainsNest) {
  Parsed p = parse("fn f() {\n  return if a { yield 1 } else if b { yield 2 }"
                   " else { yield 3 }\n}");
  ASSERT_TRUE(p.file);
  EXPECT_EQ(dump(*p.file),
            "(fn f () {(return (if a {(yield 1)} {(yield (if b {(yield 2)} "
            "{(yield 3)}))}))})");
  auto *outer = static_cast<const IfExpr *>(returnValue(*p.file));
  ASSERT_TRUE(outer->elseBlock);
  ASSERT_EQ(outer->elseBlock->stmts.size(), 1u);
  auto &y = static_cast<const ValuesStmt &>(*outer->elseBlock->stmts[0]);
  EXPECT_EQ(y.kind, StmtKind::Yield);
  ASSERT_EQ(y.values[0]->kind, ExprKind::If);
  // The synthesized block spans the nested if.
  EXPECT_EQ(outer->elseBlock->open.col, 32u);
  EXPECT_EQ(outer->elseBlock->close.col, 64u);
}

// --- Expressions -------------------------------------------------------------

TEST(ParserExpressions, Precedence) {
  struct Case {
    const char *src, *tree;
  } cases[] = {
      {"a + b * c", "(+ a (* b c))"},
      {"a * b + c", "(+ (* a b) c)"},
      {"a - b - c", "(- (- a b) c)"},
      {"a / b % c * d @ e", "(@ (* (% (/ a b) c) d) e)"},
      {"x @ w + b", "(+ (@ x w) b)"},
      {"-a * b", "(* (neg a) b)"},
      {"-x[0]", "(neg (index x 0))"},
      {"- - a", "(neg (neg a))"},
      {"!a && b || c", "(|| (&& (not a) b) c)"},
      {"a || b && c", "(|| a (&& b c))"},
      {"a == b && c < d", "(&& (== a b) (< c d))"},
      {"a + 1 < b * 2", "(< (+ a 1) (* b 2))"},
      {"a != b", "(!= a b)"},
      {"a <= b || a >= b", "(|| (<= a b) (>= a b))"},
      {"(a < b) < c", "(< (< a b) c)"},
      {"a < (b < c)", "(< a (< b c))"},
      {"(a + b) * c", "(* (+ a b) c)"},
      {"s + 1.0 on host", "(on (+ s 1.) host)"},
      {"h @ w2 on sec", "(on (@ h w2) sec)"},
      {"a || b on d", "(on (|| a b) d)"},
      {"f(a, k = v)[1]", "(index (call f a k=v) 1)"},
      {"x[1][2]", "(index (index x 1) 2)"},
      {"[[1.0, 2.0], [3.0, 4.0]]", "[[1. 2.] [3. 4.]]"},
      {"[1, 2, 3] * 3 + 1", "(+ (* [1 2 3] 3) 1)"},
      {"[]", "[]"},
      {"[1, 2,]", "[1 2]"},
      {"if c { yield 1 } else { yield 2 } + 1",
       "(+ (if c {(yield 1)} {(yield 2)}) 1)"},
      {"true && !false", "(&& true (not false))"},
      {"f()", "(call f)"},
      {"relu(conv2d(x, w, stride = 1, padding = 1))",
       "(call relu (call conv2d x w stride=1 padding=1))"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(expr(c.src), c.tree) << c.src;
}

TEST(ParserExpressions, OnBindsLoosestInLet) {
  EXPECT_EQ(stmt("let y = s + 1.0 on host"), "(let y (on (+ s 1.) host))");
  EXPECT_EQ(stmt("let h = relu(x @ w1) on gpu0"),
            "(let h (on (call relu (@ x w1)) gpu0))");
}

TEST(ParserExpressions, Indexing) {
  EXPECT_EQ(expr("x[i]"), "(index x i)");
  EXPECT_EQ(expr("x[a:b]"), "(index x (: a b _))");
  EXPECT_EQ(expr("x[:, 1:3]"), "(index x (: _ _ _) (: 1 3 _))");
  EXPECT_EQ(expr("x[..., 0]"), "(index x ... 0)");
  EXPECT_EQ(expr("x[::2]"), "(index x (: _ _ 2))");
  EXPECT_EQ(expr("x[1::2]"), "(index x (: 1 _ 2))");
  EXPECT_EQ(expr("x[:3:]"), "(index x (: _ 3 _))");
  EXPECT_EQ(expr("x[2 - i]"), "(index x (- 2 i))");
  EXPECT_EQ(expr("x[-1]"), "(index x (neg 1))");
  EXPECT_EQ(expr("x[:, :, 0]"), "(index x (: _ _ _) (: _ _ _) 0)");
  Parsed p = parse("fn f() { return x[1:3, ...] }");
  ASSERT_TRUE(p.file);
  auto *ix = static_cast<const IndexExpr *>(returnValue(*p.file));
  ASSERT_EQ(ix->items.size(), 2u);
  EXPECT_EQ(ix->items[0].kind, IndexItem::Kind::Slice);
  EXPECT_EQ(ix->items[0].loc.col, 19u);
  EXPECT_EQ(ix->items[0].loc.len, 3u);
  EXPECT_EQ(ix->items[1].kind, IndexItem::Kind::Ellipsis);
  EXPECT_EQ(ix->items[1].loc.col, 24u);
}

TEST(ParserExpressions, CallsHaveNameCalleesAndKeywords) {
  Parsed p = parse("fn f() { return softmax(logits, axis = 1) }");
  ASSERT_TRUE(p.file);
  auto *call = static_cast<const CallExpr *>(returnValue(*p.file));
  ASSERT_EQ(call->kind, ExprKind::Call);
  EXPECT_EQ(call->callee.name, "softmax");
  EXPECT_EQ(call->callee.loc.col, 17u);
  ASSERT_EQ(call->args.size(), 2u);
  EXPECT_FALSE(call->args[0].keyword);
  ASSERT_TRUE(call->args[1].keyword);
  EXPECT_EQ(call->args[1].keyword->name, "axis");
  EXPECT_EQ(call->args[1].keyword->loc.col, 33u);
  EXPECT_EQ(call->close.col, 41u);
  EXPECT_EQ(call->loc.col, 17u);
  EXPECT_EQ(call->loc.len, 25u);
}

TEST(ParserExpressions, Literals) {
  EXPECT_EQ(expr("42"), "42");
  EXPECT_EQ(expr("1.5"), "1.5");
  EXPECT_EQ(expr("1e-3"), "0.001");
  EXPECT_EQ(expr("2."), "2.");
  EXPECT_EQ(expr("1.5e+2"), "150.");
  EXPECT_EQ(expr("1E2"), "100.");
  EXPECT_EQ(expr("1e-400"), "0."); // underflows to zero, like NumPy
  EXPECT_EQ(expr("007"), "7");
  EXPECT_EQ(expr("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(expr("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(expr("true"), "true");
  EXPECT_EQ(expr("false"), "false");
  EXPECT_EQ(expr("\"a\\\"b\\\\c\\nd\""), "\"a\"b\\c\nd\"");
  Parsed p = parse("import \"dir\\\\x \\\"q\\\".mdl\"");
  ASSERT_TRUE(p.file);
  auto &imp = static_cast<const ImportItem &>(*p.file->items[0]);
  EXPECT_EQ(imp.path, "dir\\x \"q\".mdl");
  EXPECT_EQ(imp.pathLoc.col, 8u);
}

TEST(ParserExpressions, RangeDotsAreNotFloats) {
  EXPECT_EQ(stmt("let s = for i in 0..3 { yield i }"),
            "(let s (for i 0 3 {(yield i)}))");
  EXPECT_EQ(stmt("let s = for i in 0 .. 3 { yield i }"),
            "(let s (for i 0 3 {(yield i)}))");
  EXPECT_EQ(stmt("let s = for i in 10..n { yield i }"),
            "(let s (for i 10 n {(yield i)}))");
  EXPECT_EQ(stmt("let s = for i in 1.5..2. { yield i }"),
            "(let s (for i 1.5 2. {(yield i)}))");
  Parsed p = parse("fn f() { return for i in 0..3 { yield i } }");
  ASSERT_TRUE(p.file);
  auto *f = static_cast<const ForExpr *>(returnValue(*p.file));
  ASSERT_EQ(f->lo->kind, ExprKind::IntLit);
  ASSERT_EQ(f->hi->kind, ExprKind::IntLit);
  EXPECT_EQ(f->hi->loc.col, 29u);
}

TEST(ParserExpressions, BinaryLocations) {
  Parsed p = parse("fn f() {\n  return a * (b + cc)\n}");
  ASSERT_TRUE(p.file);
  auto *mul = static_cast<const BinaryExpr *>(returnValue(*p.file));
  EXPECT_EQ(mul->op, BinaryOp::Mul);
  EXPECT_EQ(mul->loc.line, 2u);
  EXPECT_EQ(mul->loc.col, 10u);
  EXPECT_EQ(mul->loc.len, 12u); // a * (b + cc)
  EXPECT_EQ(mul->opLoc.col, 12u);
  EXPECT_EQ(mul->opLoc.len, 1u);
  auto *add = static_cast<const BinaryExpr *>(mul->rhs.get());
  EXPECT_EQ(add->loc.col, 15u); // without the parentheses
  EXPECT_EQ(add->loc.len, 6u);
  EXPECT_EQ(add->opLoc.col, 17u);
  EXPECT_EQ(add->rhs->loc.len, 2u);
}

TEST(ParserExpressions, MultiLineNodesSpanTheirFirstLine) {
  Parsed p = parse("fn f() {\n  return foo(a,\n    b)\n}");
  ASSERT_TRUE(p.file);
  auto *call = returnValue(*p.file);
  EXPECT_EQ(call->loc.line, 2u);
  EXPECT_EQ(call->loc.col, 10u);
  EXPECT_EQ(call->loc.len, 6u); // "foo(a,"
  EXPECT_EQ(static_cast<const CallExpr *>(call)->close.line, 3u);
}

TEST(ParserExpressions, ColumnsCountBytes) {
  // "é" is two bytes: the column of `x` counts both.
  Parsed p = parse("fn f() { return g(\"é\", x) }  # naïve comment\n");
  ASSERT_TRUE(p.file);
  auto *call = static_cast<const CallExpr *>(returnValue(*p.file));
  EXPECT_EQ(static_cast<const StringLit *>(call->args[0].value.get())->value,
            "é");
  EXPECT_EQ(call->args[1].value->loc.col, 25u);
}

// --- Layout: newlines, semicolons, braces ------------------------------------

TEST(ParserLayout, NewlineContinuations) {
  EXPECT_EQ(stmt("let x = a +\n  b"), "(let x (+ a b))");
  EXPECT_EQ(stmt("let x = a *\n\n  # comment\n  b"), "(let x (* a b))");
  EXPECT_EQ(stmt("let x = a &&\n b ||\n c"), "(let x (|| (&& a b) c))");
  EXPECT_EQ(stmt("let x = a ==\n b"), "(let x (== a b))");
  EXPECT_EQ(stmt("let x = a on\n d"), "(let x (on a d))");
  EXPECT_EQ(stmt("let x =\n  a"), "(let x a)");
  EXPECT_EQ(stmt("let x = f(a,\n  b)"), "(let x (call f a b))");
  EXPECT_EQ(stmt("let x = f(\n  a\n  ,\n  b\n)"), "(let x (call f a b))");
  EXPECT_EQ(stmt("let x = (a\n + b)"), "(let x (+ a b))");
  EXPECT_EQ(stmt("let x = [1,\n 2,\n]"), "(let x [1 2])");
  EXPECT_EQ(stmt("let x = y[1\n, 2]"), "(let x (index y 1 2))");
  EXPECT_EQ(ok("fn f(\n  x: f32,\n  y: f32\n) ->\n  f32 {\n  return x\n}"),
            "(fn f (x:f32 y:f32) -> f32 {(return x)})");
  EXPECT_EQ(ok("fn f() -> f32\n{\n  return 1.0\n}"),
            "(fn f () -> f32 {(return 1.)})");
  EXPECT_EQ(ok("fn f()\n  -> f32 {\n  return 1.0\n}"),
            "(fn f () -> f32 {(return 1.)})");
  EXPECT_EQ(stmt("let s = for i in 0..n\n    carry (a = 0) {\n  yield a\n}"),
            "(let s (for i 0 n (carry a=0) {(yield a)}))");
  EXPECT_EQ(ok("param w : f32[2] =\n  zeros"), "(param w f32[2] zeros)");
}

TEST(ParserLayout, NewlinesEndStatements) {
  EXPECT_EQ(stmt("let a = x\nlet b = -y"), "(let a x); (let b (neg y))");
  EXPECT_EQ(stmt("let a = x\n[1, 2]"), "(let a x); [1 2]");
  EXPECT_EQ(stmt("let a = x\n(y)"), "(let a x); y");
  EXPECT_EQ(stmt("return\n"), "(return)");
}

TEST(ParserLayout, SemicolonsAndBraces) {
  EXPECT_EQ(stmt("let a = 1; let b = 2;"), "(let a 1); (let b 2)");
  EXPECT_EQ(stmt("let a = 1;; let b = 2"), "(let a 1); (let b 2)");
  EXPECT_EQ(ok("fn f() { let a = 1; return a }"),
            "(fn f () {(let a 1); (return a)})");
  EXPECT_EQ(ok("fn f() { yield x * 2.0 }"), "(fn f () {(yield (* x 2.))})");
  EXPECT_EQ(ok("const a = 1; const b = 2"), "(const a 1)\n(const b 2)");
  EXPECT_EQ(ok("fn f() {\n\n  let a = 1\n\n}\n"), "(fn f () {(let a 1)})");
}

TEST(ParserLayout, ElseOnTheNextLine) {
  EXPECT_EQ(stmt("let y = if c {\n  yield 1\n}\nelse {\n  yield 2\n}"),
            "(let y (if c {(yield 1)} {(yield 2)}))");
  EXPECT_EQ(
      stmt("let y = if c { yield 1 }\n\n  # why\n  else if d { yield 2 }\n"
           "  else { yield 3 }"),
      "(let y (if c {(yield 1)} {(yield (if d {(yield 2)} {(yield 3)}))}))");
  EXPECT_EQ(stmt("let y = if c { yield 1 } else\n { yield 2 }"),
            "(let y (if c {(yield 1)} {(yield 2)}))");
}

TEST(ParserLayout, BlocksInsideParenthesesKeepStatements) {
  // The newlines inside `{}` end statements even though the `{}` sits in
  // the parentheses of a call.
  EXPECT_EQ(
      stmt("print(if c {\n  let t = a\n  yield t\n} else {\n  yield b\n})"),
      "(call print (if c {(let t a); (yield t)} {(yield b)}))");
  EXPECT_EQ(stmt("let s = f([for i in 0..2 carry (a = 0) {\n  let b = a\n"
                 "  yield b + i\n}, 1])"),
            "(let s (call f [(for i 0 2 (carry a=0) {(let b a); (yield (+ b "
            "i))}) 1]))");
}

TEST(ParserLayout, BlankAndCommentLinesAnywhere) {
  EXPECT_EQ(ok(""), "");
  EXPECT_EQ(ok("\n\n# only a comment\n\n"), "");
  EXPECT_EQ(
      ok("# head\n\n\ndevice h = cpu() # trailing\n\n# between\n\n"
         "fn f() {\n  # inside\n\n  let a = 1  # after\n  # end\n}\n\n# tail"),
      "(device h cpu)\n(fn f () {(let a 1)})");
  EXPECT_EQ(ok("fn f() {\r\n  let a = 1\r\n  return a\r\n}\r\n"),
            "(fn f () {(let a 1); (return a)})");
  EXPECT_EQ(ok("\tfn f() {\n\t\treturn 1\n\t}"), "(fn f () {(return 1)})");
}

// --- The conformance programs ------------------------------------------------

TEST(ParserConformance, RunProgramsParse) {
  auto files = mdlFiles("run");
  ASSERT_GE(files.size(), 20u)
      << "conformance programs not found in " << conformanceDir();
  for (const auto &path : files) {
    Parsed p = parse(readFile(path), path.string());
    EXPECT_TRUE(p.file) << path;
    for (const auto &d : p.diags)
      ADD_FAILURE() << path << ":" << d.loc.line << ":" << d.loc.col << ": "
                    << d.message;
    if (p.file) {
      EXPECT_FALSE(p.file->items.empty()) << path;
    }
  }
}

TEST(ParserConformance, ErrorProgramsParseExceptTheSyntaxOne) {
  auto files = mdlFiles("errors");
  ASSERT_FALSE(files.empty());
  for (const auto &path : files) {
    Parsed p = parse(readFile(path), path.string());
    if (path.filename() == "syntax_missing_brace.mdl") {
      EXPECT_FALSE(p.file);
      ASSERT_FALSE(p.diags.empty());
      EXPECT_EQ(p.diags[0].code, "E0001");
      EXPECT_EQ(p.diags[0].loc.line, 4u);
      EXPECT_EQ(p.diags[0].message, "expected an expression, found '}'");
    } else {
      EXPECT_TRUE(p.file) << path;
      EXPECT_TRUE(p.diags.empty()) << path << ": " << p.diags[0].message;
    }
  }
}

TEST(ParserConformance, FirstExampleOfTheLanguageDocument) {
  std::string src =
      R"(# mlp.mdl: a two-layer MLP whose first layer runs on a GPU
device gpu0 = hip(0)
device host = cpu()

param w1 : f32[784, 256] = load("mlp.safetensors", "w1")
param b1 : f32[256]      = load("mlp.safetensors", "b1")
param w2 : f32[256, 10]  = random_normal(seed = 1, std = 0.05)

fn mlp(x: f32[B, 784]) -> f32[B, 10] {
  on gpu0 {
    let h = relu(x @ w1 + b1)
  }
  let logits = h @ w2 on host      # h moves gpu0 -> host: a transfer is inserted
  return softmax(logits, axis = 1)
}

fn main() -> f32[4, 10] {
  return mlp(ones(f32[4, 784]))
}
)";
  Parsed p = parse(src);
  ASSERT_TRUE(p.file);
  ASSERT_EQ(p.file->items.size(), 7u);
  EXPECT_EQ(dump(*p.file->items[5]),
            "(fn mlp (x:f32[B,784]) -> f32[B,10] {(on gpu0 {(let h (call relu "
            "(+ (@ x w1) b1)))}); (let logits (on (@ h w2) host)); (return "
            "(call softmax logits axis=1))})");
}

// --- Syntax errors -----------------------------------------------------------

TEST(ParserErrors, MessagesSayWhatWasExpectedAndFound) {
  EXPECT_EQ(firstError("fn main() { let x = }"),
            "expected an expression, found '}'");
  EXPECT_EQ(firstError("fn main() { let in = 3 }"),
            "expected a name or '(', found 'in' (a reserved word)");
  EXPECT_EQ(firstError("fn main() { let f32 = 3 }"),
            "expected a name or '(', found 'f32' (a reserved word)");
  EXPECT_EQ(firstError("let x = 3"),
            "expected an item (fn, param, const, device or import) or a new "
            "line, found 'let'");
  EXPECT_EQ(firstError("const a = 1 const b = 2"),
            "expected a new line, found 'const'");
  EXPECT_EQ(firstError("fn main() { if x { yield 1 } else }"),
            "expected 'if' or '{', found '}'");
  EXPECT_EQ(firstError("param w : f32[2 = zeros"),
            "expected ',' or ']', found '='");
  EXPECT_EQ(firstError("fn main() { let (a, b) : f32 = 3 }"),
            "expected '=', found ':'");
  EXPECT_EQ(firstError("fn main() {\n  let x = 1 +\n}\n"),
            "expected an expression, found '}'");
}

TEST(ParserErrors, UnclosedBracketsAreNamed) {
  auto d = errors("fn main() {\n  let x = f(a, b\n  let y = 2\n}");
  EXPECT_EQ(d[0].loc.line, 3u);
  EXPECT_EQ(d[0].message, "expected ')' to close '(' at 2:12, found 'let'");
  ASSERT_EQ(d[0].notes.size(), 1u);
  EXPECT_EQ(d[0].notes[0].loc.line, 2u);
  EXPECT_EQ(d[0].notes[0].loc.col, 12u);

  d = errors("fn f(");
  EXPECT_EQ(d[0].message,
            "expected a name or ')' to close '(' at 1:5, found end of file");
  EXPECT_EQ(d[0].loc.col, 6u); // just after the last token

  d = errors("device d = cpu(threads = 2");
  EXPECT_EQ(d[0].message,
            "expected ')' to close '(' at 1:15, found end of file");

  d = errors("fn main() { let x = [1, 2)] }");
  EXPECT_EQ(d[0].message,
            "expected ',' or ']' to close '[' at 1:21, found ')'");

  // A missing `}` is reported where the next item starts, and that item is
  // still parsed on its own.
  d = errors("fn main() {\n  let x = 1\nfn g() {\n  let = 2\n}\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].loc.line, 3u);
  EXPECT_EQ(d[0].message,
            "expected a new line or '}' to close '{' at 1:11, found 'fn'");
  EXPECT_EQ(d[1].loc.line, 4u);
  EXPECT_EQ(d[1].message, "expected a name or '(', found '='");
}

TEST(ParserErrors, NoRawTokenSetsInMessages) {
  const char *bad[] = {"fn",
                       "fn f",
                       "fn f(x",
                       "fn f(x:",
                       "fn f(x: f32",
                       "fn f(x: f32) ->",
                       "fn f() -> (",
                       "fn f() {",
                       "fn f() { let",
                       "fn f() { let x",
                       "fn f() { return 1 +",
                       "fn f() { return x[",
                       "fn f() { return x[1:",
                       "fn f() { return for",
                       "fn f() { return for i in",
                       "fn f() { on",
                       "device",
                       "device d",
                       "device d =",
                       "device d = cpu",
                       "param",
                       "param w :",
                       "param w : f32 on",
                       "import",
                       "const c",
                       "fn f() { x y }",
                       "fn f() { return (a b) }",
                       "fn f() { return f(a b) }",
                       "}",
                       ")",
                       "]",
                       "fn f() { return a < b < c < d }",
                       "fn f() { , }",
                       "fn f() { @ }"};
  for (const char *src : bad) {
    for (const auto &d : errors(src)) {
      EXPECT_EQ(d.message.find(" {'"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("expecting"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("<EOF>"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("viable"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("extraneous"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("mismatched"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_EQ(d.message.find("T__"), std::string::npos)
          << src << ": " << d.message;
      EXPECT_LT(std::count(d.message.begin(), d.message.end(), ','), 5)
          << src << ": " << d.message;
    }
  }
}

TEST(ParserErrors, RecoveryStepsOverBracketedGroups) {
  auto d = errors("fn main() {\n  if x {\n    yield 1\n  }\n  elif y {\n"
                  "    let z = [1, (2)]\n  }\n  return 1\n}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.line, 5u);
  EXPECT_EQ(d[0].message, "expected '}' or a new line, found 'y'");
}

TEST(ParserErrors, UnmatchedClosers) {
  auto d = errors("fn main() { let x = 1 }}");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message, "unmatched '}': no '{' is open here");
  EXPECT_EQ(d[0].loc.col, 24u);
  EXPECT_EQ(firstError(")"), "unmatched ')': no '(' is open here");
  EXPECT_EQ(firstError("const c = 1]"), "unmatched ']': no '[' is open here");
}

TEST(ParserErrors, ComparisonsDoNotChain) {
  auto d = errors("fn main() {\n  return a < b < c\n}");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_EQ(d[0].loc.col, 16u);
  EXPECT_NE(d[0].message.find("do not chain"), std::string::npos);
  ASSERT_EQ(d[0].notes.size(), 1u);
  EXPECT_EQ(d[0].notes[0].loc.col, 12u);
  errors("fn main() { return a == b != c }");
  errors("fn main() { return a >= b <= c }");
}

TEST(ParserErrors, IntegerOverflow) {
  auto d = errors("fn main() {\n  return 9223372036854775808\n}");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_EQ(d[0].loc.col, 10u);
  EXPECT_EQ(d[0].loc.len, 19u);
  EXPECT_EQ(d[0].message, "integer literal 9223372036854775808 does not fit in "
                          "i64 (the largest is 9223372036854775807)");
  errors("fn main() { return 99999999999999999999999999999 }");
  errors("fn main() { return 1 - 9223372036854775808 }");
  errors("fn main() { return -9223372036854775809 }");
  errors("fn main(x: f32[99999999999999999999]) {}");
  errors("const c = [1, 2, 99999999999999999999]");
}

TEST(ParserErrors, LexicalErrors) {
  auto d = errors("fn main() {\n  let x = 1 $ 2\n}");
  ASSERT_EQ(d.size(), 1u); // the parse error on that line is a consequence
  EXPECT_EQ(d[0].message, "unexpected character '$'");
  EXPECT_EQ(d[0].loc.col, 13u);

  d = errors("fn main() { let s = \"abc }");
  EXPECT_EQ(d[0].message, "unterminated string (the closing '\"' is missing)");

  d = errors("fn main() { let s = \"a\\tb\" }");
  EXPECT_EQ(d[0].loc.col, 23u);
  EXPECT_EQ(d[0].loc.len, 2u);
  EXPECT_NE(d[0].message.find("unknown escape sequence '\\t'"),
            std::string::npos);

  d = errors("fn main() { let x = 1e999 }");
  EXPECT_EQ(d[0].message, "float literal 1e999 is out of range for f64");

  d = errors("fn main() { let π = 3 }");
  EXPECT_EQ(d[0].message, "unexpected character 'π' (U+03C0)");

  d = errors(std::string("fn main() { let x = 1 \0 }", 25));
  EXPECT_EQ(d[0].message, "unexpected character U+0000");

  EXPECT_EQ(firstError("fn main() { return 'a' }"),
            "unexpected character \"'\" (strings are written with double "
            "quotes)");
  EXPECT_EQ(firstError("fn main() { return .5 }"),
            "unexpected character '.' (write a digit before the point: 0.5)");
}

TEST(ParserErrors, InvalidUtf8) {
  auto d = errors("fn main() {\n  let x = 1 \xff\n}");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message, "invalid UTF-8 byte 0xFF");
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_EQ(d[0].loc.col, 13u);
  // In a comment or a string the byte is still reported.
  d = errors("# caf\xc3\n\nfn main() { return \"\xe2\x82\" }");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].message, "invalid UTF-8 byte 0xC3");
  EXPECT_EQ(d[0].loc.col, 6u);
  EXPECT_EQ(d[1].loc.line, 3u);
  EXPECT_EQ(d[1].message, "invalid UTF-8 byte 0xE2");
  // Overlong forms and surrogates are invalid too.
  errors("# \xc0\xaf");
  errors("# \xed\xa0\x80");
  errors("# \xf4\x90\x80\x80");
}

TEST(ParserErrors, EveryItemIsReportedAtMostOncePerLine) {
  auto d = errors("fn a() { let = 1 }\n"
                  "fn b() { return ) ) ) }\n"
                  "fn c() { return 1 }\n"
                  "fn d() { let x = [1, 2 }\n");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].loc.line, 1u);
  EXPECT_EQ(d[1].loc.line, 2u);
  EXPECT_EQ(d[2].loc.line, 4u);
}

TEST(ParserErrors, AtMostFiftyErrors) {
  std::string src;
  for (int i = 0; i < 200; ++i)
    src += "fn f" + std::to_string(i) + "() { let = }\n";
  auto d = errors(src);
  ASSERT_EQ(d.size(), static_cast<size_t>(kMaxSyntaxErrors));
  EXPECT_EQ(d.back().loc.line, static_cast<uint32_t>(kMaxSyntaxErrors));
  ASSERT_FALSE(d.back().notes.empty());
  EXPECT_NE(d.back().notes.back().message.find("too many"), std::string::npos);
}

TEST(ParserErrors, TooLargeSourceIsRejected) {
  static_assert(kMaxSourceBytes >= (size_t(100) << 20),
                "the limit must leave room for large generated sources");
  std::string huge(kMaxSourceBytes + 1, ' ');
  auto d = errors(huge);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("source file too large"), std::string::npos);
}

// --- Robustness --------------------------------------------------------------

TEST(ParserRobustness, RandomBytes) {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s(rng() % 300, '\0');
    for (char &c : s)
      c = static_cast<char>(rng() % 256);
    parseAnything(s);
  }
}

TEST(ParserRobustness, RandomTokenSoup) {
  static const char *toks[] = {
      "fn",   "let",   "return", "yield", "on",    "if",     "else",   "for",
      "in",   "while", "carry",  "param", "const", "device", "import", "true",
      "x",    "f32",   "f32[2]", "1",     "2.5",   "\"s\"",  "(",      ")",
      "[",    "]",     "{",      "}",     ",",     ":",      ";",      "=",
      "==",   "<",     "+",      "-",     "*",     "@",      "!",      "&&",
      "||",   "..",    "...",    "->",    "\n",    "\n",     " ",      "#c\n",
      "main", "f(",    "x[",
  };
  std::mt19937 rng(777);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    int n = 1 + rng() % 60;
    for (int i = 0; i < n; ++i) {
      s += toks[rng() % (sizeof toks / sizeof *toks)];
      s += ' ';
    }
    parseAnything(s);
  }
}

TEST(ParserRobustness, MutatedConformancePrograms) {
  std::mt19937 rng(99);
  auto files = mdlFiles("run");
  ASSERT_FALSE(files.empty());
  for (const auto &path : files) {
    std::string text = readFile(path);
    for (int iter = 0; iter < 40; ++iter) {
      std::string s = text;
      for (int k = 0; k < 3 && !s.empty(); ++k) {
        size_t at = rng() % s.size();
        switch (rng() % 3) {
        case 0:
          s.erase(at, 1 + rng() % 4);
          break;
        case 1:
          s.insert(at, 1, "(){}[],;=+\n\"#"[rng() % 13]);
          break;
        default:
          s[at] = static_cast<char>(rng() % 128);
          break;
        }
      }
      parseAnything(s);
    }
  }
}

TEST(ParserRobustness, TruncatedConformancePrograms) {
  auto files = mdlFiles("run");
  ASSERT_FALSE(files.empty());
  size_t failures = 0;
  for (const auto &path : files) {
    std::string text = readFile(path);
    for (size_t n = 0; n < text.size(); ++n) {
      Parsed p = parse(text.substr(0, n), "trunc.mdl");
      if (!p.file) {
        ++failures;
        ASSERT_FALSE(p.diags.empty()) << path << " cut at " << n;
      }
      for (const auto &d : p.diags)
        ASSERT_EQ(d.code, "E0001");
    }
  }
  EXPECT_GT(failures, 0u);
}

std::string repeat(const std::string &s, int n) {
  std::string out;
  out.reserve(s.size() * n);
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

void expectTooDeep(const std::string &src) {
  auto d = errors(src);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].message.find("nesting too deep"), std::string::npos)
      << d[0].message;
  EXPECT_NE(d[0].message.find("the limit is 1000"), std::string::npos);
}

TEST(ParserRobustness, DeepNestingIsRejected) {
  const int n = 10000;
  expectTooDeep("fn f() { return " + repeat("(", n) + "1" + repeat(")", n) +
                " }");
  expectTooDeep("fn f() { return " + repeat("(", n)); // unclosed too
  expectTooDeep("fn f() { return " + repeat("[", n) + "1" + repeat("]", n) +
                " }");
  expectTooDeep("fn f() { return " + repeat("[", n));
  expectTooDeep("fn f() { return " + repeat("-", n) + "1 }");
  expectTooDeep("fn f() { return " + repeat("!", n) + "x }");
  expectTooDeep("fn f() { return " + repeat("- ", n) + "1 }");
  expectTooDeep("fn f() { return " + repeat("f(", n) + "x" + repeat(")", n) +
                " }");
  expectTooDeep("fn f() { return " + repeat("if c { yield ", n) + "1" +
                repeat(" }", n) + " }");
  expectTooDeep("fn f() { on d " + repeat("{ on d ", n) + repeat("}", n) +
                " }");
  expectTooDeep("fn f() " + repeat("{", n) + repeat("}", n));
  expectTooDeep("fn f() { return 1" + repeat(" + 1", n) + " }");
  expectTooDeep("fn f() { return x" + repeat("[0]", n) + " }");
  expectTooDeep("fn f() { return a" + repeat(" on d", n) + " }");
  expectTooDeep("fn f() { return if a { yield 1 }" +
                repeat(" else if a { yield 1 }", n) + " else { yield 2 } }");
  expectTooDeep("const c = " + repeat("[", n) + "1" + repeat("]", n));
}

TEST(ParserRobustness, NestingUpToTheLimitIsAccepted) {
  // The function body's `{` is one level.
  int n = kMaxNesting - 1;
  Parsed p =
      parse("fn f() { return " + repeat("(", n) + "1" + repeat(")", n) + " }");
  ASSERT_TRUE(p.file);
  const Expr *e = returnValue(*p.file);
  EXPECT_EQ(e->kind, ExprKind::IntLit);
  p = parse("fn f() { return " + repeat("[", n) + "1" + repeat("]", n) + " }");
  ASSERT_TRUE(p.file);
  int depth = 0;
  for (e = returnValue(*p.file); e->kind == ExprKind::TensorLit;
       e = static_cast<const TensorLit *>(e)->elements[0].get())
    ++depth;
  EXPECT_EQ(depth, n);
  p = parse("fn f() { return " + repeat("-", n) + "x }");
  ASSERT_TRUE(p.file);
  p = parse("fn f() { return 1" + repeat(" + 1", n - 1) + " }");
  ASSERT_TRUE(p.file);
  p = parse("fn f() { return " + repeat("(", n + 1) + "1" + repeat(")", n + 1) +
            " }");
  EXPECT_FALSE(p.file);
}

TEST(ParserRobustness, ManyItemsAndLongLines) {
  // Long flat constructs are not nesting.
  std::string big = "fn f() {\n";
  for (int i = 0; i < 20000; ++i)
    big += "  let x" + std::to_string(i) + " = x + 1\n";
  big += "  return f(" + repeat("a, ", 20000) + "b)\n}\n";
  Parsed p = parse(big);
  ASSERT_TRUE(p.file);
  auto &fn = static_cast<const FnItem &>(*p.file->items[0]);
  EXPECT_EQ(fn.body.stmts.size(), 20001u);
  EXPECT_EQ(static_cast<const CallExpr *>(returnValue(*p.file))->args.size(),
            20001u);
}

// --- Large tensor literals ---------------------------------------------------

std::string numericLiteral(int rows, int cols, bool withName) {
  std::string s = "[";
  for (int r = 0; r < rows; ++r) {
    s += r ? ",\n  [" : "[";
    for (int c = 0; c < cols; ++c) {
      std::string num = (r + c) % 3 == 0
                            ? "-" + std::to_string(r * cols + c) + ".5"
                            : std::to_string(r * cols + c);
      if (c)
        s += ", ";
      // A name as long as the number it replaces sends the literal down
      // the normal path without moving anything else.
      s += withName && r == rows - 1 && c == cols - 1
               ? std::string(num.size(), 'k')
               : num;
    }
    s += "]";
  }
  return s + "]";
}

void collectLocs(const Expr *e, std::vector<std::string> &out) {
  out.push_back(std::to_string(e->loc.line) + ":" + std::to_string(e->loc.col) +
                "+" + std::to_string(e->loc.len));
  if (e->kind == ExprKind::TensorLit)
    for (const auto &x : static_cast<const TensorLit *>(e)->elements)
      collectLocs(x.get(), out);
  if (e->kind == ExprKind::Unary)
    collectLocs(static_cast<const UnaryExpr *>(e)->operand.get(), out);
}

TEST(ParserLargeLiterals, PackedLiteralsMatchTheNormalTree) {
  // 40x40 numbers are folded into one token; the same literal with a name
  // as its last element takes the normal path. Apart from that element the
  // trees and locations must agree.
  std::string literal = numericLiteral(40, 40, false);
  Parsed packed = parse("const c = " + literal + "\n");
  Parsed normal = parse("const c = " + numericLiteral(40, 40, true) + "\n");
  ASSERT_TRUE(packed.file);
  ASSERT_TRUE(normal.file);
  auto *a = static_cast<const ConstItem &>(*packed.file->items[0]).value.get();
  auto *b = static_cast<const ConstItem &>(*normal.file->items[0]).value.get();
  std::string da = dump(a), db = dump(b);
  const std::string lastA = "(neg 1599.5)]]", lastB = "kkkkkkk]]";
  ASSERT_EQ(da.substr(da.size() - lastA.size()), lastA);
  ASSERT_EQ(db.substr(db.size() - lastB.size()), lastB);
  EXPECT_EQ(da.substr(0, da.size() - lastA.size()),
            db.substr(0, db.size() - lastB.size()));
  std::vector<std::string> la, lb;
  collectLocs(a, la);
  collectLocs(b, lb);
  ASSERT_EQ(la.size(), lb.size() + 1); // -1599.5 is a unary and a literal
  for (size_t i = 0; i < lb.size(); ++i)
    ASSERT_EQ(la[i], lb[i]) << i;
  // The outer literal spans to the end of its first line.
  EXPECT_EQ(la[0], "1:11+" + std::to_string(literal.find('\n')));
}

TEST(ParserLargeLiterals, PackedLiteralEdgeCases) {
  std::string ints = "[" + repeat("-9223372036854775808, 7, ", 200) + "]";
  Parsed p = parse("fn f() { return " + ints + "[0] }");
  ASSERT_TRUE(p.file);
  auto *ix = static_cast<const IndexExpr *>(returnValue(*p.file));
  auto *lit = static_cast<const TensorLit *>(ix->base.get());
  ASSERT_EQ(lit->elements.size(), 400u);
  EXPECT_EQ(dump(lit->elements[0].get()), "-9223372036854775808");
  EXPECT_EQ(lit->elements[0]->kind, ExprKind::IntLit);
  // Errors inside a large literal are still found, on their line.
  auto d =
      errors("const c = [" + repeat("1, ", 300) + "\n 99999999999999999999]");
  EXPECT_EQ(d[0].loc.line, 2u);
  d = errors("const c = [" + repeat("1, ", 300) + "\n 1 2]");
  EXPECT_EQ(d[0].loc.line, 2u);
  d = errors("const c = [" + repeat("1, ", 300) + "\n 1,, 2]");
  EXPECT_EQ(d[0].loc.line, 2u);
  // An item keyword at the start of a line inside an unclosed literal.
  d = errors("const c = [" + repeat("1, ", 300) + "\nfn f() {}");
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_NE(d[0].message.find("to close '['"), std::string::npos);
}

// --- Large functions ---------------------------------------------------------

/// About 15 tokens a statement: 20000 statements make a function body
/// long enough to be parsed in three pieces.
std::string longBody(int statements) {
  std::string body;
  for (int i = 0; i < statements; ++i) {
    std::string n = std::to_string(i);
    switch (i % 4) {
    case 0:
      body += "  let h" + n + " = relu(h @ w + " + n + ".0) * x[" + n + "]\n";
      break;
    case 1:
      body += "  let (a" + n + ", b) = f(x, k = [1, 2])\n";
      break;
    case 2:
      body += "  let c" + n +
              " = if a > b {\n    yield a\n  } else {\n    yield b\n  }\n";
      break;
    default:
      body += "  print(c); d\n";
      break;
    }
  }
  return body;
}

std::vector<std::string> stmtDumps(const Block &b) {
  std::vector<std::string> out;
  for (const auto &st : b.stmts)
    out.push_back(dump(*st));
  return out;
}

TEST(ParserLargeFunctions, PiecesGiveTheSameTree) {
  std::string body = longBody(20000);
  // In the first source the statements sit directly in the function body
  // and it is parsed in pieces; in the second they sit in an `on` block,
  // where no cut is made.
  Parsed pieces = parse("fn main(x: f32[B, 8]) -> f32 {\n" + body +
                        "  return h\n}\nconst after = 1\n");
  Parsed whole = parse("fn main(x: f32[B, 8]) -> f32 {\non d {\n" + body +
                       "}\n  return h\n}\nconst after = 1\n");
  ASSERT_TRUE(pieces.file);
  ASSERT_TRUE(whole.file);
  ASSERT_EQ(pieces.file->items.size(), 2u);
  auto &a = static_cast<const FnItem &>(*pieces.file->items[0]);
  auto &b = static_cast<const FnItem &>(*whole.file->items[0]);
  EXPECT_EQ(a.loc.col, b.loc.col);
  EXPECT_EQ(a.loc.len, b.loc.len);
  EXPECT_EQ(a.params.size(), 1u);
  EXPECT_TRUE(a.hasResults);
  EXPECT_EQ(a.body.open.line, 1u);
  EXPECT_EQ(a.body.open.col, 30u);
  ASSERT_EQ(a.body.stmts.size(), 20000u / 4 * 5 + 1); // `print(c); d` is two
  auto &on = static_cast<const OnStmt &>(*b.body.stmts[0]);
  std::vector<std::string> da = stmtDumps(a.body), db = stmtDumps(on.body);
  db.push_back(dump(*b.body.stmts[1]));
  ASSERT_EQ(da.size(), db.size());
  for (size_t i = 0; i < da.size(); ++i)
    ASSERT_EQ(da[i], db[i]) << "statement " << i;
  uint32_t lastLine =
      static_cast<uint32_t>(std::count(body.begin(), body.end(), '\n') + 3);
  EXPECT_EQ(a.body.close.line, lastLine);
  EXPECT_EQ(a.body.stmts.back()->loc.line, lastLine - 1);
  EXPECT_EQ(pieces.file->items[1]->name.name, "after");
}

TEST(ParserLargeFunctions, ErrorsInPieces) {
  std::string body = longBody(20000);
  size_t cut = body.find("\n", body.size() / 2) + 1;
  uint32_t badLine = static_cast<uint32_t>(
      std::count(body.begin(), body.begin() + cut, '\n') + 2);
  // An error in the middle of the function.
  auto d = errors("fn main() {\n" + body.substr(0, cut) + "  let = 1\n" +
                  body.substr(cut) + "}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.line, badLine);
  EXPECT_EQ(d[0].message, "expected a name or '(', found '='");
  // The closing brace is missing: the message names the function's `{`.
  d = errors("fn main() {\n" + body);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("'}' to close '{' at 1:11, found end of file"),
            std::string::npos)
      << d[0].message;
  d = errors("fn main() {\n" + body + "fn next() {}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("'}' to close '{' at 1:11, found 'fn'"),
            std::string::npos)
      << d[0].message;
  ASSERT_EQ(d[0].notes.size(), 1u);
  EXPECT_EQ(d[0].notes[0].loc.line, 1u);
}

TEST(ParserLargeFunctions, OneHugeStatementIsRejected) {
  // A statement that cannot be cut into pieces is limited to 2^22 tokens.
  // It usually grows that large because a bracket was left open: the note
  // points at it.
  auto d = errors("fn main() {\n  let x = g(1,\n" +
                  repeat("  y,\n", (1 << 21) + 10) +
                  "  z\n}\nfn g() { return x y }\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].message,
            "statement too large to parse (more than 4194304 tokens)");
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_EQ(d[0].loc.col, 3u);
  ASSERT_EQ(d[0].notes.size(), 1u);
  EXPECT_EQ(d[0].notes[0].loc.line, 2u);
  EXPECT_EQ(d[0].notes[0].loc.col, 12u);
  EXPECT_GT(d[1].loc.line, 100u); // the next function is still checked

  d = errors("fn main() {\n  return " + repeat("a,", (1 << 21) + 10) +
             "b\n}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].loc.line, 2u);
  ASSERT_EQ(d[0].notes.size(), 1u);
  EXPECT_NE(d[0].notes[0].message.find("split it"), std::string::npos);
}

TEST(ParserLargeLiterals, GeneratedSourceOfSeveralMegabytes) {
  // About 5 MB: many functions and a large constant. What 100 MB costs is
  // noted at kMaxSourceBytes (Parser.h).
  std::string src = "device host = cpu()\n";
  std::mt19937 rng(5);
  src += "const table = [";
  for (int i = 0; i < 200000; ++i)
    src += (i ? ", " : "") + std::to_string(rng() % 1000) + "." +
           std::to_string(rng() % 1000);
  src += "]\n";
  int fns = 0;
  while (src.size() < (size_t(5) << 20)) {
    src += "fn layer" + std::to_string(fns++) +
           "(x: f32[B, 8], w: f32[8, 8]) -> f32[B, 8] {\n";
    for (int i = 0; i < 20; ++i)
      src += "  let h" + std::to_string(i) + " = relu(x @ w + " +
             std::to_string(i) + ".0) * table[" + std::to_string(i) + "]\n";
    src += "  return h19 on host\n}\n";
  }
  auto t0 = std::chrono::steady_clock::now();
  Parsed p = parse(src);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_TRUE(p.file);
  EXPECT_EQ(p.file->items.size(), static_cast<size_t>(fns + 2));
  auto &table = static_cast<const ConstItem &>(*p.file->items[1]);
  EXPECT_EQ(static_cast<const TensorLit *>(table.value.get())->elements.size(),
            200000u);
  EXPECT_LT(secs, 60.0);
  std::cout << "[ info     ] parsed " << (src.size() >> 20) << " MB in " << secs
            << " s\n";
}

} // namespace

// --- Statements (REPL inputs) --------------------------------------------------

namespace {

/// parseStatements of `text`: the dump of the body, or the first error.
std::string statements(const std::string &text, ir::Location *firstLoc = nullptr) {
  SourceManager sources;
  const SourceBuffer *buf = sources.addBuffer("<repl:1>", text);
  ir::DiagnosticEngine diags;
  std::unique_ptr<FnItem> fn = parseStatements(*buf, diags);
  diags.flush();
  if (!fn) {
    if (diags.all().empty())
      return "<null without an error>";
    if (firstLoc)
      *firstLoc = diags.all()[0].loc;
    return "error " + diags.all()[0].code + ": " + diags.all()[0].message;
  }
  EXPECT_TRUE(diags.all().empty());
  EXPECT_TRUE(fn->name.name.empty());
  EXPECT_TRUE(fn->params.empty());
  return dump(fn->body);
}

} // namespace

TEST(ParserReplStatements, RunsOfStatementsWithTheirLocations) {
  EXPECT_EQ(statements("let x = 1\nx + 2"), "{(let x 1); (+ x 2)}");
  EXPECT_EQ(statements("let a = 1; let b = a * 2"), "{(let a 1); (let b (* a 2))}");
  EXPECT_EQ(statements(""), "{}");
  EXPECT_EQ(statements("# a comment\n\n"), "{}");
  // Layout rules as in a function body: `else` on the next line continues.
  EXPECT_EQ(statements("if c { yield 1 }\nelse { yield 2 }"),
            statements("if c { yield 1 } else { yield 2 }"));
  SourceManager sources;
  const SourceBuffer *buf = sources.addBuffer("<repl:2>", "let y =\n  [1.0, 2.0]");
  ir::DiagnosticEngine diags;
  std::unique_ptr<FnItem> fn = parseStatements(*buf, diags);
  ASSERT_TRUE(fn);
  auto &let = static_cast<const LetStmt &>(*fn->body.stmts.at(0));
  EXPECT_EQ(let.value->loc.line, 2u);
  EXPECT_EQ(let.value->loc.col, 3u);
  EXPECT_EQ(let.value->loc.file, buf->fileId);
}

TEST(ParserReplStatements, ErrorsPointIntoTheInput) {
  ir::Location loc;
  EXPECT_EQ(statements("x +* 2", &loc).rfind("error E0001: expected an expression", 0), 0u);
  EXPECT_EQ(loc.line, 1u);
  EXPECT_EQ(loc.col, 4u);
  // Items are not statements: an input is one or the other.
  EXPECT_EQ(statements("let a = 1; fn g() { return 2 }").rfind("error E0001", 0), 0u);
  EXPECT_EQ(statements("let (a, b = f(x)").rfind("error E0001", 0), 0u);
}
