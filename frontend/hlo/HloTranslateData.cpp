// Per-opcode translation, data movement: tuples, identities (copy,
// bitcast, opt-barrier, domain, add-dependency), broadcast, reshape,
// transpose, reverse, slice, iota, concatenate, pad, dynamic-slice,
// dynamic-update-slice and gather.
//
// HLO's `broadcast` maps operand dimension i to result dimension
// dimensions[i]; it becomes a transpose (when the mapping is not increasing),
// a reshape that inserts the new unit dimensions, and broadcast_to. `reverse`
// is a slice with step -1, as `x[::-1]` is in mdl.
#include "frontend/hlo/HloOpContext.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <numeric>

namespace mdl::frontend::hlo {

using namespace ir;

namespace {

struct Data : OpCtx {
  bool identity() {
    if (!atLeast(1))
      return poison();
    out.leaves = ops[0]->leaves;
    if (inst.shape.leafCount() != out.leaves.size()) {
      t.malformed("'" + inst.opcode + "' must keep its operand's shape");
      return poison();
    }
    return true;
  }

  bool tuple() {
    for (const HVal *v : ops)
      out.leaves.insert(out.leaves.end(), v->leaves.begin(), v->leaves.end());
    return true;
  }

  bool getTupleElement() {
    if (!arity(1))
      return poison();
    auto idx = integer("index");
    if (!idx)
      return poison();
    const HloShape &s = *ops[0]->shape;
    if (!s.isTuple || *idx < 0 || size_t(*idx) >= s.elements.size()) {
      t.malformed("get-tuple-element index " + std::to_string(*idx) + " is out of range for " +
                  s.str());
      return poison();
    }
    size_t from = 0;
    for (int64_t i = 0; i < *idx; ++i)
      from += s.elements[size_t(i)].leafCount();
    size_t n = s.elements[size_t(*idx)].leafCount();
    out.leaves.assign(ops[0]->leaves.begin() + long(from), ops[0]->leaves.begin() + long(from + n));
    return true;
  }

  Value *reshape(Value *x, const TensorType &to) {
    if (x->type == to)
      return x;
    return t.emit1(OpKind::Reshape, {x}, {{"shape", Attribute::dimList(to.dims)}}, to);
  }

  bool broadcast() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    auto dims = ints("dimensions", false);
    if (!rt || !x || !dims)
      return poison();
    // The old form without `dimensions` broadcasts a scalar or adds leading
    // dimensions.
    if (!inst.attr("dimensions")) {
      dims->resize(size_t(x->type.rank()));
      std::iota(dims->begin(), dims->end(), rt->rank() - x->type.rank());
    }
    if (int(dims->size()) != x->type.rank()) {
      t.malformed("broadcast dimensions must name one result dimension per operand dimension",
                  inst.attr("dimensions"));
      return poison();
    }
    for (size_t i = 0; i < dims->size(); ++i) {
      int64_t d = (*dims)[i];
      if (d < 0 || d >= rt->rank() ||
          (rt->dims[size_t(d)] != x->type.dims[i] && x->type.dims[i] != Dim::of(1))) {
        t.malformed("broadcast dimension " + std::to_string(d) + " does not match operand "
                    "dimension " + std::to_string(i), inst.attr("dimensions"));
        return poison();
      }
    }
    // Transpose the operand so the mapping increases.
    std::vector<int64_t> perm(dims->size());
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return (*dims)[size_t(a)] < (*dims)[size_t(b)]; });
    bool sorted = true;
    for (size_t i = 0; i < perm.size(); ++i)
      sorted &= perm[i] == int64_t(i);
    if (!sorted) {
      Shape s;
      for (int64_t p : perm)
        s.push_back(x->type.dims[size_t(p)]);
      x = t.emit1(OpKind::Transpose, {x}, {{"perm", Attribute::intList(perm)}},
                  TensorType(x->type.dtype, s));
      std::sort(dims->begin(), dims->end());
    }
    if (!x)
      return poison();
    // Operand dimensions that map to the trailing result dimensions in order
    // broadcast as NumPy does; otherwise unit dimensions are inserted first.
    bool trailing = true;
    for (size_t i = 0; i < dims->size(); ++i)
      trailing &= (*dims)[i] == int64_t(rt->rank() - int(dims->size()) + int(i));
    if (!trailing) {
      Shape shaped(size_t(rt->rank()), Dim::of(1));
      for (size_t i = 0; i < dims->size(); ++i)
        shaped[size_t((*dims)[i])] = x->type.dims[i];
      x = reshape(x, TensorType(x->type.dtype, shaped));
    }
    if (!x || x->type == *rt)
      return done(x);
    return done(t.emit1(OpKind::BroadcastTo, {x}, {{"shape", Attribute::dimList(rt->dims)}}, *rt));
  }

  bool reshapeOp() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    if (!rt || !x)
      return poison();
    if (rt->numElements() != x->type.numElements() || rt->dtype != x->type.dtype) {
      t.malformed("cannot reshape " + x->type.str() + " into " + rt->str());
      return poison();
    }
    return done(reshape(x, *rt));
  }

  bool transpose() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    auto perm = ints("dimensions");
    if (!rt || !x || !perm)
      return poison();
    bool identity = true;
    for (size_t i = 0; i < perm->size(); ++i)
      identity &= (*perm)[i] == int64_t(i);
    if (identity && x->type == *rt)
      return done(x);
    return done(t.emit1(OpKind::Transpose, {x}, {{"perm", Attribute::intList(*perm)}}, *rt));
  }

  Value *slice(Value *x, const IntVec &start, const IntVec &stop, const IntVec &step,
               const TensorType &rt) {
    return t.emit1(OpKind::Slice, {x},
                   {{"start", Attribute::intList(start)},
                    {"stop", Attribute::intList(stop)},
                    {"step", Attribute::intList(step)},
                    {"drop", Attribute::intList({})}},
                   rt);
  }

  bool reverse() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    auto dims = ints("dimensions");
    if (!rt || !x || !dims)
      return poison();
    int r = x->type.rank();
    IntVec start(size_t(r), 0), stop(size_t(r), 0), step(size_t(r), 1);
    for (int i = 0; i < r; ++i)
      stop[size_t(i)] = x->type.dims[size_t(i)].size;
    for (int64_t d : *dims) {
      if (d < 0 || d >= r) {
        t.malformed("reverse dimension " + std::to_string(d) + " is out of range");
        return poison();
      }
      int64_t n = x->type.dims[size_t(d)].size;
      start[size_t(d)] = n - 1;
      stop[size_t(d)] = -n - 1;
      step[size_t(d)] = -1;
    }
    if (dims->empty())
      return done(x);
    return done(slice(x, start, stop, step, *rt));
  }

  bool sliceOp() {
    if (!arity(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    const HloAttr *a = t.need("slice");
    if (!rt || !x || !a)
      return poison();
    auto s = parseSlice(a->value);
    if (!s || int(s->start.size()) != x->type.rank()) {
      t.malformed("slice must be {[start:limit:stride], ...} with one entry per dimension", a);
      return poison();
    }
    for (size_t i = 0; i < s->start.size(); ++i) {
      int64_t n = x->type.dims[i].size;
      if (s->start[i] < 0 || s->limit[i] > n || s->start[i] > s->limit[i] || s->stride[i] <= 0) {
        t.malformed("slice [" + std::to_string(s->start[i]) + ":" + std::to_string(s->limit[i]) +
                    "] is out of range for dimension " + std::to_string(i), a);
        return poison();
      }
    }
    if (x->type == *rt)
      return done(x);
    return done(slice(x, s->start, s->limit, s->stride, *rt));
  }

  bool iota() {
    if (!arity(0))
      return poison();
    auto rt = result();
    auto d = integer("iota_dimension");
    if (!rt || !d)
      return poison();
    return done(t.emit1(OpKind::Iota, {},
                        {{"type", Attribute::type(*rt)}, {"dimension", Attribute::integer(*d)}},
                        *rt));
  }

  bool concatenate() {
    if (!atLeast(1))
      return poison();
    auto rt = result();
    auto dims = ints("dimensions");
    if (!rt || !dims || dims->size() != 1) {
      if (dims && dims->size() != 1)
        t.malformed("concatenate needs one dimension", inst.attr("dimensions"));
      return poison();
    }
    std::vector<Value *> xs;
    for (size_t i = 0; i < ops.size(); ++i)
      if (Value *v = arg(i))
        xs.push_back(v);
      else
        return poison();
    if (xs.size() == 1)
      return done(xs[0]);
    return done(t.emit1(OpKind::Concat, xs, {{"axis", Attribute::integer((*dims)[0])}}, *rt));
  }

  bool pad() {
    if (!arity(2))
      return poison();
    auto rt = result();
    Value *x = arg(0), *v = arg(1);
    const HloAttr *a = t.need("padding");
    if (!rt || !x || !v || !a)
      return poison();
    auto p = parsePadding(a->value);
    if (!p || int(p->lo.size()) != x->type.rank()) {
      t.malformed("padding must be lo_hi[_interior] per dimension, separated by 'x'", a);
      return poison();
    }
    bool simple = true;
    IntVec pairs;
    for (size_t i = 0; i < p->lo.size(); ++i) {
      simple &= p->lo[i] >= 0 && p->hi[i] >= 0 && p->interior[i] == 0;
      pairs.push_back(p->lo[i]);
      pairs.push_back(p->hi[i]);
    }
    auto value = t.constantScalar(*ops[1]);
    if (simple && value && !unsignedOperand(0) && *value == *value &&
        *value != 1.0 / 0.0 && *value != -1.0 / 0.0) {
      Attribute va = isFloat(x->type.dtype) ? Attribute::real(*value)
                                            : Attribute::integer(int64_t(*value));
      if (x->type.dtype == DType::Bool)
        va = Attribute::integer(*value != 0);
      return done(t.emit1(OpKind::Pad, {x}, {{"pads", Attribute::intList(pairs)}, {"value", va}},
                          *rt));
    }
    return done(t.emit1(OpKind::PadGeneral, {x, v},
                        {{"low", Attribute::intList(p->lo)},
                         {"high", Attribute::intList(p->hi)},
                         {"interior", Attribute::intList(p->interior)}},
                        *rt));
  }

  // Start indices: scalars, or the old single rank-1 operand (split here).
  bool starts(size_t first, int rank, std::vector<Value *> &out) {
    if (ops.size() == first + 1 && rank != 0 && !ops[first]->shape->isTuple &&
        ops[first]->shape->dims.size() == 1 && int(ops[first]->shape->dims[0]) == rank) {
      Value *vec = arg(first);
      if (!vec)
        return false;
      for (int i = 0; i < rank; ++i) {
        TensorType s = TensorType::scalar(vec->type.dtype);
        out.push_back(t.emit1(OpKind::Slice, {vec},
                              {{"start", Attribute::intList({i})},
                               {"stop", Attribute::intList({i + 1})},
                               {"step", Attribute::intList({1})},
                               {"drop", Attribute::intList({0})}},
                              s));
      }
      return true;
    }
    if (ops.size() != first + size_t(rank)) {
      t.malformed("'" + inst.opcode + "' of a rank-" + std::to_string(rank) + " operand needs " +
                  std::to_string(rank) + " start indices");
      return false;
    }
    for (size_t i = first; i < ops.size(); ++i) {
      Value *v = arg(i);
      if (!v)
        return false;
      if (unsignedOperand(i))
        v = t.emit1(OpKind::Convert, {v},
                    {{"dtype", Attribute::dtype(DType::I64)},
                     {"from_unsigned", Attribute::boolean(true)},
                     {"to_unsigned", Attribute::boolean(false)}},
                    TensorType::scalar(DType::I64));
      out.push_back(v);
    }
    return true;
  }

  bool dynamicSlice() {
    if (!atLeast(1))
      return poison();
    auto rt = result();
    Value *x = arg(0);
    auto sizes = ints("dynamic_slice_sizes");
    std::vector<Value *> operands = {x};
    if (!rt || !x || !sizes || !starts(1, x->type.rank(), operands))
      return poison();
    return done(t.emit1(OpKind::DynamicSlice, operands, {{"sizes", Attribute::intList(*sizes)}}, *rt));
  }

  bool dynamicUpdateSlice() {
    if (!atLeast(2))
      return poison();
    auto rt = result();
    Value *x = arg(0), *u = arg(1);
    std::vector<Value *> operands = {x, u};
    if (!rt || !x || !u || !starts(2, x->type.rank(), operands))
      return poison();
    return done(t.emit1(OpKind::DynamicUpdateSlice, operands, {}, *rt));
  }

  bool gather() {
    if (!arity(2))
      return poison();
    auto rt = result();
    Value *x = arg(0), *idx = arg(1);
    auto offset = ints("offset_dims", false), collapsed = ints("collapsed_slice_dims", false),
         startMap = ints("start_index_map", false), sizes = ints("slice_sizes"),
         obatch = ints("operand_batching_dims", false),
         ibatch = ints("start_indices_batching_dims", false);
    auto ivd = integer("index_vector_dim");
    if (!rt || !x || !idx || !offset || !collapsed || !startMap || !sizes || !obatch || !ibatch ||
        !ivd)
      return poison();
    if (unsignedOperand(1)) {
      t.unsupported("gather", "unsigned 32/64-bit gather indices are not supported");
      return poison();
    }
    return done(t.emit1(OpKind::GatherGeneral, {x, idx},
                        {{"offset_dims", Attribute::intList(*offset)},
                         {"collapsed_slice_dims", Attribute::intList(*collapsed)},
                         {"start_index_map", Attribute::intList(*startMap)},
                         {"index_vector_dim", Attribute::integer(*ivd)},
                         {"slice_sizes", Attribute::intList(*sizes)},
                         {"operand_batching_dims", Attribute::intList(*obatch)},
                         {"start_indices_batching_dims", Attribute::intList(*ibatch)}},
                        *rt));
  }
};

} // namespace

bool translateDataMovement(Translator &t, const HloInstruction &inst,
                           const std::vector<const HVal *> &ops, HVal &out) {
  Data d{{t, inst, ops, out}};
  const std::string &op = inst.opcode;
  if (op == "copy" || op == "opt-barrier" || op == "domain")
    return d.identity();
  if (op == "add-dependency") {
    if (!d.arity(2))
      return d.poison();
    out.leaves = ops[0]->leaves;
    return true;
  }
  if (op == "tuple")
    return d.tuple();
  if (op == "get-tuple-element")
    return d.getTupleElement();
  if (op == "bitcast")
    return d.reshapeOp();
  if (op == "broadcast")
    return d.broadcast();
  if (op == "reshape")
    return d.reshapeOp();
  if (op == "transpose")
    return d.transpose();
  if (op == "reverse")
    return d.reverse();
  if (op == "slice")
    return d.sliceOp();
  if (op == "iota")
    return d.iota();
  if (op == "concatenate")
    return d.concatenate();
  if (op == "pad")
    return d.pad();
  if (op == "dynamic-slice")
    return d.dynamicSlice();
  if (op == "dynamic-update-slice")
    return d.dynamicUpdateSlice();
  if (op == "gather")
    return d.gather();
  return false;
}

} // namespace mdl::frontend::hlo
