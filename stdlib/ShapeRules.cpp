// Shape and element-type rules of the core operations (the table, Ops.def,
// names the rule of each kind).
//
// Each rule receives operand types (after weak literals took their dtype)
// and the operation's attributes, canonicalizes the attributes (defaults
// filled in, axes made non-negative) and returns result types or a
// RuleError. Rules work on symbolic shapes: a symbol matches only itself or
// a static size it may be bound to, and a size a rule cannot name before
// specialization becomes `?`. The specializer runs the same rules again on
// static shapes, so every run-time program is fully checked.
#include "stdlib/ShapeRules.h"
#include "stdlib/RuleSupport.h"

#include <algorithm>
#include <map>
#include <set>

namespace mdl::stdlib {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::NamedAttr;
using ir::Shape;
using ir::TensorType;

namespace rules {

InferResult ok1(TensorType t) { return ok({std::move(t)}); }

int64_t intOf(std::vector<NamedAttr> &attrs, const char *name, int64_t d) {
  Attribute *a = findAttr(attrs, name);
  return a && a->kind() == Attribute::Kind::Int ? a->asInt() : d;
}

std::string shapeStr(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

std::string dt(DType t) { return ir::dtypeName(t); }

std::string axisRangeMsg(int64_t axis, int rank) {
  return "axis " + std::to_string(axis) + " is out of range for a rank-" +
         std::to_string(rank) + " tensor";
}

bool sameDType(const std::vector<TensorType> &ops, InferResult &err,
               const char *what) {
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i].dtype != ops[0].dtype) {
      err = fail("E0201", std::string(what) + " operands have different element types: " +
                              dt(ops[0].dtype) + " and " + dt(ops[i].dtype) +
                              " (use cast(x, " + dt(ops[0].dtype) + "))",
                 int(i));
      return false;
    }
  return true;
}

bool broadcastAll(const std::vector<TensorType> &ops, Shape &out,
                  InferResult &err) {
  out = ops[0].dims;
  for (size_t i = 1; i < ops.size(); ++i) {
    Shape next;
    int bad = -1;
    if (!broadcastShapes(out, ops[i].dims, next, bad)) {
      std::string msg = "shapes " + shapeStr(out) + " and " +
                        shapeStr(ops[i].dims) + " are not broadcastable";
      err = fail("E0202", msg, int(i));
      return false;
    }
    out = std::move(next);
  }
  return true;
}

// --- Elementwise -----------------------------------------------------------

InferResult unaryFloat(const std::vector<TensorType> &ops,
                       std::vector<NamedAttr> &) {
  if (!ir::isFloat(ops[0].dtype))
    return fail("E0201", "expected a floating-point operand, found " +
                             dt(ops[0].dtype) + " (use cast(x, f32))", 0);
  return ok1(ops[0]);
}

InferResult unaryNumeric(const std::vector<TensorType> &ops,
                         std::vector<NamedAttr> &) {
  if (ops[0].dtype == DType::Bool)
    return fail("E0201", "expected a numeric operand, found bool", 0);
  return ok1(ops[0]);
}

InferResult unaryBool(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &) {
  if (ops[0].dtype != DType::Bool)
    return fail("E0201", "'!' expects a bool operand, found " + dt(ops[0].dtype), 0);
  return ok1(ops[0]);
}

InferResult binaryArith(const std::vector<TensorType> &ops,
                        std::vector<NamedAttr> &) {
  InferResult err;
  if (!sameDType(ops, err, "arithmetic"))
    return err;
  if (ops[0].dtype == DType::Bool)
    return fail("E0201", "arithmetic on bool operands (use cast(x, i32) or && / ||)", 0);
  Shape s;
  if (!broadcastAll(ops, s, err))
    return err;
  return ok1(TensorType(ops[0].dtype, s));
}

InferResult comparison(const std::vector<TensorType> &ops,
                       std::vector<NamedAttr> &) {
  InferResult err;
  if (!sameDType(ops, err, "comparison"))
    return err;
  Shape s;
  if (!broadcastAll(ops, s, err))
    return err;
  return ok1(TensorType(DType::Bool, s));
}

InferResult logic(const std::vector<TensorType> &ops,
                  std::vector<NamedAttr> &) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].dtype != DType::Bool)
      return fail("E0201", "logical operators expect bool operands, found " +
                               dt(ops[i].dtype), int(i));
  InferResult err;
  Shape s;
  if (!broadcastAll(ops, s, err))
    return err;
  return ok1(TensorType(DType::Bool, s));
}

InferResult clip(const std::vector<TensorType> &ops,
                 std::vector<NamedAttr> &attrs) {
  return binaryArith(ops, attrs);
}

InferResult select(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &) {
  if (ops[0].dtype != DType::Bool)
    return fail("E0201", "select condition must be bool, found " + dt(ops[0].dtype), 0);
  if (ops[1].dtype != ops[2].dtype)
    return fail("E0201", "select branches have different element types: " +
                             dt(ops[1].dtype) + " and " + dt(ops[2].dtype), 2);
  InferResult err;
  Shape s;
  if (!broadcastAll(ops, s, err))
    return err;
  return ok1(TensorType(ops[1].dtype, s));
}

InferResult cast(const std::vector<TensorType> &ops,
                 std::vector<NamedAttr> &attrs) {
  Attribute *t = findAttr(attrs, "dtype");
  if (!t || t->kind() != Attribute::Kind::DType)
    return fail("E0204", "cast needs an element type: cast(x, f32)");
  return ok1(TensorType(t->asDType(), ops[0].dims));
}

InferResult passThrough(const std::vector<TensorType> &ops,
                        std::vector<NamedAttr> &) {
  return ok1(ops[0]);
}

// --- Reductions ------------------------------------------------------------

bool canonicalAxes(std::vector<NamedAttr> &attrs, int rank,
                   std::vector<int64_t> &axes, InferResult &err) {
  Attribute *a = findAttr(attrs, "axis");
  if (!a) {
    for (int i = 0; i < rank; ++i)
      axes.push_back(i);
  } else {
    std::vector<int64_t> raw = a->kind() == Attribute::Kind::Int
                                   ? std::vector<int64_t>{a->asInt()}
                                   : a->asIntList();
    for (int64_t x : raw) {
      int64_t n = x;
      if (!normalizeAxis(n, rank)) {
        err = fail("E0204", axisRangeMsg(x, rank));
        return false;
      }
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) {
        err = fail("E0204", "axis " + std::to_string(x) + " appears twice");
        return false;
      }
      axes.push_back(n);
    }
    std::sort(axes.begin(), axes.end());
  }
  setAttr(attrs, "axis", Attribute::intList(axes));
  return true;
}

InferResult reduction(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &attrs, bool needFloat) {
  const TensorType &x = ops[0];
  if (x.dtype == DType::Bool)
    return fail("E0201", "reduction of a bool tensor (use cast(x, i64))", 0);
  if (needFloat && !ir::isFloat(x.dtype))
    return fail("E0201", "mean expects a floating-point operand, found " +
                             dt(x.dtype) + " (use cast(x, f32))", 0);
  InferResult err;
  std::vector<int64_t> axes;
  if (!canonicalAxes(attrs, x.rank(), axes, err))
    return err;
  Attribute *kd = findAttr(attrs, "keepdims");
  bool keep = kd && kd->kind() == Attribute::Kind::Bool && kd->asBool();
  if (!kd)
    setAttr(attrs, "keepdims", Attribute::boolean(false));
  Shape s;
  for (int i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      s.push_back(x.dims[i]);
    else if (keep)
      s.push_back(Dim::of(1));
  }
  return ok1(TensorType(x.dtype, s));
}

InferResult reduceAny(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &attrs) {
  return reduction(ops, attrs, false);
}

InferResult reduceMean(const std::vector<TensorType> &ops,
                       std::vector<NamedAttr> &attrs) {
  return reduction(ops, attrs, true);
}

InferResult argReduce(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  if (x.dtype == DType::Bool)
    return fail("E0201", "argmax/argmin of a bool tensor (use cast(x, i32))", 0);
  Attribute *a = findAttr(attrs, "axis");
  if (!a)
    return ok1(TensorType::scalar(DType::I64)); // over the flattened tensor
  int64_t axis = a->asInt();
  if (!normalizeAxis(axis, x.rank()))
    return fail("E0204", axisRangeMsg(a->asInt(), x.rank()));
  *a = Attribute::integer(axis);
  Shape s = x.dims;
  s.erase(s.begin() + axis);
  return ok1(TensorType(DType::I64, s));
}

// --- Linear algebra ----------------------------------------------------------

InferResult matmul(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &) {
  const TensorType &a = ops[0], &b = ops[1];
  InferResult err;
  if (!sameDType(ops, err, "matmul"))
    return err;
  if (a.dtype == DType::Bool)
    return fail("E0201", "matmul of bool operands", 0);
  if (a.rank() == 0 || b.rank() == 0)
    return fail("E0202", "matmul operands must have at least one dimension "
                         "(use * for scalars)", a.rank() == 0 ? 0 : 1);
  Shape as = a.dims, bs = b.dims;
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), Dim::of(1));
  if (bVec)
    bs.push_back(Dim::of(1));
  const Dim &ka = as[as.size() - 1], &kb = bs[bs.size() - 2];
  if (!ir::dimsCompatible(ka, kb) ||
      (ka.isSymbol() && kb.isStatic()) || (ka.isStatic() && kb.isSymbol())) {
    // A symbol against a static size is only an error when the binding says
    // so; the specializer re-checks with static sizes.
    if (!(ka.isSymbol() || kb.isSymbol()))
      return fail("E0203", "matmul contraction mismatch: lhs has " + ka.str() +
                               " columns, rhs has " + kb.str() + " rows", 1);
  }
  Shape batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
  Shape batch;
  int bad;
  if (!broadcastShapes(batchA, batchB, batch, bad))
    return fail("E0202", "matmul batch dimensions " + shapeStr(batchA) +
                             " and " + shapeStr(batchB) + " are not broadcastable", 1);
  Shape s = batch;
  if (!aVec)
    s.push_back(as[as.size() - 2]);
  if (!bVec)
    s.push_back(bs[bs.size() - 1]);
  return ok1(TensorType(a.dtype, s));
}

InferResult transpose(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  std::vector<int64_t> perm;
  Attribute *a = findAttr(attrs, "perm");
  if (!a) {
    for (int i = x.rank() - 1; i >= 0; --i)
      perm.push_back(i);
  } else {
    perm = a->asIntList();
    if (int(perm.size()) != x.rank())
      return fail("E0204", "perm has " + std::to_string(perm.size()) +
                               " entries for a rank-" + std::to_string(x.rank()) + " tensor");
    std::vector<bool> seen(perm.size());
    for (int64_t &p : perm) {
      int64_t orig = p;
      if (!normalizeAxis(p, x.rank()) || seen[p])
        return fail("E0204", "perm is not a permutation (entry " +
                                 std::to_string(orig) + ")");
      seen[p] = true;
    }
  }
  setAttr(attrs, "perm", Attribute::intList(perm));
  Shape s;
  for (int64_t p : perm)
    s.push_back(x.dims[p]);
  return ok1(TensorType(x.dtype, s));
}

// --- Shape ---------------------------------------------------------------------

// Static product and symbol multiset of a shape; false if it has `?`.
bool factor(const Shape &s, int64_t &prod, std::multiset<std::string> &syms) {
  prod = 1;
  for (const Dim &d : s) {
    if (d.isUnknown())
      return false;
    if (d.isStatic())
      prod *= d.size;
    else
      syms.insert(d.sym);
  }
  return true;
}

InferResult reshape(const std::vector<TensorType> &ops,
                    std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  Attribute *a = findAttr(attrs, "shape");
  if (!a || a->kind() != Attribute::Kind::DimList)
    return fail("E0204", "reshape needs a target shape: reshape(x, [2, 3])");
  Shape target = a->asDimList();
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].isStatic() && target[i].size == -1) {
      if (infer >= 0)
        return fail("E0204", "reshape allows only one -1");
      infer = int(i);
    } else if (target[i].isStatic() && target[i].size < 0) {
      return fail("E0204", "reshape size " + std::to_string(target[i].size) +
                               " is negative");
    }
  }
  int64_t inProd, outProd;
  std::multiset<std::string> inSyms, outSyms;
  Shape rest = target;
  if (infer >= 0)
    rest.erase(rest.begin() + infer);
  bool known = factor(x.dims, inProd, inSyms) && factor(rest, outProd, outSyms);
  std::string what = "cannot reshape " + x.str() + " into " + shapeStr(target);
  if (infer < 0) {
    if (known && inSyms == outSyms && inProd != outProd)
      return fail("E0202", what + ": " + std::to_string(inProd) + " elements vs " +
                               std::to_string(outProd), 0);
    return ok1(TensorType(x.dtype, target));
  }
  Dim inferred = Dim::unknown();
  if (known) {
    // The -1 takes the symbols left over and the static ratio.
    bool subset = std::includes(inSyms.begin(), inSyms.end(), outSyms.begin(),
                                outSyms.end());
    if (subset) {
      std::multiset<std::string> left;
      std::set_difference(inSyms.begin(), inSyms.end(), outSyms.begin(),
                          outSyms.end(), std::inserter(left, left.begin()));
      if (outProd == 0 || inProd % outProd != 0) {
        if (left.empty())
          return fail("E0202", what + ": " + std::to_string(inProd) +
                                   " elements do not divide into rows of " +
                                   std::to_string(outProd), 0);
      } else if (left.empty()) {
        inferred = Dim::of(inProd / outProd);
      } else if (left.size() == 1 && inProd == outProd) {
        inferred = Dim::symbol(*left.begin());
      }
    }
  }
  target[infer] = inferred;
  return ok1(TensorType(x.dtype, target));
}

InferResult broadcastTo(const std::vector<TensorType> &ops,
                        std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  Attribute *a = findAttr(attrs, "shape");
  if (!a || a->kind() != Attribute::Kind::DimList)
    return fail("E0204", "broadcast_to needs a target shape");
  const Shape &target = a->asDimList();
  Shape out;
  int bad;
  if (int(target.size()) < x.rank() ||
      !broadcastShapes(x.dims, target, out, bad) || !(out == target)) {
    bool symbolic = false;
    for (const Dim &d : x.dims)
      symbolic |= !d.isStatic();
    for (const Dim &d : target)
      symbolic |= !d.isStatic();
    if (!symbolic || int(target.size()) < x.rank())
      return fail("E0202", "cannot broadcast " + x.str() + " to " + shapeStr(target), 0);
  }
  return ok1(TensorType(x.dtype, target));
}

InferResult concat(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &attrs) {
  InferResult err;
  if (!sameDType(ops, err, "concat"))
    return err;
  int rank = ops[0].rank();
  int64_t axis = intOf(attrs, "axis", 0);
  if (rank == 0)
    return fail("E0202", "concat of scalars (use stack)", 0);
  if (!normalizeAxis(axis, rank))
    return fail("E0204", axisRangeMsg(intOf(attrs, "axis", 0), rank));
  setAttr(attrs, "axis", Attribute::integer(axis));
  Shape s = ops[0].dims;
  for (size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].rank() != rank)
      return fail("E0202", "concat operands have ranks " + std::to_string(rank) +
                               " and " + std::to_string(ops[i].rank()), int(i));
    for (int d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      if (!ir::dimsCompatible(s[d], ops[i].dims[d]) &&
          s[d].isStatic() && ops[i].dims[d].isStatic())
        return fail("E0202", "concat operands differ in dimension " +
                                 std::to_string(d) + ": " + ops[0].str() +
                                 " vs " + ops[i].str(), int(i));
    }
    const Dim &x = s[axis], &y = ops[i].dims[axis];
    s[axis] = x.isStatic() && y.isStatic() ? Dim::of(x.size + y.size) : Dim::unknown();
  }
  return ok1(TensorType(ops[0].dtype, s));
}

InferResult stack(const std::vector<TensorType> &ops,
                  std::vector<NamedAttr> &attrs) {
  InferResult err;
  if (!sameDType(ops, err, "stack"))
    return err;
  int rank = ops[0].rank();
  for (size_t i = 1; i < ops.size(); ++i) {
    Shape tmp;
    if (ops[i].rank() != rank ||
        !ir::typesCompatible(TensorType(ops[0].dtype, ops[i].dims), ops[0]))
      return fail("E0202", "stack operands have different shapes: " +
                               ops[0].str() + " and " + ops[i].str(), int(i));
  }
  int64_t axis = intOf(attrs, "axis", 0);
  if (!normalizeAxis(axis, rank + 1))
    return fail("E0204", axisRangeMsg(intOf(attrs, "axis", 0), rank + 1));
  setAttr(attrs, "axis", Attribute::integer(axis));
  Shape s = ops[0].dims;
  s.insert(s.begin() + axis, Dim::of(int64_t(ops.size())));
  return ok1(TensorType(ops[0].dtype, s));
}

InferResult expandDims(const std::vector<TensorType> &ops,
                       std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  int64_t axis = intOf(attrs, "axis", 0);
  if (!normalizeAxis(axis, x.rank() + 1))
    return fail("E0204", axisRangeMsg(intOf(attrs, "axis", 0), x.rank() + 1));
  setAttr(attrs, "axis", Attribute::integer(axis));
  Shape s = x.dims;
  s.insert(s.begin() + axis, Dim::of(1));
  return ok1(TensorType(x.dtype, s));
}

InferResult squeeze(const std::vector<TensorType> &ops,
                    std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  Attribute *a = findAttr(attrs, "axis");
  std::vector<int64_t> axes;
  if (!a) {
    for (int i = 0; i < x.rank(); ++i)
      if (x.dims[i].isStatic() && x.dims[i].size == 1)
        axes.push_back(i);
  } else {
    // An integer as written, or the canonical list.
    std::vector<int64_t> raw = a->kind() == Attribute::Kind::Int
                                   ? std::vector<int64_t>{a->asInt()}
                                   : a->asIntList();
    for (int64_t given : raw) {
      int64_t axis = given;
      if (!normalizeAxis(axis, x.rank()))
        return fail("E0204", axisRangeMsg(given, x.rank()));
      const Dim &d = x.dims[axis];
      if (d.isStatic() && d.size != 1)
        return fail("E0202", "cannot squeeze axis " + std::to_string(axis) +
                                 " of " + x.str() + ": its size is " + d.str(), 0);
      axes.push_back(axis);
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  }
  setAttr(attrs, "axis", Attribute::intList(axes));
  Shape s;
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end())
      s.push_back(x.dims[i]);
  return ok1(TensorType(x.dtype, s));
}

InferResult slice(const std::vector<TensorType> &ops,
                  std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  Attribute *st = findAttr(attrs, "start"), *sp = findAttr(attrs, "stop"),
            *se = findAttr(attrs, "step");
  if (!st || !sp || !se)
    return fail("E0204", "slice needs start, stop and step");
  std::vector<int64_t> start = st->asIntList(), stop = sp->asIntList(),
                       step = se->asIntList();
  std::vector<int64_t> drop;
  if (Attribute *d = findAttr(attrs, "drop"))
    drop = d->asIntList();
  else
    setAttr(attrs, "drop", Attribute::intList({}));
  if (int(start.size()) != x.rank() || int(stop.size()) != x.rank() ||
      int(step.size()) != x.rank())
    return fail("E0210", "too many indices for a rank-" + std::to_string(x.rank()) +
                             " tensor", 0);
  Shape s;
  for (int i = 0; i < x.rank(); ++i) {
    bool dropped = std::find(drop.begin(), drop.end(), i) != drop.end();
    const Dim &d = x.dims[i];
    if (step[i] == 0)
      return fail("E0204", "slice step cannot be zero");
    if (dropped) {
      if (d.isStatic() && (start[i] < -d.size || start[i] >= d.size))
        return fail("E0210", "index " + std::to_string(start[i]) +
                                 " is out of range for axis " + std::to_string(i) +
                                 " with size " + std::to_string(d.size), 0);
      continue;
    }
    if (!d.isStatic()) {
      bool whole = start[i] == 0 && stop[i] == INT64_MAX && step[i] == 1;
      s.push_back(whole ? d : Dim::unknown());
      continue;
    }
    int64_t len = normalizeSliceDim(d.size, start[i], stop[i], step[i]).len;
    s.push_back(Dim::of(len));
  }
  return ok1(TensorType(x.dtype, s));
}

InferResult dynamicIndex(const std::vector<TensorType> &ops,
                         std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0], &i = ops[1];
  if (!ir::isInteger(i.dtype) || !i.isScalar())
    return fail("E0201", "an index must be an integer scalar, found " + i.str(), 1);
  int64_t axis = intOf(attrs, "axis", 0);
  if (!normalizeAxis(axis, x.rank()))
    return fail("E0210", "too many indices for a rank-" + std::to_string(x.rank()) +
                             " tensor", 0);
  setAttr(attrs, "axis", Attribute::integer(axis));
  Shape s = x.dims;
  s.erase(s.begin() + axis);
  return ok1(TensorType(x.dtype, s));
}

InferResult gather(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0], &idx = ops[1];
  if (!ir::isInteger(idx.dtype))
    return fail("E0201", "gather indices must be integers, found " + dt(idx.dtype), 1);
  int64_t axis = intOf(attrs, "axis", 0);
  if (!normalizeAxis(axis, x.rank()))
    return fail("E0204", axisRangeMsg(intOf(attrs, "axis", 0), x.rank()));
  setAttr(attrs, "axis", Attribute::integer(axis));
  Shape s(x.dims.begin(), x.dims.begin() + axis);
  s.insert(s.end(), idx.dims.begin(), idx.dims.end());
  s.insert(s.end(), x.dims.begin() + axis + 1, x.dims.end());
  return ok1(TensorType(x.dtype, s));
}

InferResult pad(const std::vector<TensorType> &ops,
                std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  Attribute *p = findAttr(attrs, "pads");
  if (!p || p->kind() != Attribute::Kind::IntList)
    return fail("E0204", "pad needs widths: pad(x, [[lo, hi], ...])");
  const std::vector<int64_t> w = p->asIntList(); // a copy: setAttr below may reallocate attrs
  if (int(w.size()) != 2 * x.rank())
    return fail("E0204", "pad has " + std::to_string(w.size() / 2) +
                             " [lo, hi] pairs for a rank-" + std::to_string(x.rank()) +
                             " tensor");
  Shape s;
  for (int i = 0; i < x.rank(); ++i) {
    if (w[2 * i] < 0 || w[2 * i + 1] < 0)
      return fail("E0204", "pad widths must not be negative");
    const Dim &d = x.dims[i];
    s.push_back(d.isStatic() ? Dim::of(d.size + w[2 * i] + w[2 * i + 1])
                : (w[2 * i] + w[2 * i + 1] == 0 ? d : Dim::unknown()));
  }
  return ok1(TensorType(x.dtype, s));
}

// --- Neural ------------------------------------------------------------------

InferResult softmax(const std::vector<TensorType> &ops,
                    std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  if (!ir::isFloat(x.dtype))
    return fail("E0201", "softmax expects a floating-point operand, found " + dt(x.dtype), 0);
  if (x.rank() == 0)
    return fail("E0202", "softmax of a scalar", 0);
  int64_t axis = intOf(attrs, "axis", -1);
  if (!normalizeAxis(axis, x.rank()))
    return fail("E0204", axisRangeMsg(intOf(attrs, "axis", -1), x.rank()));
  setAttr(attrs, "axis", Attribute::integer(axis));
  return ok1(x);
}

InferResult layernorm(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &attrs) {
  InferResult r = softmax({ops[0]}, attrs);
  if (!r.ok())
    return r;
  InferResult err;
  if (!sameDType(ops, err, "layernorm"))
    return err;
  for (int i = 1; i < 3; ++i) {
    Shape s;
    int bad;
    if (!broadcastShapes(ops[0].dims, ops[i].dims, s, bad) ||
        int(s.size()) != ops[0].rank())
      return fail("E0202", std::string(i == 1 ? "gamma " : "beta ") +
                               ops[i].str() + " does not broadcast to " +
                               ops[0].str(), i);
  }
  return ok1(ops[0]);
}

bool intPair(std::vector<NamedAttr> &attrs, const char *name,
             std::vector<int64_t> dflt, std::vector<int64_t> &out) {
  Attribute *a = findAttr(attrs, name);
  if (!a)
    out = dflt;
  else if (a->kind() == Attribute::Kind::Int)
    out = {a->asInt(), a->asInt()};
  else
    out = a->asIntList();
  if (out.size() != 2)
    return false;
  setAttr(attrs, name, Attribute::intList(out));
  return true;
}

Dim windowOut(const Dim &in, int64_t k, int64_t stride, int64_t pad) {
  if (!in.isStatic())
    return Dim::unknown();
  int64_t n = in.size + 2 * pad - k;
  return Dim::of(n < 0 ? 0 : n / stride + 1);
}

InferResult conv2d(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0], &w = ops[1];
  InferResult err;
  if (!sameDType(ops, err, "conv2d"))
    return err;
  if (!ir::isFloat(x.dtype))
    return fail("E0201", "conv2d expects floating-point operands", 0);
  if (x.rank() != 4)
    return fail("E0202", "conv2d input must be NCHW (rank 4), found " + x.str(), 0);
  if (w.rank() != 4)
    return fail("E0202", "conv2d weight must be OIHW (rank 4), found " + w.str(), 1);
  if (x.dims[1].isStatic() && w.dims[1].isStatic() && x.dims[1].size != w.dims[1].size)
    return fail("E0202", "conv2d channels differ: input has " + x.dims[1].str() +
                             ", weight expects " + w.dims[1].str(), 1);
  std::vector<int64_t> stride, padding;
  if (!intPair(attrs, "stride", {1, 1}, stride) ||
      !intPair(attrs, "padding", {0, 0}, padding))
    return fail("E0204", "stride and padding are an integer or [h, w]");
  if (stride[0] <= 0 || stride[1] <= 0 || padding[0] < 0 || padding[1] < 0)
    return fail("E0204", "stride must be positive and padding not negative");
  if (!w.dims[2].isStatic() || !w.dims[3].isStatic())
    return ok1(TensorType(x.dtype, {x.dims[0], w.dims[0], Dim::unknown(), Dim::unknown()}));
  Dim h = windowOut(x.dims[2], w.dims[2].size, stride[0], padding[0]);
  Dim ww = windowOut(x.dims[3], w.dims[3].size, stride[1], padding[1]);
  if ((h.isStatic() && h.size <= 0) || (ww.isStatic() && ww.size <= 0))
    return fail("E0202", "conv2d kernel " + w.str() + " is larger than the padded input " + x.str(), 1);
  return ok1(TensorType(x.dtype, {x.dims[0], w.dims[0], h, ww}));
}

InferResult pool2d(const std::vector<TensorType> &ops,
                   std::vector<NamedAttr> &attrs) {
  const TensorType &x = ops[0];
  if (!ir::isFloat(x.dtype))
    return fail("E0201", "pooling expects a floating-point operand", 0);
  if (x.rank() != 4)
    return fail("E0202", "pooling input must be NCHW (rank 4), found " + x.str(), 0);
  std::vector<int64_t> size, stride;
  if (!intPair(attrs, "size", {}, size))
    return fail("E0204", "pool size is an integer or [h, w]");
  if (!intPair(attrs, "stride", size, stride))
    return fail("E0204", "pool stride is an integer or [h, w]");
  if (size[0] <= 0 || size[1] <= 0 || stride[0] <= 0 || stride[1] <= 0)
    return fail("E0204", "pool size and stride must be positive");
  Dim h = windowOut(x.dims[2], size[0], stride[0], 0);
  Dim w = windowOut(x.dims[3], size[1], stride[1], 0);
  if ((h.isStatic() && h.size <= 0) || (w.isStatic() && w.size <= 0))
    return fail("E0202", "pool window is larger than the input " + x.str(), 0);
  return ok1(TensorType(x.dtype, {x.dims[0], x.dims[1], h, w}));
}

InferResult embedding(const std::vector<TensorType> &ops,
                      std::vector<NamedAttr> &) {
  const TensorType &table = ops[0], &ids = ops[1];
  if (table.rank() != 2)
    return fail("E0202", "embedding table must be rank 2, found " + table.str(), 0);
  if (!ir::isInteger(ids.dtype))
    return fail("E0201", "embedding ids must be integers, found " + dt(ids.dtype), 1);
  Shape s = ids.dims;
  s.push_back(table.dims[1]);
  return ok1(TensorType(table.dtype, s));
}

// --- Creation ------------------------------------------------------------------

InferResult fromTypeAttr(const std::vector<TensorType> &,
                         std::vector<NamedAttr> &attrs) {
  Attribute *t = findAttr(attrs, "type");
  if (!t || t->kind() != Attribute::Kind::Type)
    return fail("E0204", "expected a tensor type such as f32[3, 4]");
  for (const Dim &d : t->asType().dims)
    if (d.isStatic() && d.size < 0)
      return fail("E0204", "negative dimension in " + t->asType().str());
  return ok1(t->asType());
}

InferResult fullRule(const std::vector<TensorType> &ops,
                     std::vector<NamedAttr> &attrs) {
  if (!findAttr(attrs, "value"))
    return fail("E0204", "full needs a value: full(f32[2], 1.5)");
  return fromTypeAttr(ops, attrs);
}

InferResult randomRule(const std::vector<TensorType> &ops,
                       std::vector<NamedAttr> &attrs) {
  InferResult r = fromTypeAttr(ops, attrs);
  if (r.ok() && !ir::isFloat(r.types[0].dtype))
    return fail("E0201", "random tensors must have a floating-point type");
  return r;
}

InferResult arange(const std::vector<TensorType> &,
                   std::vector<NamedAttr> &attrs) {
  Attribute *n = findAttr(attrs, "n");
  if (!n || n->kind() != Attribute::Kind::DimList || n->asDimList().size() != 1)
    return fail("E0204", "arange needs a length: arange(10)");
  const Dim &d = n->asDimList()[0];
  if (d.isStatic() && d.size < 0)
    return fail("E0204", "arange length " + std::to_string(d.size) + " is negative");
  return ok1(TensorType(DType::I64, {d}));
}

InferResult noResults(const std::vector<TensorType> &,
                      std::vector<NamedAttr> &) {
  return ok({});
}

} // namespace rules

SliceDim normalizeSliceDim(int64_t n, int64_t b, int64_t e, int64_t k) {
  // Python slice normalization; INT64_MAX means "omitted".
  auto clampIdx = [&](int64_t v) {
    if (v < 0)
      v += n;
    return k > 0 ? std::clamp<int64_t>(v, 0, n)
                 : std::clamp<int64_t>(v, -1, n - 1);
  };
  int64_t lo, hi;
  if (k > 0) {
    lo = b == INT64_MAX ? 0 : clampIdx(b);
    hi = e == INT64_MAX ? n : clampIdx(e);
  } else {
    lo = b == INT64_MAX ? n - 1 : clampIdx(b);
    hi = e == INT64_MAX ? -1 : clampIdx(e);
  }
  int64_t len = k > 0 ? (hi > lo ? (hi - lo + k - 1) / k : 0)
                      : (lo > hi ? (lo - hi + (-k) - 1) / (-k) : 0);
  return SliceDim{lo, k, len};
}

bool normalizeAxis(int64_t &axis, int rank) {
  if (axis < -rank || axis >= rank)
    return false;
  if (axis < 0)
    axis += rank;
  return true;
}

bool broadcastShapes(const Shape &a, const Shape &b, Shape &out, int &badAxis) {
  size_t n = std::max(a.size(), b.size());
  out.assign(n, Dim::of(1));
  for (size_t i = 0; i < n; ++i) {
    const Dim one = Dim::of(1);
    const Dim &x = i < n - a.size() ? one : a[i - (n - a.size())];
    const Dim &y = i < n - b.size() ? one : b[i - (n - b.size())];
    if (x.isStatic() && y.isStatic()) {
      if (x.size == y.size || y.size == 1)
        out[i] = x;
      else if (x.size == 1)
        out[i] = y;
      else {
        badAxis = int(i);
        return false;
      }
    } else if (x.isStatic() && x.size == 1) {
      out[i] = y;
    } else if (y.isStatic() && y.size == 1) {
      out[i] = x;
    } else if (x == y) {
      out[i] = x;
    } else if (x.isStatic()) {
      out[i] = x; // the symbol must be bound to x.size (or 1)
    } else if (y.isStatic()) {
      out[i] = y;
    } else {
      out[i] = Dim::unknown();
    }
  }
  return true;
}

} // namespace mdl::stdlib
