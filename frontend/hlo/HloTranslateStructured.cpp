// Per-opcode translation, structured operations: dot, convolution, reduce,
// reduce-window, select-and-scatter, scatter, sort, map and batch
// normalization.
//
// A plain 2-D dot becomes `matmul` and an NCHW/OIHW convolution with
// symmetric padding becomes `conv2d`; the general forms keep XLA's
// dimension numbers in `dot_general` and `convolution`. Reducers, scatter
// combiners, select functions and sort comparators that are recognized
// (HloRecognize.cpp) become attributes; others become functions named by a
// symbol attribute (`to_apply = @region_0`).
#include "frontend/hlo/HloOpContext.h"
#include "stdlib/Registry.h"

namespace mdl::frontend::hlo {

using namespace ir;

namespace {

struct Structured : OpCtx {
  // All operands as arrays; false after a report.
  bool arrays(std::vector<Value *> &vs) {
    for (size_t i = 0; i < ops.size(); ++i) {
      Value *v = arg(i);
      if (!v)
        return false;
      vs.push_back(v);
    }
    return true;
  }

  // The `window` of an operation over arrays of rank `rank`; nullopt after
  // a report.
  std::optional<HloWindow> windowOver(const HloAttr *wa, int rank) {
    auto win = parseWindow(wa->value);
    if (!win || int(win->size.size()) != rank) {
      t.malformed("window must have one entry per dimension", wa);
      return std::nullopt;
    }
    return win;
  }

  bool finish(Operation *op) {
    if (!op)
      return poison();
    for (auto &r : op->results)
      out.leaves.push_back(r.get());
    return true;
  }

  Value *toType(Value *v, DType d) {
    if (!v || v->type.dtype == d)
      return v;
    return t.emit1(OpKind::Cast, {v}, {{"dtype", Attribute::dtype(d)}},
                   TensorType(d, v->type.dims));
  }

  bool dot() {
    if (!arity(2))
      return poison();
    auto rt = result();
    Value *a = arg(0), *b = arg(1);
    auto lb = ints("lhs_batch_dims", false), rb = ints("rhs_batch_dims", false),
         lc = ints("lhs_contracting_dims", false), rc = ints("rhs_contracting_dims", false);
    if (!rt || !a || !b || !lb || !rb || !lc || !rc)
      return poison();
    DType operand = a->type.dtype;
    if (a->type.dtype != b->type.dtype) {
      operand = rt->dtype;
      a = toType(a, operand);
      b = toType(b, operand);
    }
    if (lb->empty() && rb->empty() && a->type.rank() == 2 && b->type.rank() == 2 &&
        *lc == IntVec{1} && *rc == IntVec{0} && operand == rt->dtype)
      return done(t.emit1(OpKind::Matmul, {a, b}, {}, *rt));
    std::vector<NamedAttr> attrs = {{"lhs_batch", Attribute::intList(*lb)},
                                    {"rhs_batch", Attribute::intList(*rb)},
                                    {"lhs_contract", Attribute::intList(*lc)},
                                    {"rhs_contract", Attribute::intList(*rc)}};
    if (rt->dtype != operand)
      attrs.push_back({"dtype", Attribute::dtype(rt->dtype)});
    return done(t.emit1(OpKind::DotGeneral, {a, b}, attrs, *rt));
  }

  bool convolution() {
    if (!arity(2))
      return poison();
    auto rt = result();
    Value *x = arg(0), *w = arg(1);
    const HloAttr *labels = t.need("dim_labels");
    if (!rt || !x || !w || !labels)
      return poison();
    HloWindow win;
    if (const HloAttr *wa = inst.attr("window")) {
      auto p = parseWindow(wa->value);
      if (!p) {
        t.malformed("window must be {size=AxB stride=... pad=lo_hi... lhs_dilate=... "
                    "rhs_dilate=...}", wa);
        return poison();
      }
      win = *p;
    }
    if (win.reversal) {
      t.unsupported("convolution", "window reversal (rhs_reversal) is not supported");
      return poison();
    }
    int64_t groups = 1, batchGroups = 1;
    if (inst.attr("feature_group_count")) {
      auto g = integer("feature_group_count");
      if (!g)
        return poison();
      groups = *g;
    }
    if (inst.attr("batch_group_count")) {
      auto g = integer("batch_group_count");
      if (!g)
        return poison();
      batchGroups = *g;
    }
    if (x->type.dtype != w->type.dtype) {
      x = toType(x, rt->dtype);
      w = toType(w, rt->dtype);
    }
    IntVec pad = win.padding();
    bool symmetric = true, plain = true;
    for (size_t i = 0; i < win.size.size(); ++i) {
      symmetric &= win.padLo[i] == win.padHi[i] && win.padLo[i] >= 0;
      plain &= win.lhsDilate[i] == 1 && win.rhsDilate[i] == 1;
    }
    if (labels->value == "bf01_oi01->bf01" && win.size.size() == 2 && symmetric && plain &&
        groups == 1 && batchGroups == 1 && x->type.dtype == rt->dtype)
      return done(t.emit1(OpKind::Conv2d, {x, w},
                          {{"stride", Attribute::intList(win.stride)},
                           {"padding", Attribute::intList({win.padLo[0], win.padLo[1]})}},
                          *rt));
    std::vector<NamedAttr> attrs = {{"dim_labels", Attribute::string(labels->value)},
                                    {"strides", Attribute::intList(win.stride)},
                                    {"padding", Attribute::intList(pad)},
                                    {"lhs_dilation", Attribute::intList(win.lhsDilate)},
                                    {"rhs_dilation", Attribute::intList(win.rhsDilate)},
                                    {"feature_groups", Attribute::integer(groups)},
                                    {"batch_groups", Attribute::integer(batchGroups)}};
    if (x->type.dtype != rt->dtype)
      attrs.push_back({"dtype", Attribute::dtype(rt->dtype)});
    return done(t.emit1(OpKind::Convolution, {x, w}, attrs, *rt));
  }

  // reducer = "add" or to_apply = @fn, from the computation in `attr`.
  bool reducerAttrs(const char *attr, size_t n, std::vector<NamedAttr> &attrs,
                    const char *fnAttr = "to_apply", bool combiner = false) {
    const HloComputation *c = t.computationAttr(attr);
    if (!c)
      return false;
    std::string r = n == 1 ? (combiner ? t.recognizeCombiner(*c, unsignedOperand(0))
                                       : t.recognizeReducer(*c, unsignedOperand(0)))
                           : "";
    if (!r.empty()) {
      attrs.push_back({combiner ? "combiner" : "reducer", Attribute::string(r)});
      return true;
    }
    Function *f = t.functionFor(*c);
    attrs.push_back({fnAttr, Attribute::symbol(f->name)});
    return true;
  }

  bool reduce() {
    std::vector<Value *> vs;
    std::vector<TensorType> types;
    if (ops.size() < 2 || ops.size() % 2) {
      t.malformed("reduce takes N inputs and N init values");
      return poison();
    }
    auto dims = ints("dimensions");
    if (!arrays(vs) || !resultTypes(types) || !dims)
      return poison();
    for (size_t i = ops.size() / 2; i < ops.size(); ++i)
      if (!vs[i]->type.isScalar()) {
        t.unsupported("reduce", "init values must be scalars (found " + vs[i]->type.str() + ")");
        return poison();
      }
    std::vector<NamedAttr> attrs = {{"dims", Attribute::intList(*dims)}};
    if (!reducerAttrs("to_apply", ops.size() / 2, attrs))
      return poison();
    return finish(t.emit(OpKind::Reduce, vs, attrs, types));
  }

  bool reduceWindow() {
    std::vector<Value *> vs;
    std::vector<TensorType> types;
    if (ops.size() < 2 || ops.size() % 2) {
      t.malformed("reduce-window takes N inputs and N init values");
      return poison();
    }
    const HloAttr *wa = t.need("window");
    if (!arrays(vs) || !resultTypes(types) || !wa)
      return poison();
    auto win = windowOver(wa, vs[0]->type.rank());
    if (!win)
      return poison();
    IntVec pad = win->padding();
    std::vector<NamedAttr> attrs = {{"window", Attribute::intList(win->size)},
                                    {"strides", Attribute::intList(win->stride)},
                                    {"base_dilation", Attribute::intList(win->lhsDilate)},
                                    {"window_dilation", Attribute::intList(win->rhsDilate)},
                                    {"padding", Attribute::intList(pad)}};
    if (!reducerAttrs("to_apply", ops.size() / 2, attrs))
      return poison();
    return finish(t.emit(OpKind::ReduceWindow, vs, attrs, types));
  }

  bool selectAndScatter() {
    std::vector<Value *> vs;
    if (!arity(3) || !arrays(vs))
      return poison();
    auto rt = result();
    const HloAttr *wa = t.need("window");
    const HloComputation *sel = t.computationAttr("select");
    if (!rt || !wa || !sel)
      return poison();
    auto win = windowOver(wa, vs[0]->type.rank());
    if (!win)
      return poison();
    IntVec pad = win->padding();
    std::vector<NamedAttr> attrs = {{"window", Attribute::intList(win->size)},
                                    {"strides", Attribute::intList(win->stride)},
                                    {"padding", Attribute::intList(pad)}};
    std::string s = recognizeSelect(*sel);
    if (!s.empty())
      attrs.push_back({"select", Attribute::string(s)});
    else
      attrs.push_back({"select_fn", Attribute::symbol(t.functionFor(*sel)->name)});
    std::vector<NamedAttr> sc;
    if (!reducerAttrs("scatter", 1, sc, "scatter_fn"))
      return poison();
    for (NamedAttr &a : sc)
      attrs.push_back({a.name == "reducer" ? "scatter" : a.name, a.value});
    return done(t.emit1(OpKind::SelectAndScatter, vs, attrs, *rt));
  }

  bool scatter() {
    std::vector<Value *> vs;
    std::vector<TensorType> types;
    if (ops.size() < 3 || ops.size() % 2 == 0) {
      t.malformed("scatter takes N operands, the indices and N updates");
      return poison();
    }
    auto win = ints("update_window_dims", false), ins = ints("inserted_window_dims", false),
         toOp = ints("scatter_dims_to_operand_dims", false),
         ib = ints("input_batching_dims", false), sb = ints("scatter_indices_batching_dims", false);
    auto ivd = integer("index_vector_dim");
    if (!arrays(vs) || !resultTypes(types) || !win || !ins || !toOp || !ib || !sb || !ivd)
      return poison();
    size_t n = (ops.size() - 1) / 2;
    if (unsignedOperand(n)) {
      t.unsupported("scatter", "unsigned 32/64-bit scatter indices are not supported");
      return poison();
    }
    std::vector<NamedAttr> attrs = {{"update_window_dims", Attribute::intList(*win)},
                                    {"inserted_window_dims", Attribute::intList(*ins)},
                                    {"scatter_dims_to_operand_dims", Attribute::intList(*toOp)},
                                    {"index_vector_dim", Attribute::integer(*ivd)},
                                    {"input_batching_dims", Attribute::intList(*ib)},
                                    {"scatter_indices_batching_dims", Attribute::intList(*sb)}};
    if (!reducerAttrs("to_apply", n, attrs, "to_apply", true))
      return poison();
    return finish(t.emit(OpKind::Scatter, vs, attrs, types));
  }

  bool sort() {
    std::vector<Value *> vs;
    std::vector<TensorType> types;
    auto dims = ints("dimensions");
    const HloComputation *cmp = t.computationAttr("to_apply");
    if (!atLeast(1) || !arrays(vs) || !resultTypes(types) || !dims || !cmp)
      return poison();
    if (dims->size() != 1) {
      t.malformed("sort needs one dimension", inst.attr("dimensions"));
      return poison();
    }
    bool stable = false;
    if (const HloAttr *s = inst.attr("is_stable"))
      stable = parseBool(s->value).value_or(false);
    std::vector<NamedAttr> attrs = {{"dimension", Attribute::integer((*dims)[0])},
                                    {"is_stable", Attribute::boolean(stable)}};
    std::string order = unsignedOperand(0) ? ""
                        : recognizeSortOrder(*cmp, ops.size(), isFloat(vs[0]->type.dtype));
    if (!order.empty())
      attrs.push_back({"order", Attribute::string(order)});
    else
      attrs.push_back({"comparator", Attribute::symbol(t.functionFor(*cmp)->name)});
    return finish(t.emit(OpKind::Sort, vs, attrs, types));
  }

  bool map() {
    std::vector<Value *> vs;
    auto rt = result();
    const HloComputation *fn = t.computationAttr("to_apply");
    if (!atLeast(1) || !arrays(vs) || !rt || !fn)
      return poison();
    if (auto dims = ints("dimensions", false); dims && !dims->empty() &&
                                                 int(dims->size()) != vs[0]->type.rank()) {
      t.unsupported("map", "map over a subset of the dimensions is not supported");
      return poison();
    }
    return done(t.emit1(OpKind::Map, vs,
                        {{"fn", Attribute::symbol(t.functionFor(*fn)->name)},
                         {"dtype", Attribute::dtype(rt->dtype)}},
                        *rt));
  }

  bool batchNorm(OpKind k, size_t operands) {
    std::vector<Value *> vs;
    std::vector<TensorType> types;
    if (!arity(operands) || !arrays(vs) || !resultTypes(types))
      return poison();
    const HloAttr *eps = t.need("epsilon");
    auto fi = integer("feature_index");
    if (!eps || !fi)
      return poison();
    auto e = parseReal(eps->value);
    if (!e) {
      t.malformed("epsilon must be a number", eps);
      return poison();
    }
    return finish(t.emit(k, vs,
                         {{"epsilon", Attribute::real(*e)}, {"feature_index", Attribute::integer(*fi)}},
                         types));
  }
};

} // namespace

bool translateStructured(Translator &t, const HloInstruction &inst,
                         const std::vector<const HVal *> &ops, HVal &out) {
  Structured s{{t, inst, ops, out}};
  const std::string &op = inst.opcode;
  if (op == "dot")
    return s.dot();
  if (op == "convolution")
    return s.convolution();
  if (op == "reduce")
    return s.reduce();
  if (op == "reduce-window")
    return s.reduceWindow();
  if (op == "select-and-scatter")
    return s.selectAndScatter();
  if (op == "scatter")
    return s.scatter();
  if (op == "sort")
    return s.sort();
  if (op == "map")
    return s.map();
  if (op == "batch-norm-training")
    return s.batchNorm(OpKind::BatchNormTraining, 3);
  if (op == "batch-norm-inference")
    return s.batchNorm(OpKind::BatchNormInference, 5);
  if (op == "batch-norm-grad")
    return s.batchNorm(OpKind::BatchNormGrad, 5);
  return false;
}

} // namespace mdl::frontend::hlo
