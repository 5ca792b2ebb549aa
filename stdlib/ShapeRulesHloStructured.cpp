// Shape rules of the structured HLO import operations: gather and scatter
// with XLA dimension numbers, sort, map, dot_general, convolution with
// dimension labels and groups, reduce, reduce_window, select_and_scatter and
// batch normalization. They follow XLA's shape inference and check every
// index an attribute names, so a kernel never sees an attribute that would
// make it read out of bounds.
#include "stdlib/ConvLabels.h"
#include "stdlib/ShapeRulesHloSupport.h"

namespace mdl::stdlib::hlorules {

namespace {

bool sameDims(const TensorType &a, const TensorType &b) {
  if (a.rank() != b.rank())
    return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!sameSize(a.dims[i], b.dims[i]))
      return false;
  return true;
}

bool hasFunction(Attrs &attrs, const char *name) {
  Attribute *a = findAttr(attrs, name);
  return a && a->kind() == Attribute::Kind::Symbol;
}

bool knownReducer(const std::string &r) {
  return r.empty() || r == "add" || r == "mul" || r == "max" || r == "min" || r == "and" ||
         r == "or";
}

// The reducer of reduce / reduce_window: a recognized name or a function.
bool reducerOk(Attrs &attrs, size_t n, InferResult &err) {
  std::string r = strOf(attrs, "reducer");
  if (!knownReducer(r)) {
    err = bad("unknown reducer \"" + r + "\" (add, mul, max, min, and, or, or to_apply = FN)");
    return false;
  }
  if (r.empty() && !hasFunction(attrs, "to_apply")) {
    err = bad("a reduction needs reducer = \"add\" (mul, max, min, and, or) or to_apply = FN");
    return false;
  }
  if (!r.empty() && n != 1) {
    err = bad("a named reducer applies to one input; use to_apply = FN for several");
    return false;
  }
  return true;
}

// Splits 2N operands into N inputs (same shape) and N scalar inits.
bool inputsAndInits(const Ops &ops, size_t &n, InferResult &err) {
  if (ops.size() < 2 || ops.size() % 2) {
    err = bad("expected as many init values as inputs");
    return false;
  }
  n = ops.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    if (!sameDims(ops[i], ops[0])) {
      err = fail("E0202", "inputs have different shapes: " + ops[0].str() + " and " + ops[i].str(),
                 int(i));
      return false;
    }
    const TensorType &init = ops[n + i];
    if (!init.isScalar() || init.dtype != ops[i].dtype) {
      err = fail("E0201", "init value " + std::to_string(i) + " must be a " + dt(ops[i].dtype) +
                              " scalar, found " + init.str(), int(n + i));
      return false;
    }
  }
  return true;
}


} // namespace

InferResult gatherRule(const Ops &ops, Attrs &attrs) {
  const TensorType &x = ops[0], &idx = ops[1];
  if (!ir::isInteger(idx.dtype))
    return fail("E0201", "gather indices must be integers, found " + dt(idx.dtype), 1);
  Ints offset, collapsed, startMap, slice, obatch, ibatch;
  if (!intList(attrs, "offset_dims", {}, offset) || !intList(attrs, "collapsed_slice_dims", {}, collapsed) ||
      !intList(attrs, "start_index_map", {}, startMap) || !intList(attrs, "slice_sizes", {}, slice) ||
      !intList(attrs, "operand_batching_dims", {}, obatch) ||
      !intList(attrs, "start_indices_batching_dims", {}, ibatch))
    return bad("gather dimension numbers must be integer lists");
  int64_t ivd = intOf(attrs, "index_vector_dim", -1);
  int r = x.rank(), ir = idx.rank();
  if (ivd < 0 || ivd > ir)
    return bad("index_vector_dim " + std::to_string(ivd) + " is out of range");
  int64_t vec = ivd == ir ? 1 : (idx.dims[size_t(ivd)].isStatic() ? idx.dims[size_t(ivd)].size : -1);
  if (int(slice.size()) != r)
    return bad("slice_sizes must have one entry per operand dimension");
  if (vec >= 0 && int64_t(startMap.size()) != vec)
    return bad("start_index_map has " + std::to_string(startMap.size()) +
               " entries for index vectors of " + std::to_string(vec));
  if (!axesOk(startMap, r) || !axesOk(collapsed, r) || !axesOk(obatch, r) ||
      obatch.size() != ibatch.size())
    return bad("gather dimension numbers name invalid operand dimensions");
  for (int64_t d : ibatch)
    if (d < 0 || d >= ir || d == ivd)
      return bad("start_indices_batching_dims names invalid index dimensions");
  for (int i = 0; i < r; ++i) {
    if (slice[i] < 0 || (x.dims[i].isStatic() && slice[i] > x.dims[i].size))
      return fail("E0210", "slice size " + std::to_string(slice[i]) + " does not fit dimension " +
                               std::to_string(i) + " of " + x.str(), 0);
    if ((contains(collapsed, i) || contains(obatch, i)) && slice[i] > 1)
      return bad("collapsed and batching dimensions must have slice size 1");
    if (contains(collapsed, i) && contains(obatch, i))
      return bad("a dimension cannot be both collapsed and batching");
  }
  for (int64_t d : startMap)
    if (contains(obatch, d))
      return bad("start_index_map names a batching dimension");
  Shape batch;
  for (int i = 0; i < ir; ++i)
    if (i != ivd)
      batch.push_back(idx.dims[size_t(i)]);
  Shape offs;
  for (int i = 0; i < r; ++i)
    if (!contains(collapsed, i) && !contains(obatch, i))
      offs.push_back(Dim::of(slice[i]));
  int outRank = int(batch.size() + offs.size());
  if (offs.size() != offset.size() || !axesOk(offset, outRank) ||
      !std::is_sorted(offset.begin(), offset.end()))
    return bad("offset_dims must be " + std::to_string(offs.size()) +
               " sorted output dimensions");
  Shape out;
  size_t bi = 0, oi = 0;
  for (int i = 0; i < outRank; ++i)
    out.push_back(contains(offset, i) ? offs[oi++] : batch[bi++]);
  return ok({TensorType(x.dtype, out)});
}

InferResult scatterRule(const Ops &ops, Attrs &attrs) {
  if (ops.size() < 3 || ops.size() % 2 == 0)
    return bad("scatter needs N operands, the indices and N updates");
  size_t n = (ops.size() - 1) / 2;
  const TensorType &idx = ops[n];
  if (!ir::isInteger(idx.dtype))
    return fail("E0201", "scatter indices must be integers, found " + dt(idx.dtype), int(n));
  Ints win, inserted, toOperand, ibatch, sbatch;
  if (!intList(attrs, "update_window_dims", {}, win) ||
      !intList(attrs, "inserted_window_dims", {}, inserted) ||
      !intList(attrs, "scatter_dims_to_operand_dims", {}, toOperand) ||
      !intList(attrs, "input_batching_dims", {}, ibatch) ||
      !intList(attrs, "scatter_indices_batching_dims", {}, sbatch))
    return bad("scatter dimension numbers must be integer lists");
  int64_t ivd = intOf(attrs, "index_vector_dim", -1);
  const TensorType &x = ops[0], &u = ops[n + 1];
  int r = x.rank(), ir = idx.rank();
  if (ivd < 0 || ivd > ir)
    return bad("index_vector_dim " + std::to_string(ivd) + " is out of range");
  std::vector<TensorType> results;
  for (size_t i = 0; i < n; ++i) {
    if (!sameDims(ops[i], x) || !sameDims(ops[n + 1 + i], u) || ops[n + 1 + i].dtype != ops[i].dtype)
      return fail("E0201", "scatter operands and updates must match pairwise", int(i));
    results.push_back(ops[i]);
  }
  if (!axesOk(inserted, r) || !axesOk(toOperand, r) || !axesOk(ibatch, r) ||
      ibatch.size() != sbatch.size() || !axesOk(win, u.rank()))
    return bad("scatter dimension numbers name invalid dimensions");
  int64_t vec = ivd == ir ? 1 : (idx.dims[size_t(ivd)].isStatic() ? idx.dims[size_t(ivd)].size : -1);
  if (vec >= 0 && int64_t(toOperand.size()) != vec)
    return bad("scatter_dims_to_operand_dims must have one entry per index vector element");
  for (int64_t d : sbatch)
    if (d < 0 || d >= ir || d == ivd)
      return bad("scatter_indices_batching_dims names invalid index dimensions");
  if (int64_t(win.size()) + int64_t(inserted.size()) + int64_t(ibatch.size()) != r)
    return bad("update_window_dims, inserted_window_dims and input_batching_dims must cover "
               "the operand's dimensions");
  if (u.rank() != int(win.size()) + ir - (ivd == ir ? 0 : 1))
    return fail("E0202", "updates " + u.str() + " do not match the scatter indices " + idx.str(),
                int(n + 1));
  // Window sizes must fit the operand.
  size_t w = 0;
  for (int i = 0; i < r; ++i) {
    if (contains(inserted, i) || contains(ibatch, i))
      continue;
    const Dim &ud = u.dims[size_t(win[w++])];
    if (ud.isStatic() && x.dims[i].isStatic() && ud.size > x.dims[i].size)
      return fail("E0202", "update window is larger than the operand", int(n + 1));
  }
  std::string comb = strOf(attrs, "combiner");
  if (comb.empty() ? !hasFunction(attrs, "to_apply")
                   : !(comb == "add" || comb == "assign" || comb == "mul" || comb == "max" ||
                       comb == "min" || comb == "and" || comb == "or"))
    return bad("scatter needs combiner = \"add\" (assign, mul, max, min, and, or) or to_apply = FN");
  return ok(results);
}

InferResult sortRule(const Ops &ops, Attrs &attrs) {
  for (size_t i = 1; i < ops.size(); ++i)
    if (!sameDims(ops[i], ops[0]))
      return fail("E0202", "sort operands have different shapes", int(i));
  int64_t d = intOf(attrs, "dimension", 0);
  if (ops.empty() || !normalizeAxis(d, ops[0].rank()))
    return bad("sort dimension is out of range");
  setAttr(attrs, "dimension", Attribute::integer(d));
  boolOf(attrs, "is_stable");
  std::string order = strOf(attrs, "order");
  if (order.empty() ? !hasFunction(attrs, "comparator")
                    : !(order == "asc" || order == "desc"))
    return bad("sort needs order = \"asc\" or \"desc\", or comparator = FN");
  return ok(ops);
}

InferResult mapRule(const Ops &ops, Attrs &attrs) {
  for (size_t i = 1; i < ops.size(); ++i)
    if (!sameDims(ops[i], ops[0]))
      return fail("E0202", "map inputs have different shapes", int(i));
  Attribute *t = findAttr(attrs, "dtype");
  if (ops.empty() || !hasFunction(attrs, "fn") || !t || t->kind() != Attribute::Kind::DType)
    return bad("map needs inputs, fn = FN and dtype = TYPE");
  return ok({TensorType(t->asDType(), ops[0].dims)});
}

InferResult dotRule(const Ops &ops, Attrs &attrs) {
  const TensorType &a = ops[0], &b = ops[1];
  if (a.dtype != b.dtype)
    return fail("E0201", "dot_general operands have different element types: " + dt(a.dtype) +
                             " and " + dt(b.dtype), 1);
  if (a.dtype == DType::Bool)
    return fail("E0201", "dot_general of bool operands", 0);
  Ints lb, rb, lc, rc;
  if (!intList(attrs, "lhs_batch", {}, lb) || !intList(attrs, "rhs_batch", {}, rb) ||
      !intList(attrs, "lhs_contract", {}, lc) || !intList(attrs, "rhs_contract", {}, rc))
    return bad("dot_general dimension lists must be integer lists");
  Ints la = lb, ra = rb;
  la.insert(la.end(), lc.begin(), lc.end());
  ra.insert(ra.end(), rc.begin(), rc.end());
  if (lb.size() != rb.size() || lc.size() != rc.size() || !axesOk(la, a.rank()) ||
      !axesOk(ra, b.rank()))
    return bad("dot_general batch and contracting dimensions must pair up and be distinct");
  for (size_t i = 0; i < la.size(); ++i)
    if (!sameSize(a.dims[size_t(la[i])], b.dims[size_t(ra[i])]))
      return fail("E0203", "dot_general dimension " + std::to_string(la[i]) + " of " + a.str() +
                               " does not match dimension " + std::to_string(ra[i]) + " of " +
                               b.str(), 1);
  Shape s;
  for (int64_t d : lb)
    s.push_back(a.dims[size_t(d)]);
  for (int i = 0; i < a.rank(); ++i)
    if (!contains(la, i))
      s.push_back(a.dims[size_t(i)]);
  for (int i = 0; i < b.rank(); ++i)
    if (!contains(ra, i))
      s.push_back(b.dims[size_t(i)]);
  DType out = a.dtype;
  if (Attribute *t = findAttr(attrs, "dtype")) {
    if (t->kind() != Attribute::Kind::DType)
      return bad("dot_general dtype must be an element type");
    out = t->asDType();
  }
  return ok({TensorType(out, s)});
}

InferResult convRule(const Ops &ops, Attrs &attrs) {
  const TensorType &x = ops[0], &w = ops[1];
  if (x.dtype != w.dtype || !ir::isFloat(x.dtype))
    return fail("E0201", "convolution expects floating-point operands of one element type", 1);
  std::string labels = strOf(attrs, "dim_labels");
  std::optional<ConvDimLabels> parsed = parseConvDimLabels(labels);
  if (!parsed || parsed->input.rank() != x.rank() || parsed->kernel.rank() != w.rank())
    return bad("dim_labels \"" + labels + "\" do not describe a convolution of " + x.str() +
               " by " + w.str() + " (expected e.g. \"b01f_01io->b01f\")");
  const DimLabels &in = parsed->input, &k = parsed->kernel, &out = parsed->output;
  size_t s = in.spatial.size();
  Ints strides, pad, ldil, rdil;
  if (!intList(attrs, "strides", Ints(s, 1), strides) || !intList(attrs, "padding", Ints(2 * s, 0), pad) ||
      !intList(attrs, "lhs_dilation", Ints(s, 1), ldil) ||
      !intList(attrs, "rhs_dilation", Ints(s, 1), rdil) || strides.size() != s ||
      pad.size() != 2 * s || ldil.size() != s || rdil.size() != s)
    return bad("convolution strides, padding (lo, hi pairs) and dilations need one entry per "
               "spatial dimension");
  for (size_t i = 0; i < s; ++i)
    if (strides[i] <= 0 || ldil[i] <= 0 || rdil[i] <= 0)
      return bad("convolution strides and dilations must be positive");
  int64_t g = intOf(attrs, "feature_groups", 1), bg = intOf(attrs, "batch_groups", 1);
  setAttr(attrs, "feature_groups", Attribute::integer(g));
  setAttr(attrs, "batch_groups", Attribute::integer(bg));
  if (g < 1 || bg < 1 || (g > 1 && bg > 1))
    return bad("feature_groups and batch_groups must be positive, and only one above 1");
  const Dim &n = x.dims[size_t(in.a)], &c = x.dims[size_t(in.b)];
  const Dim &ki = w.dims[size_t(k.a)], &ko = w.dims[size_t(k.b)];
  if (c.isStatic() && ki.isStatic() && c.size != ki.size * g)
    return fail("E0202", "convolution input has " + c.str() + " features, the kernel expects " +
                             ki.str() + " per group times " + std::to_string(g), 1);
  if (ko.isStatic() && (ko.size % g || ko.size % bg))
    return fail("E0202", "kernel output features " + ko.str() + " do not divide into the groups", 1);
  if (n.isStatic() && n.size % bg)
    return fail("E0202", "batch " + n.str() + " does not divide into " + std::to_string(bg) +
                             " batch groups", 0);
  Shape o(x.dims.size());
  o[size_t(out.a)] = n.isStatic() ? Dim::of(n.size / bg) : Dim::unknown();
  o[size_t(out.b)] = ko;
  for (size_t i = 0; i < s; ++i) {
    const Dim &kd = w.dims[size_t(k.spatial[i])];
    o[size_t(out.spatial[i])] =
        kd.isStatic() ? windowDim(x.dims[size_t(in.spatial[i])], kd.size, strides[i], pad[2 * i],
                                  pad[2 * i + 1], ldil[i], rdil[i])
                      : Dim::unknown();
  }
  DType dtype = x.dtype;
  if (Attribute *t = findAttr(attrs, "dtype")) {
    if (t->kind() != Attribute::Kind::DType)
      return bad("convolution dtype must be an element type");
    dtype = t->asDType();
  }
  return ok({TensorType(dtype, o)});
}

InferResult reduceRule(const Ops &ops, Attrs &attrs) {
  size_t n;
  InferResult err;
  if (!inputsAndInits(ops, n, err) || !reducerOk(attrs, n, err))
    return err;
  Ints dims;
  if (!intList(attrs, "dims", {}, dims) || !axesOk(dims, ops[0].rank()))
    return bad("reduce dims must be distinct dimensions of " + ops[0].str());
  std::sort(dims.begin(), dims.end());
  setAttr(attrs, "dims", Attribute::intList(dims));
  std::string r = strOf(attrs, "reducer");
  if ((r == "and" || r == "or") != (ops[0].dtype == DType::Bool) && !r.empty())
    return fail("E0201", "reducer \"" + r + "\" does not apply to " + dt(ops[0].dtype), 0);
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i) {
    Shape s;
    for (int d = 0; d < ops[i].rank(); ++d)
      if (!contains(dims, d))
        s.push_back(ops[i].dims[size_t(d)]);
    out.push_back(TensorType(ops[i].dtype, s));
  }
  return ok(out);
}

InferResult reduceWindowRule(const Ops &ops, Attrs &attrs) {
  size_t n;
  InferResult err;
  if (!inputsAndInits(ops, n, err) || !reducerOk(attrs, n, err))
    return err;
  size_t r = size_t(ops[0].rank());
  Ints win, strides, bdil, wdil, pad;
  if (!intList(attrs, "window", {}, win) || !intList(attrs, "strides", Ints(r, 1), strides) ||
      !intList(attrs, "base_dilation", Ints(r, 1), bdil) ||
      !intList(attrs, "window_dilation", Ints(r, 1), wdil) ||
      !intList(attrs, "padding", Ints(2 * r, 0), pad) || win.size() != r || strides.size() != r ||
      bdil.size() != r || wdil.size() != r || pad.size() != 2 * r)
    return bad("reduce_window window, strides, dilations and padding (lo, hi pairs) need one "
               "entry per dimension of " + ops[0].str());
  for (size_t i = 0; i < r; ++i)
    if (win[i] <= 0 || strides[i] <= 0 || bdil[i] <= 0 || wdil[i] <= 0)
      return bad("reduce_window window, strides and dilations must be positive");
  Shape s;
  for (size_t i = 0; i < r; ++i)
    s.push_back(windowDim(ops[0].dims[i], win[i], strides[i], pad[2 * i], pad[2 * i + 1], bdil[i],
                          wdil[i]));
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(TensorType(ops[i].dtype, s));
  return ok(out);
}

InferResult selectAndScatterRule(const Ops &ops, Attrs &attrs) {
  const TensorType &x = ops[0], &src = ops[1], &init = ops[2];
  if (src.dtype != x.dtype || !init.isScalar() || init.dtype != x.dtype)
    return fail("E0201", "select_and_scatter source and init must have the operand's element type",
                1);
  size_t r = size_t(x.rank());
  Ints win, strides, pad;
  if (!intList(attrs, "window", {}, win) || !intList(attrs, "strides", Ints(r, 1), strides) ||
      !intList(attrs, "padding", Ints(2 * r, 0), pad) || win.size() != r || strides.size() != r ||
      pad.size() != 2 * r)
    return bad("select_and_scatter window, strides and padding need one entry per dimension");
  for (size_t i = 0; i < r; ++i) {
    if (win[i] <= 0 || strides[i] <= 0)
      return bad("select_and_scatter window and strides must be positive");
    Dim d = windowDim(x.dims[i], win[i], strides[i], pad[2 * i], pad[2 * i + 1]);
    if (src.rank() != int(r) || !sameSize(d, src.dims[i]))
      return fail("E0202", "source " + src.str() + " does not match the windows of " + x.str(), 1);
  }
  std::string sel = strOf(attrs, "select"), sc = strOf(attrs, "scatter");
  if (sel.empty() ? !hasFunction(attrs, "select_fn")
                  : !(sel == "ge" || sel == "gt" || sel == "le" || sel == "lt"))
    return bad("select_and_scatter needs select = \"ge\" (gt, le, lt) or select_fn = FN");
  if (sc.empty() ? !hasFunction(attrs, "scatter_fn") : !knownReducer(sc))
    return bad("select_and_scatter needs scatter = \"add\" (mul, max, min) or scatter_fn = FN");
  return ok({x});
}

namespace {

// The shared checks of the batch normalization operations: x is floating
// point, feature_index names one of its dimensions, and each of the given
// per-feature operands is a vector of that size.
bool batchNormOk(const Ops &ops, Attrs &attrs, std::vector<size_t> vectors, size_t full,
                 InferResult &err) {
  const TensorType &x = ops[0];
  int64_t f = intOf(attrs, "feature_index", -1);
  if (!ir::isFloat(x.dtype) || f < 0 || f >= x.rank()) {
    err = bad("batch normalization needs a floating-point input and a feature_index in range");
    return false;
  }
  if (!findAttr(attrs, "epsilon")) {
    err = bad("batch normalization needs an epsilon");
    return false;
  }
  for (size_t i : vectors)
    if (ops[i].dtype != x.dtype || ops[i].rank() != 1 ||
        !sameSize(ops[i].dims[0], x.dims[size_t(f)])) {
      err = fail("E0202", "expected a " + dt(x.dtype) + "[" + x.dims[size_t(f)].str() +
                              "] operand, found " + ops[i].str(), int(i));
      return false;
    }
  if (full && !(ops[full].dtype == x.dtype && sameDims(ops[full], x))) {
    err = fail("E0202", "grad_output must match the input " + x.str(), int(full));
    return false;
  }
  return true;
}

TensorType featureVector(const TensorType &x, Attrs &attrs) {
  return TensorType(x.dtype, {x.dims[size_t(intOf(attrs, "feature_index", 0))]});
}

} // namespace

InferResult batchNormTrainingRule(const Ops &ops, Attrs &attrs) {
  InferResult err;
  if (!batchNormOk(ops, attrs, {1, 2}, 0, err))
    return err;
  TensorType v = featureVector(ops[0], attrs);
  return ok({ops[0], v, v});
}

InferResult batchNormInferenceRule(const Ops &ops, Attrs &attrs) {
  InferResult err;
  if (!batchNormOk(ops, attrs, {1, 2, 3, 4}, 0, err))
    return err;
  return ok({ops[0]});
}

InferResult batchNormGradRule(const Ops &ops, Attrs &attrs) {
  InferResult err;
  if (!batchNormOk(ops, attrs, {1, 2, 3}, 4, err))
    return err;
  TensorType v = featureVector(ops[0], attrs);
  return ok({ops[0], v, v});
}

} // namespace mdl::stdlib::hlorules
