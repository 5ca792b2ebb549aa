// Preparing a hip segment for kernel generation (see SegmentPrepare.h).
#include "backend/hip/codegen/SegmentPrepare.h"
#include "backend/cpu/Kernels.h"
#include "backend/runtime/Tensor.h"
#include "ir/passes/Canonicalize.h"
#include "ir/passes/Fuse.h"
#include "ir/passes/FusionDomain.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace mdl::backend::hip {

using namespace ir;

namespace {

/// Constants larger than this are left for the GPU to compute rather than
/// shipped in the program.
constexpr int64_t kMaxFoldedBytes = int64_t(16) << 20;

std::unique_ptr<Operation> makeOp(OpKind k, const Operation &like, std::vector<Value *> operands,
                                  const TensorType &type) {
  auto op = std::make_unique<Operation>(k, like.loc);
  op->operands = std::move(operands);
  op->device = like.device;
  op->placement = like.placement;
  Value *r = op->addResult(type);
  r->device = like.device;
  return op;
}

// Step 2: sum / mean / max / min over axes that are not the trailing ones
// (or over every axis) read a transposed view whose reduced axes come last.
void trailingReductions(Region &r) {
  std::vector<std::unique_ptr<Operation>> out;
  ValueMap map;
  for (auto &opPtr : r.ops) {
    Operation &op = *opPtr;
    for (Value *&v : op.operands)
      if (auto it = map.find(v); it != map.end())
        v = it->second;
    if (!stdlib::isRowReduction(op.kind) || op.results.size() != 1 ||
        !op.operands[0]->type.isStatic()) {
      out.push_back(std::move(opPtr));
      continue;
    }
    Value *x = op.operands[0];
    int rank = x->type.rank();
    std::vector<int64_t> axes = op.attr("axis") ? op.intListAttr("axis") : std::vector<int64_t>{};
    if (rank == 0 || (op.attr("axis") && axes.empty())) {
      // Nothing reduced: the value itself (in the result's type).
      Value *result = x;
      if (x->type != op.results[0]->type) {
        auto c = makeOp(OpKind::Cast, op, {x}, op.results[0]->type);
        c->setAttr("dtype", Attribute::dtype(op.results[0]->type.dtype));
        result = c->result();
        out.push_back(std::move(c));
      }
      map[op.results[0].get()] = result;
      continue;
    }
    if (!op.attr("axis")) {
      axes.resize(size_t(rank));
      std::iota(axes.begin(), axes.end(), 0);
    }
    std::sort(axes.begin(), axes.end());
    bool trailing = !axes.empty() && op.attr("axis");
    for (size_t i = 0; trailing && i < axes.size(); ++i)
      trailing = axes[i] == rank - int64_t(axes.size()) + int64_t(i);
    if (trailing || rank == 0) {
      out.push_back(std::move(opPtr));
      continue;
    }
    std::vector<int64_t> perm, sizes = x->type.sizes(), tsizes;
    for (int a = 0; a < rank; ++a)
      if (!std::count(axes.begin(), axes.end(), a))
        perm.push_back(a);
    for (int64_t a : axes)
      perm.push_back(a);
    for (int64_t p : perm)
      tsizes.push_back(sizes[size_t(p)]);
    auto t = makeOp(OpKind::Transpose, op, {x}, TensorType::of(x->type.dtype, tsizes));
    t->setAttr("perm", Attribute::intList(perm));
    std::vector<int64_t> kept(tsizes.begin(), tsizes.end() - long(axes.size())), newAxes;
    for (size_t i = 0; i < axes.size(); ++i)
      newAxes.push_back(rank - int64_t(axes.size()) + int64_t(i));
    DType rt = op.results[0]->type.dtype;
    auto red = makeOp(op.kind, op, {t->result()}, TensorType::of(rt, kept));
    red->setAttr("axis", Attribute::intList(newAxes));
    red->setAttr("keepdims", Attribute::boolean(false));
    Value *result = red->result();
    out.push_back(std::move(t));
    out.push_back(std::move(red));
    if (op.results[0]->type.sizes() != kept) {
      auto reshape = makeOp(OpKind::Reshape, op, {result}, op.results[0]->type);
      Shape s;
      for (int64_t d : op.results[0]->type.sizes())
        s.push_back(Dim::of(d));
      reshape->setAttr("shape", Attribute::dimList(s));
      result = reshape->result();
      out.push_back(std::move(reshape));
    }
    map[op.results[0].get()] = result;
  }
  r.ops.clear();
  for (auto &op : out)
    r.push(std::move(op));
}

// Step 2 (continued): softmax, log_softmax and layernorm over an axis other
// than the last work on a transposed view whose last axis is that one (for
// layernorm, gamma and beta broadcast to x's shape and transposed alike),
// then transpose back, so canonicalize decomposes them.
void lastAxisComposites(Region &r) {
  std::vector<std::unique_ptr<Operation>> out;
  ValueMap map;
  for (auto &opPtr : r.ops) {
    Operation &op = *opPtr;
    for (Value *&v : op.operands)
      if (auto it = map.find(v); it != map.end())
        v = it->second;
    bool composite =
        op.kind == OpKind::Softmax || op.kind == OpKind::LogSoftmax || op.kind == OpKind::Layernorm;
    if (!composite || op.operands.empty() || op.results.size() != 1) {
      out.push_back(std::move(opPtr));
      continue;
    }
    const TensorType &xt = op.operands[0]->type;
    int rank = xt.rank();
    int64_t axis = op.intAttr("axis", -1);
    if (!xt.isStatic() || rank < 2 || axis < 0 || axis == rank - 1 || !isFloat(xt.dtype)) {
      out.push_back(std::move(opPtr));
      continue;
    }
    std::vector<int64_t> perm, inv(static_cast<size_t>(rank)), sizes = xt.sizes(), tsizes;
    for (int a = 0; a < rank; ++a)
      if (a != axis)
        perm.push_back(a);
    perm.push_back(axis);
    for (int i = 0; i < rank; ++i) {
      inv[size_t(perm[size_t(i)])] = i;
      tsizes.push_back(sizes[size_t(perm[size_t(i)])]);
    }
    auto transposed = [&](Value *v) {
      if (v->type.sizes() != sizes) {
        auto bc = makeOp(OpKind::BroadcastTo, op, {v}, TensorType::of(v->type.dtype, sizes));
        Shape sh;
        for (int64_t d : sizes)
          sh.push_back(Dim::of(d));
        bc->setAttr("shape", Attribute::dimList(sh));
        v = bc->result();
        out.push_back(std::move(bc));
      }
      auto t = makeOp(OpKind::Transpose, op, {v}, TensorType::of(v->type.dtype, tsizes));
      t->setAttr("perm", Attribute::intList(perm));
      Value *res = t->result();
      out.push_back(std::move(t));
      return res;
    };
    std::vector<Value *> operands;
    for (Value *v : op.operands)
      operands.push_back(transposed(v));
    auto inner = makeOp(op.kind, op, operands, TensorType::of(xt.dtype, tsizes));
    inner->attrs = op.attrs;
    inner->setAttr("axis", Attribute::integer(rank - 1));
    Value *y = inner->result();
    out.push_back(std::move(inner));
    auto back = makeOp(OpKind::Transpose, op, {y}, op.results[0]->type);
    back->setAttr("perm", Attribute::intList(inv));
    map[op.results[0].get()] = back->result();
    out.push_back(std::move(back));
  }
  r.ops.clear();
  for (auto &op : out)
    r.push(std::move(op));
}

std::shared_ptr<DenseData> denseOf(const Tensor &t) {
  auto d = std::make_shared<DenseData>();
  d->type = t.type();
  d->bytes.resize(size_t(t.type().byteSize()));
  if (!d->bytes.empty())
    std::memcpy(d->bytes.data(), t.raw(), d->bytes.size());
  return d;
}

Tensor tensorOf(const DenseData &d) {
  Tensor t = Tensor::empty(d.type);
  if (!d.bytes.empty())
    std::memcpy(t.raw(), d.bytes.data(), d.bytes.size());
  return t;
}

// Step 4: operations of constants, evaluated by the CPU kernels.
void foldConstants(Region &r) {
  for (auto &opPtr : r.ops) {
    Operation &op = *opPtr;
    if (op.kind == OpKind::Constant || !stdlib::hasKernel(op.kind) || stdlib::isView(op.kind) ||
        stdlib::isTransfer(op.kind) || stdlib::isOrchestration(op.kind) || op.results.size() != 1 ||
        !op.regions.empty())
      continue;
    // Small creations stay: fused loops compute them in registers.
    if (passes::isFusionLeaf(op))
      continue;
    const TensorType &rt = op.results[0]->type;
    if (!rt.isStatic() || rt.byteSize() > kMaxFoldedBytes)
      continue;
    std::vector<Tensor> in;
    bool constant = true;
    for (Value *v : op.operands) {
      if (!v->def || v->def->kind != OpKind::Constant) {
        constant = false;
        break;
      }
      in.push_back(tensorOf(v->def->attr("value")->asDense()));
    }
    if (!constant)
      continue;
    std::vector<Tensor> outs = {Tensor::empty(rt)};
    if (cpu::runKernel(op, in, outs))
      continue; // an error: left for the device, which reports its own way
    // The operation becomes the constant in place (same result value).
    op.kind = OpKind::Constant;
    op.operands.clear();
    op.attrs.clear();
    op.setAttr("value", Attribute::dense(denseOf(outs[0])));
  }
}

// Step 6: an element-wise operation outside every fusion becomes one.
void wrapElementwise(Region &r) {
  for (auto &opPtr : r.ops) {
    Operation &op = *opPtr;
    stdlib::OpClass cls = stdlib::opInfo(op.kind).cls;
    bool elementwise =
        stdlib::opInfo(op.kind).dialect == stdlib::Dialect::Core &&
        (cls == stdlib::OpClass::ElementwiseUnary || cls == stdlib::OpClass::ElementwiseBinary ||
         cls == stdlib::OpClass::Comparison || cls == stdlib::OpClass::Logic ||
         cls == stdlib::OpClass::ElementwiseOther);
    if (!elementwise || op.results.size() != 1)
      continue;
    auto f = std::make_unique<Operation>(OpKind::Fusion, op.loc);
    f->device = op.device;
    f->placement = op.placement;
    Region *body = f->addRegion();
    ValueMap inner;
    auto moved = std::make_unique<Operation>(op.kind, op.loc);
    moved->attrs = op.attrs;
    moved->device = op.device;
    moved->placement = op.placement;
    for (Value *v : op.operands) {
      auto it = inner.find(v);
      if (it == inner.end()) {
        f->operands.push_back(v);
        Value *a = body->addArg(v->type);
        a->device = v->device;
        it = inner.emplace(v, a).first;
      }
      moved->operands.push_back(it->second);
    }
    Value *res = moved->addResult(op.results[0]->type);
    res->device = op.device;
    body->push(std::move(moved));
    auto y = std::make_unique<Operation>(OpKind::Yield, op.loc);
    y->operands.push_back(res);
    body->push(std::move(y));
    // The fusion takes over the operation's result value (its users keep
    // pointing at it).
    f->results.push_back(std::move(op.results[0]));
    f->results[0]->def = f.get();
    f->parent = &r;
    opPtr = std::move(f);
  }
}

} // namespace

bool prepareSegment(const Operation &segment, PreparedSegment &out, std::string &error) {
  if (segment.kind != OpKind::Segment || segment.regions.size() != 1) {
    error = "not a segment";
    return false;
  }
  auto m = std::make_unique<Module>();
  auto f = std::make_unique<Function>();
  f->name = "segment";
  ValueMap map;
  for (Value *v : segment.operands) {
    Value *a = f->body->addArg(v->type);
    a->device = v->device;
    map[v] = a;
  }
  for (const auto &arg : segment.regions[0]->args)
    if (!arg->type.isStatic()) {
      error = "a segment input of type " + arg->type.str() + " has no static shape";
      return false;
    }
  Operation *copy = f->body->push(cloneOp(segment, map));
  auto ret = std::make_unique<Operation>(OpKind::Return, segment.loc);
  for (auto &r : copy->results)
    ret->operands.push_back(r.get());
  f->body->push(std::move(ret));
  m->addFunction(std::move(f));
  Region &body = *copy->regions[0];
  trailingReductions(body);
  lastAxisComposites(body);
  passes::canonicalize(*m);
  foldConstants(body);
  passes::fuse(*m);
  wrapElementwise(body);
  out.module = std::move(m);
  out.segment = copy;
  return true;
}

} // namespace mdl::backend::hip
