// The abstract syntax tree of an mdl program.
//
// The ANTLR parse tree is converted into this tree at once (AstBuilder), so
// nothing after the parser sees ANTLR types. Semantic analysis (Sema)
// annotates expressions in place with their types and resolved bindings;
// lowering (Lower) turns the annotated tree into IR.
#pragma once

#include "ir/Location.h"
#include "ir/Type.h"
#include "stdlib/OpKind.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mdl::frontend {

using ir::Location;

/// A name with the location where it is written.
struct Ident {
  std::string name;
  Location loc;
};

/// One dimension as written: an integer or a symbol name.
struct DimNode {
  std::optional<int64_t> size; // set for integers
  std::string sym;             // set for symbols
  Location loc;
};

/// `f32`, `f32[4, B]`
struct TypeNode {
  ir::DType dtype = ir::DType::F32;
  bool hasShape = false; // false for a bare element type
  std::vector<DimNode> dims;
  Location loc;
};

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

/// `{ stmt* }`
struct Block {
  std::vector<StmtPtr> stmts;
  Location open;  // the `{`
  Location close; // the `}`
};

// --- Expressions -------------------------------------------------------------

enum class ExprKind {
  IntLit,
  FloatLit,
  BoolLit,
  StringLit,
  Name,
  TensorLit, // [a, b, ...] (nested lists are nested TensorLits)
  Type,      // a type in argument position: zeros(f32[3]), cast(x, f16)
  Unary,
  Binary,
  Call,
  Index,
  If,
  For,
  While,
  On,        // EXPR on DEV
};

enum class UnaryOp { Neg, Not };
enum class BinaryOp {
  Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod, MatMul
};
const char *binaryOpSpelling(BinaryOp op);

/// How an expression's value reaches the IR, filled in by Sema.
struct ExprInfo {
  std::vector<ir::TensorType> types; // one per value (calls may give several)
  /// The operation an operator expression denotes (`+` is add, unary `-`
  /// neg), as Sema resolved it; lowering emits it.
  std::optional<ir::OpKind> op;
  bool weak = false;    // an untyped literal whose dtype adapts
  bool checked = false; // Sema visited it without error
};

struct Expr {
  ExprKind kind;
  Location loc; // the whole expression's start, with len covering it
  ExprInfo info;
  explicit Expr(ExprKind k, Location l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
};

struct IntLit : Expr {
  int64_t value = 0;
  IntLit(Location l, int64_t v) : Expr(ExprKind::IntLit, l), value(v) {}
};

struct FloatLit : Expr {
  double value = 0;
  FloatLit(Location l, double v) : Expr(ExprKind::FloatLit, l), value(v) {}
};

struct BoolLit : Expr {
  bool value = false;
  BoolLit(Location l, bool v) : Expr(ExprKind::BoolLit, l), value(v) {}
};

struct StringLit : Expr {
  std::string value; // escapes resolved
  StringLit(Location l, std::string v)
      : Expr(ExprKind::StringLit, l), value(std::move(v)) {}
};

struct NameExpr : Expr {
  std::string name;
  NameExpr(Location l, std::string n) : Expr(ExprKind::Name, l), name(std::move(n)) {}
};

struct TensorLit : Expr {
  std::vector<ExprPtr> elements;
  explicit TensorLit(Location l) : Expr(ExprKind::TensorLit, l) {}
};

struct TypeExpr : Expr {
  TypeNode type;
  TypeExpr(Location l, TypeNode t) : Expr(ExprKind::Type, l), type(std::move(t)) {}
};

struct UnaryExpr : Expr {
  UnaryOp op;
  ExprPtr operand;
  UnaryExpr(Location l, UnaryOp o, ExprPtr x)
      : Expr(ExprKind::Unary, l), op(o), operand(std::move(x)) {}
};

struct BinaryExpr : Expr {
  BinaryOp op;
  Location opLoc; // the operator token
  ExprPtr lhs, rhs;
  BinaryExpr(Location l, BinaryOp o, Location ol, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::Binary, l), op(o), opLoc(ol), lhs(std::move(a)),
        rhs(std::move(b)) {}
};

/// One argument of a call: positional or `name = value`.
struct Arg {
  std::optional<Ident> keyword;
  ExprPtr value;
};

struct CallExpr : Expr {
  Ident callee;
  std::vector<Arg> args;
  Location close; // the `)`
  explicit CallExpr(Location l) : Expr(ExprKind::Call, l) {}
};

/// One item between the brackets of an index expression.
struct IndexItem {
  enum class Kind { Single, Slice, Ellipsis } kind = Kind::Single;
  ExprPtr index;             // Single
  ExprPtr start, stop, step; // Slice (each may be null)
  Location loc;
};

struct IndexExpr : Expr {
  ExprPtr base;
  std::vector<IndexItem> items;
  explicit IndexExpr(Location l) : Expr(ExprKind::Index, l) {}
};

struct IfExpr : Expr {
  ExprPtr cond;
  Block thenBlock;
  /// The else branch: a block, or for `else if` a block whose only
  /// statement yields the nested if. Absent when there is no else.
  std::optional<Block> elseBlock;
  explicit IfExpr(Location l) : Expr(ExprKind::If, l) {}
};

/// `NAME = INIT` in a carry list.
struct Carry {
  Ident name;
  ExprPtr init;
};

struct ForExpr : Expr {
  Ident var;
  ExprPtr lo, hi;
  std::vector<Carry> carries;
  Block body;
  explicit ForExpr(Location l) : Expr(ExprKind::For, l) {}
};

struct WhileExpr : Expr {
  ExprPtr cond;
  std::vector<Carry> carries;
  Block body;
  explicit WhileExpr(Location l) : Expr(ExprKind::While, l) {}
};

struct OnExpr : Expr {
  ExprPtr expr;
  Ident device;
  OnExpr(Location l, ExprPtr e, Ident d)
      : Expr(ExprKind::On, l), expr(std::move(e)), device(std::move(d)) {}
};

// --- Statements ----------------------------------------------------------------

enum class StmtKind { Let, On, Return, Yield, Expr };

struct Stmt {
  StmtKind kind;
  Location loc;
  Stmt(StmtKind k, Location l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
};

/// `let x = e`, `let x : T = e`, `let (a, b) = e`
struct LetStmt : Stmt {
  std::vector<Ident> names;
  bool destructure = false; // written with parentheses
  std::optional<TypeNode> annotation;
  ExprPtr value;
  explicit LetStmt(Location l) : Stmt(StmtKind::Let, l) {}
};

/// `on DEV { ... }`
struct OnStmt : Stmt {
  Ident device;
  Block body;
  explicit OnStmt(Location l) : Stmt(StmtKind::On, l) {}
};

/// `return e, ...` and `yield e, ...`
struct ValuesStmt : Stmt {
  std::vector<ExprPtr> values;
  ValuesStmt(StmtKind k, Location l) : Stmt(k, l) {}
};

struct ExprStmt : Stmt {
  ExprPtr expr;
  ExprStmt(Location l, ExprPtr e) : Stmt(StmtKind::Expr, l), expr(std::move(e)) {}
};

// --- Items -----------------------------------------------------------------------

enum class ItemKind { Import, Device, Const, Param, Fn };

struct Item {
  ItemKind kind;
  Location loc;
  Ident name; // empty for imports
  Item(ItemKind k, Location l) : kind(k), loc(l) {}
  virtual ~Item() = default;
};

struct ImportItem : Item {
  std::string path;
  Location pathLoc;
  explicit ImportItem(Location l) : Item(ItemKind::Import, l) {}
};

/// `device NAME = KIND(ARGS)`
struct DeviceItem : Item {
  Ident deviceKind; // cpu, hip, mpc (checked by Sema)
  std::vector<Arg> args;
  explicit DeviceItem(Location l) : Item(ItemKind::Device, l) {}
};

struct ConstItem : Item {
  ExprPtr value;
  explicit ConstItem(Location l) : Item(ItemKind::Const, l) {}
};

/// `param NAME : TYPE [on DEV] = INIT`. INIT is an expression: a call such as
/// load(...), random_normal(...), fill(v), a bare name (zeros, ones) or a
/// tensor literal; Sema interprets it.
struct ParamItem : Item {
  TypeNode type;
  std::optional<Ident> device;
  ExprPtr init;
  explicit ParamItem(Location l) : Item(ItemKind::Param, l) {}
};

struct FnParam {
  Ident name;
  TypeNode type;
};

struct FnItem : Item {
  std::vector<FnParam> params;
  std::vector<TypeNode> results; // empty when no `->` is written
  bool hasResults = false;
  Block body;
  explicit FnItem(Location l) : Item(ItemKind::Fn, l) {}
};

/// One parsed file.
struct SourceFile {
  std::string path;
  uint32_t fileId = 0;
  std::vector<std::unique_ptr<Item>> items;
};

} // namespace mdl::frontend
