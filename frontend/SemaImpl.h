// Internal: the Sema class shared by Sema.cpp (items, functions, statements)
// and SemaExpr.cpp (expressions, calls, attributes, indexing).
#pragma once

#include "frontend/Sema.h"
#include "stdlib/Registry.h"

#include <optional>
#include <set>
#include <unordered_map>

namespace mdl::frontend {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::TensorType;
using stdlib::ParamKind;

/// "1 argument", "2 arguments".
inline std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// A name bound by `let`, a parameter, a loop variable or a carry.
struct LocalVar {
  ir::TensorType type;
  Location loc;
  bool poisoned = false; // its definition had an error: uses stay silent
};

class Sema {
public:
  Sema(Program &p, ir::DiagnosticEngine &d) : prog_(p), diags_(d) {}
  std::unique_ptr<CheckedProgram> run();

  // --- Sema.cpp: items, functions, statements ---
private:
  void collectItems();
  void checkDevice(const DeviceItem &d);
  void checkConst(const ConstItem &c);
  void checkParam(const ParamItem &p);
  void checkSignature(const FnItem &f);
  void checkBody(const FnItem &f);
  void checkRecursion();
  bool resolveType(const TypeNode &t, ir::TensorType &out, bool declareSymbols);

  /// Checks a block's statements. For a region body (`if`/`for`/`while`),
  /// `yielded` receives the types of its final `yield` (empty if none).
  void checkStatements(const Block &b, bool fnBody,
                       std::vector<ir::TensorType> *yielded,
                       std::vector<Expr *> *yieldExprs, bool &sawTerminator);
  void checkStmt(Stmt &s, bool isLast, bool fnBody,
                 std::vector<ir::TensorType> *yielded,
                 std::vector<Expr *> *yieldExprs, bool &sawTerminator);

  // --- SemaExpr.cpp: expressions ---
public:
  /// Checks an expression; false if it (or a part) has an error, in which
  /// case the error was reported and callers stay silent.
  bool checkExpr(Expr &e);
  /// Gives a weak literal subtree the element type `d` (or reports E0201
  /// when it cannot take it). Strong expressions are left alone.
  bool adopt(Expr &e, ir::DType d);
  /// Commits a weak expression to its default type (f32 / i64).
  void commitDefault(Expr &e);
  /// Unifies weak operands with the first strong one among them.
  bool unifyWeak(const std::vector<Expr *> &operands);
  /// Checks a block of an `if`/`for`/`while` in a new scope; returns the
  /// yielded types.
  bool checkRegionBlock(const Block &b, std::vector<ir::TensorType> &yielded,
                        std::vector<Expr *> &yieldExprs);

private:
  bool checkName(NameExpr &e);
  bool checkTensorLit(TensorLit &e);
  bool checkUnary(UnaryExpr &e);
  bool checkBinary(BinaryExpr &e);
  bool checkCall(CallExpr &e);
  bool checkUserCall(CallExpr &e, const FnItem &fn);
  bool checkBuiltinCall(CallExpr &e, const stdlib::OpInfo &info);
  bool checkIndex(IndexExpr &e);
  bool checkIf(IfExpr &e);
  bool checkFor(ForExpr &e);
  bool checkWhile(WhileExpr &e);
  bool checkCarries(std::vector<Carry> &carries,
                    std::vector<ir::TensorType> &types);
  bool checkLoopBody(const Block &body, const std::vector<Carry> &carries,
                     const std::vector<ir::TensorType> &carryTypes,
                     const char *what);
  bool evalAttr(const Expr &e, const stdlib::ParamSpec &p, ir::Attribute &out,
                const std::string &callee);
  std::optional<int64_t> evalInt(const Expr &e);
  std::optional<double> evalNumber(const Expr &e);
  bool requireTensor(Expr &e, const char *what);
  void reportRule(const stdlib::RuleError &err, const Location &loc,
                  const std::vector<Expr *> &operands);

  // --- shared state and helpers ---
public:
  LocalVar *lookupLocal(const std::string &name);
  void bind(const Ident &name, const ir::TensorType &t);
  /// Binds a name whose definition failed, so that its uses report nothing.
  void bindPoisoned(const Ident &name);
  void pushScope() { scopes_.emplace_back(); }
  void popScope() { scopes_.pop_back(); }
  std::vector<std::string> visibleNames() const;
  bool deviceDeclared(const Ident &dev);

  Program &prog_;
  ir::DiagnosticEngine &diags_;
  std::unique_ptr<CheckedProgram> out_;
  std::vector<std::unordered_map<std::string, LocalVar>> scopes_;
  const FnItem *currentFn_ = nullptr;
  std::set<std::string> currentSymbols_;
  /// Call graph edges for the recursion check: caller -> (callee, call loc).
  std::map<const FnItem *, std::vector<std::pair<const FnItem *, Location>>> calls_;
  enum class ConstState { Unchecked, InProgress, Done, Failed };
  std::map<std::string, ConstState> constState_;
  std::map<std::string, const Item *> items_; // consts, params
  int exprDepth_ = 0;
  /// Body check state per function: absent (unchecked), 1 (in progress), 2.
  std::map<const FnItem *, int> bodyState_;
};

/// Suffix for "did you mean" notes: "; did you mean 'x'?" or "".
std::string didYouMean(const std::string &name,
                       const std::vector<std::string> &candidates);

} // namespace mdl::frontend
