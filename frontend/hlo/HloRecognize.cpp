// Recognition of the small computations HLO attaches to reductions, scatters,
// select-and-scatter and sort: when a reducer is `add(p0, p1)` (or mul,
// max, min, and, or) the operation gets `reducer = "add"` and runs as a
// native loop; only other reducers become functions the kernel calls per
// element.
//
// Sort comparators are recognized by meaning rather than by shape: the
// comparator is evaluated on every pair of a set of probe values (signed
// zeros, infinities and NaNs of both signs included) and matched against
// the two native orders, ascending with NaNs last (`asc`) and its mirror
// (`desc`). JAX's comparator, which canonicalizes NaN and -0 before a
// total-order compare, thus runs natively; anything that disagrees on a
// single probe pair stays a function.
#include "frontend/hlo/HloAttrs.h"
#include "frontend/hlo/HloTranslator.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace mdl::frontend::hlo {

namespace {

const HloInstruction *findInstruction(const HloComputation &c, const std::string &name) {
  for (const HloInstruction &i : c.instructions)
    if (i.name == name)
      return &i;
  return nullptr;
}

int parameterCount(const HloComputation &c) {
  int n = 0;
  for (const HloInstruction &i : c.instructions)
    n += i.opcode == "parameter";
  return n;
}

// Total order on doubles: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
int64_t totalKey(double x) {
  int64_t b;
  std::memcpy(&b, &x, 8);
  return b < 0 ? int64_t(uint64_t(b) ^ 0x7fffffffffffffffULL) : b;
}

/// Evaluates a scalar computation on doubles; nullopt for anything it does
/// not model (the caller then keeps the function).
class ScalarEval {
public:
  explicit ScalarEval(const HloComputation &c) : c_(c) {}

  std::optional<double> run(const std::vector<double> &params) {
    params_ = &params;
    memo_.clear();
    depth_ = 0;
    return eval(c_.rootInstruction());
  }

private:
  std::optional<double> operand(const HloInstruction &i, size_t k) {
    if (k >= i.operands.size())
      return std::nullopt;
    const HloInstruction *d = findInstruction(c_, i.operands[k].name);
    if (!d)
      return std::nullopt;
    return eval(*d);
  }

  std::optional<double> eval(const HloInstruction &i) {
    auto it = memo_.find(&i);
    if (it != memo_.end())
      return it->second;
    if (++depth_ > 64 || i.shape.isTuple || !i.shape.dims.empty())
      return std::nullopt;
    std::optional<double> r = compute(i);
    --depth_;
    if (r)
      memo_[&i] = *r;
    return r;
  }

  std::optional<double> compute(const HloInstruction &i) {
    const std::string &op = i.opcode;
    if (op == "parameter") {
      size_t k = size_t(i.parameterNumber);
      return k < params_->size() ? std::optional<double>((*params_)[k]) : std::nullopt;
    }
    if (op == "constant") {
      auto dt = storageType(i.shape.type);
      if (!dt || i.literal.kind != HloLiteral::Kind::Inline)
        return std::nullopt;
      ir::DenseData d;
      d.type = ir::TensorType::scalar(*dt);
      d.bytes = i.literal.bytes;
      return d.elementAsDouble(0);
    }
    std::vector<double> a;
    for (size_t k = 0; k < i.operands.size(); ++k) {
      auto v = operand(i, k);
      if (!v)
        return std::nullopt;
      a.push_back(*v);
    }
    auto need = [&](size_t n) { return a.size() == n; };
    if (op == "compare" && need(2)) {
      const HloAttr *d = i.attr("direction");
      const HloAttr *ty = i.attr("type");
      if (!d)
        return std::nullopt;
      bool total = ty && ty->value == "TOTALORDER";
      const std::string &dir = d->value;
      if (total) {
        int64_t x = totalKey(a[0]), y = totalKey(a[1]);
        return double(dir == "EQ" ? x == y : dir == "NE" ? x != y : dir == "LT" ? x < y
                      : dir == "LE" ? x <= y : dir == "GT" ? x > y : x >= y);
      }
      double x = a[0], y = a[1];
      return double(dir == "EQ" ? x == y : dir == "NE" ? x != y : dir == "LT" ? x < y
                    : dir == "LE" ? x <= y : dir == "GT" ? x > y : x >= y);
    }
    if (op == "select" && need(3))
      return a[0] != 0 ? a[1] : a[2];
    if (op == "and" && need(2) && i.shape.type == "pred")
      return double(a[0] != 0 && a[1] != 0);
    if (op == "or" && need(2) && i.shape.type == "pred")
      return double(a[0] != 0 || a[1] != 0);
    if (op == "not" && need(1) && i.shape.type == "pred")
      return double(a[0] == 0);
    if (op == "negate" && need(1))
      return -a[0];
    if (op == "abs" && need(1))
      return std::fabs(a[0]);
    if ((op == "copy" || op == "reshape" || op == "bitcast") && need(1))
      return a[0];
    if (op == "is-finite" && need(1))
      return double(std::isfinite(a[0]));
    if (op == "convert" && need(1)) {
      auto dt = storageType(i.shape.type);
      if (!dt)
        return std::nullopt;
      if (*dt == ir::DType::Bool)
        return double(a[0] != 0);
      if (ir::isFloat(*dt))
        return a[0];
      return std::nullopt;
    }
    return std::nullopt;
  }

  const HloComputation &c_;
  const std::vector<double> *params_ = nullptr;
  std::unordered_map<const HloInstruction *, double> memo_;
  int depth_ = 0;
};

} // namespace

std::string Translator::recognizeReducer(const HloComputation &c, bool unsignedType) {
  const HloInstruction &r = c.rootInstruction();
  if (parameterCount(c) != 2 || r.operands.size() != 2 || r.shape.isTuple || !r.shape.dims.empty())
    return "";
  const HloInstruction *p = findInstruction(c, r.operands[0].name);
  const HloInstruction *q = findInstruction(c, r.operands[1].name);
  if (!p || !q || p->opcode != "parameter" || q->opcode != "parameter" ||
      p->parameterNumber == q->parameterNumber || p->shape.str() != r.shape.str() ||
      q->shape.str() != r.shape.str())
    return "";
  bool pred = r.shape.type == "pred";
  const std::string &op = r.opcode;
  if (op == "add")
    return pred ? "or" : "add";
  if (op == "multiply")
    return pred ? "and" : "mul";
  if (op == "maximum")
    return pred ? "or" : unsignedType ? "" : "max";
  if (op == "minimum")
    return pred ? "and" : unsignedType ? "" : "min";
  if (op == "and" && pred)
    return "and";
  if (op == "or" && pred)
    return "or";
  return "";
}

std::string Translator::recognizeCombiner(const HloComputation &c, bool unsignedType) {
  const HloInstruction &r = c.rootInstruction();
  if (parameterCount(c) == 2 && r.opcode == "parameter" && r.parameterNumber == 1)
    return "assign";
  return recognizeReducer(c, unsignedType);
}

/// "asc" / "desc" when the comparator orders operand 0 as the native sort
/// does, on every probe pair; "" otherwise.
std::string recognizeSortOrder(const HloComputation &c, size_t operands, bool isFloatKey) {
  if (parameterCount(c) != int(2 * operands))
    return "";
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> probes =
      isFloatKey ? std::vector<double>{-inf, -2.5, -1, -0.0, 0.0, 0.5, 1, 3, inf, nan,
                                       std::copysign(nan, -1.0)}
                 : std::vector<double>{-7, -1, 0, 1, 2, 100};
  auto asc = [](double a, double b) {
    return a < b || (!std::isnan(a) && std::isnan(b));
  };
  ScalarEval ev(c);
  bool isAsc = true, isDesc = true;
  for (double a : probes)
    for (double b : probes) {
      // Other operands' parameters get distinct values; a comparator that
      // reads them gives different answers and is not recognized.
      std::vector<double> params(2 * operands, 0.0);
      params[0] = a;
      params[1] = b;
      for (size_t k = 2; k < params.size(); ++k)
        params[k] = double(k) * 1.5;
      auto r1 = ev.run(params);
      for (size_t k = 2; k < params.size(); ++k)
        params[k] = -double(k) * 7.25;
      auto r2 = ev.run(params);
      if (!r1 || !r2 || (*r1 != 0) != (*r2 != 0))
        return "";
      bool got = *r1 != 0;
      isAsc &= got == asc(a, b);
      isDesc &= got == asc(b, a);
    }
  return isAsc ? "asc" : isDesc ? "desc" : "";
}

/// "ge", "gt", "le" or "lt" when a select-and-scatter select function is
/// `compare(p0, p1)` in that direction (default float order).
std::string recognizeSelect(const HloComputation &c) {
  const HloInstruction &r = c.rootInstruction();
  if (parameterCount(c) != 2 || r.opcode != "compare" || r.operands.size() != 2)
    return "";
  const HloInstruction *p = findInstruction(c, r.operands[0].name);
  const HloInstruction *q = findInstruction(c, r.operands[1].name);
  const HloAttr *d = r.attr("direction");
  const HloAttr *ty = r.attr("type");
  if (!p || !q || !d || p->opcode != "parameter" || q->opcode != "parameter" ||
      p->parameterNumber != 0 || q->parameterNumber != 1 ||
      (ty && ty->value == "TOTALORDER") || isSignlessUnsigned(p->shape.type))
    return "";
  const std::string &dir = d->value;
  return dir == "GE" ? "ge" : dir == "GT" ? "gt" : dir == "LE" ? "le" : dir == "LT" ? "lt" : "";
}

} // namespace mdl::frontend::hlo
