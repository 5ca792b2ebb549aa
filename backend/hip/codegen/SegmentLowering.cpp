// Lowering a prepared segment into GPU program steps (see SegmentLowering.h).
#include "backend/hip/codegen/SegmentLowering.h"
#include "backend/cpu/KernelSupport.h"
#include "backend/cpu/Kernels.h"
#include "backend/hip/codegen/GpuKernels.h"
#include "backend/hip/codegen/ScratchPlan.h"
#include "ir/passes/FusionDomain.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace mdl::backend::hip {

using namespace ir;

namespace {

/// The most operations a product's epilogue may have: each thread computes
/// it inline for its 16 outputs.
constexpr size_t kMaxEpilogueOps = 8;

class Lowering;
using LowerFn = bool (Lowering::*)(const Operation &, std::string &);

/// The lowerings, by operation kind.
class LoweringTable {
public:
  LoweringTable();
  LowerFn find(OpKind k) const { return fns_[size_t(k)]; }

private:
  void add(std::initializer_list<OpKind> ks, LowerFn f) {
    for (OpKind k : ks)
      fns_[size_t(k)] = f;
  }
  std::vector<LowerFn> fns_;
};

const LoweringTable &loweringTable() {
  static const LoweringTable t;
  return t;
}

class Lowering {
public:
  Lowering(const Operation &segment, GpuModule &gm, GpuProgram &p)
      : region_(*segment.regions[0]), gm_(gm), p_(p) {}

  bool run(std::string &error) {
    for (auto &arg : region_.args) {
      GpuRef r{GpuRef::Kind::Input, uint32_t(p_.inputs.size()), 0};
      p_.inputs.push_back({int32_t(abiDType(arg->type.dtype)), arg->type.sizes()});
      views_[arg.get()] = View::dense(r, arg->type);
    }
    const Operation *y = stdlib::terminatorOf(region_);
    if (!y) {
      error = "a segment without a yield";
      return false;
    }
    for (size_t k = 0; k < y->operands.size(); ++k) {
      const TensorType &t = y->operands[k]->type;
      p_.outputs.push_back({int32_t(abiDType(t.dtype)), t.sizes()});
      outputOf_.emplace(y->operands[k],
                        uint32_t(k)); // the first yield of a value
    }
    placed_.assign(y->operands.size(), false);
    // A yielded reshape (expand_dims, squeeze) of a computed value: the value
    // is computed in the output itself (the reshape keeps its bytes).
    for (size_t k = 0; k < y->operands.size(); ++k) {
      const Value *v = y->operands[k];
      if (outputOf_.at(v) != k)
        continue;
      while (v->def && v->def->parent == &region_ &&
             (v->def->kind == OpKind::Reshape || v->def->kind == OpKind::ExpandDims ||
              v->def->kind == OpKind::Squeeze))
        v = v->def->operands[0];
      if (v != y->operands[k] && v->def && v->def->parent == &region_ &&
          !stdlib::isView(v->def->kind) && !outputOf_.count(v))
        outputOf_.emplace(v, uint32_t(k));
    }
    for (auto &op : region_.ops)
      for (const Value *v : op->operands)
        uses_[v].push_back(op.get());
    for (auto &op : region_.ops) {
      if (op.get() == y)
        break;
      if (inEpilogue_.count(op.get()))
        continue; // computed by the product before it
      current_ = op.get();
      LowerFn fn = loweringTable().find(op->kind);
      if (!fn) {
        error = std::string("the GPU code generator has no kernel for '") + opName(op->kind) + "'";
        return fail(*op, error);
      }
      if (!(this->*fn)(*op, error))
        return fail(*op, error);
    }
    current_ = y;
    for (size_t k = 0; k < y->operands.size(); ++k) {
      if (placed_[k])
        continue;
      const Value *v = y->operands[k];
      View src = views_.at(v);
      View dst = View::dense({GpuRef::Kind::Output, uint32_t(k), 0}, v->type);
      copyView(dst, src, "yield");
    }
    finishScratch();
    return true;
  }

  // --- lowerings, one per family -------------------------------------------
  bool lowerConstant(const Operation &op, std::string &) {
    const DenseData &d = op.attr("value")->asDense();
    views_[op.result()] =
        View::dense(constant(std::string(d.bytes.begin(), d.bytes.end())), op.result()->type);
    return true;
  }

  // zeros / ones / full: a fill; arange and random tensors: the CPU kernel's
  // values, shipped as constant data.
  bool lowerCreation(const Operation &op, std::string &error) {
    const TensorType &t = op.result()->type;
    if (op.kind == OpKind::Zeros || op.kind == OpKind::Ones || op.kind == OpKind::Full) {
      uint64_t bytes = 0;
      if (op.kind == OpKind::Ones)
        cpu::fillInt(t.dtype, &bytes, 1, 1);
      else if (op.kind == OpKind::Full) {
        const Attribute *v = op.attr("value");
        if (v && v->kind() == Attribute::Kind::Int)
          cpu::fillInt(t.dtype, &bytes, 1, v->asInt());
        else
          cpu::fillValue(t.dtype, &bytes, 1, op.floatAttr("value", 0));
      }
      View out = result(op);
      if (out.numElements() > 0)
        launch(
            emitFillKernel(gm_, out,
                           std::string(reinterpret_cast<const char *>(&bytes), dtypeSize(t.dtype))),
            opName(op.kind));
      return true;
    }
    std::vector<Tensor> outs = {Tensor::empty(t)};
    if (auto e = cpu::runKernel(op, {}, outs)) {
      error = *e;
      return false;
    }
    std::string bytes(static_cast<const char *>(outs[0].raw()), size_t(t.byteSize()));
    views_[op.result()] = View::dense(constant(bytes), t);
    return true;
  }

  bool lowerView(const Operation &op, std::string &) {
    View x = views_.at(op.operands[0]);
    const TensorType &rt = op.result()->type;
    std::vector<int64_t> rs = rt.sizes();
    View v = x;
    v.shape = rs;
    switch (op.kind) {
    case OpKind::Transpose: {
      std::vector<int64_t> perm = op.attr("perm") ? op.intListAttr("perm") : std::vector<int64_t>{};
      if (perm.empty())
        for (size_t i = x.shape.size(); i-- > 0;)
          perm.push_back(int64_t(i));
      v.strides.clear();
      for (int64_t p : perm)
        v.strides.push_back(x.strides[size_t(p)]);
      break;
    }
    case OpKind::BroadcastTo: {
      v.strides.assign(rs.size(), 0);
      size_t off = rs.size() - x.shape.size();
      for (size_t i = 0; i < x.shape.size(); ++i)
        v.strides[off + i] = x.shape[i] == 1 ? 0 : x.strides[i];
      break;
    }
    case OpKind::Slice: {
      const auto &start = op.intListAttr("start"), &stop = op.intListAttr("stop"),
                 &step = op.intListAttr("step"), &drop = op.intListAttr("drop");
      int64_t base = 0;
      v.strides.clear();
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (std::find(drop.begin(), drop.end(), int64_t(d)) != drop.end()) {
          int64_t i = start[d] < 0 ? start[d] + x.shape[d] : start[d];
          base += std::clamp<int64_t>(i, 0, std::max<int64_t>(x.shape[d] - 1, 0)) * x.strides[d];
          continue;
        }
        stdlib::SliceDim s = stdlib::normalizeSliceDim(x.shape[d], start[d], stop[d], step[d]);
        if (s.len > 0)
          base += s.start * x.strides[d];
        v.strides.push_back(s.step * x.strides[d]);
      }
      v.ref.offset += base * int64_t(dtypeSize(x.dtype));
      break;
    }
    default: { // reshape, expand_dims, squeeze
      // Only axes of size 1 added or removed: the other axes keep their
      // strides, whatever they are.
      std::vector<size_t> xs, ys;
      for (size_t d = 0; d < x.shape.size(); ++d)
        if (x.shape[d] != 1)
          xs.push_back(d);
      for (size_t d = 0; d < rs.size(); ++d)
        if (rs[d] != 1)
          ys.push_back(d);
      bool same = xs.size() == ys.size();
      for (size_t i = 0; same && i < xs.size(); ++i)
        same = x.shape[xs[i]] == rs[ys[i]];
      if (same) {
        v.strides.assign(rs.size(), 0);
        for (size_t i = 0; i < xs.size(); ++i)
          v.strides[ys[i]] = x.strides[xs[i]];
        break;
      }
      // Otherwise a contiguous value takes the new shape.
      if (!x.contiguous())
        x = materialize(x);
      v = x;
      v.shape = rs;
      v.strides = cpu::rowMajorStrides(rs);
      break;
    }
    }
    views_[op.result()] = v;
    return true;
  }

  bool lowerFusion(const Operation &op, std::string &error) {
    std::vector<View> in, out;
    for (Value *v : op.operands)
      in.push_back(views_.at(v));
    bool empty = false;
    for (auto &r : op.results) {
      out.push_back(result(op, r.get()));
      empty |= r->type.numElements() == 0;
    }
    for (Value *v : op.operands)
      empty |= v->type.numElements() == 0;
    if (empty)
      return true; // nothing to compute (an empty reduction: see below)
    std::vector<GpuLaunch> ls;
    ConstantSink sink = [this](const std::string &bytes) { return constant(bytes); };
    ScratchSink scratch = [this](uint64_t bytes) {
      return GpuRef{GpuRef::Kind::Scratch, scratch_.add(bytes), 0};
    };
    if (!emitFusionKernel(gm_, op, in, out, sink, scratch, ls, error))
      return false;
    size_t members = op.regions[0]->ops.size() - 1;
    std::string what =
        "fusion of " + std::to_string(members) + " operation" + (members == 1 ? "" : "s");
    for (size_t i = 0; i < ls.size(); ++i)
      launch(ls[i], ls.size() > 1 && i + 1 < ls.size() ? what + " (pieces)" : what);
    return true;
  }

  bool lowerMatmul(const Operation &op, std::string &error) {
    DType t = op.result()->type.dtype;
    View a = views_.at(op.operands[0]), b = views_.at(op.operands[1]);
    bool aVec = a.shape.size() == 1, bVec = b.shape.size() == 1;
    if (aVec) {
      a.shape.insert(a.shape.begin(), 1);
      a.strides.insert(a.strides.begin(), 0);
    }
    if (bVec) {
      b.shape.push_back(1);
      b.strides.push_back(0);
    }
    int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
    // The batch: broadcast shapes, each operand's strides over it.
    std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2),
        bb(b.shape.begin(), b.shape.end() - 2);
    size_t rank = std::max(ba.size(), bb.size());
    std::vector<int64_t> batch(rank, 1);
    auto batchStrides = [&](const View &v, const std::vector<int64_t> &bs) {
      std::vector<int64_t> s(rank, 0);
      size_t off = rank - bs.size();
      for (size_t i = 0; i < bs.size(); ++i) {
        batch[off + i] = std::max(batch[off + i], bs[i]);
        s[off + i] = bs[i] == 1 ? 0 : v.strides[i];
      }
      return s;
    };
    std::vector<int64_t> sa = batchStrides(a, ba), sb = batchStrides(b, bb);
    int64_t count = 1;
    for (int64_t d : batch)
      count *= d;
    View c = result(op);
    if (c.numElements() == 0)
      return true;
    if (k == 0) {
      launch(emitFillKernel(gm_, c, std::string(dtypeSize(t), '\0')), "matmul (empty sum)");
      return true;
    }
    GpuGemm g;
    g.dtype = int32_t(abiDType(t));
    g.m = m;
    g.n = n;
    g.k = k;
    g.batch = count;
    // One stride per operand over the flattened batch, or a copy that has one.
    auto flatStride = [&](const std::vector<int64_t> &s, int64_t &out) {
      std::optional<int64_t> stride;
      int64_t inner = 1;
      for (size_t i = rank; i-- > 0;) {
        if (batch[i] == 1)
          continue;
        if (s[i] == 0 && (!stride || *stride == 0)) {
          stride = 0;
        } else if (!stride) {
          stride = s[i];
          if (inner != 1)
            return false;
        } else if (s[i] != *stride * inner) {
          return false;
        }
        inner *= batch[i];
        if (*stride == 0 && s[i] != 0)
          return false;
      }
      out = stride.value_or(0);
      return true;
    };
    // Whether a [m, k] part is readable with a leading dimension: returns
    // transposed-ness and ld, or false.
    auto matrix = [](const View &v, int64_t rows, int64_t cols, bool &trans, int64_t &ld) {
      int64_t sr = v.strides[v.strides.size() - 2], sc = v.strides.back();
      if ((cols == 1 || sc == 1) && (rows == 1 || sr >= cols)) {
        trans = false;
        ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
        return true;
      }
      if ((rows == 1 || sr == 1) && (cols == 1 || sc >= rows)) {
        trans = true;
        ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
        return true;
      }
      return false;
    };
    auto prepare = [&](View v, std::vector<int64_t> s, int64_t rows, int64_t cols, bool &trans,
                       int64_t &ld, int64_t &stride) {
      if (!flatStride(s, stride) || !matrix(v, rows, cols, trans, ld)) {
        // A contiguous copy of the operand over the whole batch.
        View full = v;
        full.shape = batch;
        full.shape.push_back(rows);
        full.shape.push_back(cols);
        full.strides = s;
        full.strides.push_back(v.strides[v.strides.size() - 2]);
        full.strides.push_back(v.strides.back());
        v = materialize(full);
        trans = false;
        ld = cols;
        stride = rows * cols;
      }
      return v.ref;
    };
    g.a = prepare(a, sa, m, k, g.transA, g.lda, g.strideA);
    g.b = prepare(b, sb, k, n, g.transB, g.ldb, g.strideB);
    g.c = c.ref;
    g.ldc = n;
    g.strideC = m * n;
    GpuStep s;
    s.kind = GpuStep::Kind::Gemm;
    s.what = "matmul " + op.operands[0]->type.str() + " x " + op.operands[1]->type.str();
    const Operation *epi = aVec || bVec ? nullptr : epilogueOf(op);
    if (epi) {
      // The fusion after the product (a bias, an activation) in the
      // fallback kernel, and as a kernel of its own after a vendor BLAS.
      std::vector<View> in, out;
      size_t replaced = 0;
      for (size_t i = 0; i < epi->operands.size(); ++i) {
        if (epi->operands[i] == op.result())
          replaced = i;
        in.push_back(epi->operands[i] == op.result() ? c : views_.at(epi->operands[i]));
      }
      for (auto &r : epi->results)
        out.push_back(result(*epi, r.get()));
      ConstantSink sink = [this](const std::string &bytes) { return constant(bytes); };
      FusionEpilogue fe(gm_, *epi, in, out, sink);
      std::vector<GpuLaunch> alone;
      if (!fe.prepare(error) || !emitGemmKernel(gm_, g, t, g.fallback, error, &fe, replaced) ||
          !fe.standalone(alone, error))
        return false;
      g.hasEpilogue = true;
      g.epilogue = alone.at(0);
      inEpilogue_.insert(epi);
      size_t members = epi->regions[0]->ops.size() - 1;
      s.what +=
          " + fusion of " + std::to_string(members) + " operation" + (members == 1 ? "" : "s");
    } else if (!emitGemmKernel(gm_, g, t, g.fallback, error)) {
      return false;
    }
    s.gemm = g;
    addStep(std::move(s));
    return true;
  }

  /// The fusion computed from a product's result alone, if it can be the
  /// product's epilogue: the result's only user, element-wise over the
  /// result's shape (no reductions), small (each thread computes it for
  /// its 16 outputs, inline), reading the result once and otherwise only
  /// values computed before the product; the result is not yielded.
  const Operation *epilogueOf(const Operation &mm) const {
    const Value *c = mm.result();
    auto it = uses_.find(c);
    if (it == uses_.end() || it->second.size() != 1 || outputOf_.count(c))
      return nullptr;
    const Operation *f = it->second[0];
    if (f->kind != OpKind::Fusion || f->regions.empty() ||
        f->regions[0]->ops.size() > kMaxEpilogueOps + 1 ||
        std::count(f->operands.begin(), f->operands.end(), c) != 1)
      return nullptr;
    for (const Value *v : f->operands)
      if (v != c && !views_.count(v))
        return nullptr;
    for (auto &r : f->results)
      if (r->type.numElements() == 0)
        return nullptr;
    auto dom = passes::fusionDomain(*f);
    if (!dom || dom->hasReductions || dom->dims != c->type.sizes())
      return nullptr;
    return f;
  }

  // concat and stack: each operand copied into its part of the result.
  bool lowerConcat(const Operation &op, std::string &) {
    View out = result(op);
    int64_t axis = op.intAttr("axis", 0);
    bool stack = op.kind == OpKind::Stack;
    int64_t at = 0;
    for (Value *v : op.operands) {
      View src = views_.at(v);
      View dst = out;
      int64_t width = stack ? 1 : src.shape[size_t(axis)];
      dst.ref.offset += at * out.strides[size_t(axis)] * int64_t(dtypeSize(out.dtype));
      if (stack) {
        dst.shape.erase(dst.shape.begin() + axis);
        dst.strides.erase(dst.strides.begin() + axis);
      } else {
        dst.shape[size_t(axis)] = width;
      }
      at += width;
      if (dst.numElements() > 0)
        copyView(dst, src, opName(op.kind));
    }
    return true;
  }

  bool lowerPad(const Operation &op, std::string &) {
    View out = result(op), x = views_.at(op.operands[0]);
    const std::vector<int64_t> &w = op.intListAttr("pads");
    uint64_t bytes = 0;
    const Attribute *v = op.attr("value");
    if (v && v->kind() == Attribute::Kind::Int)
      cpu::fillInt(out.dtype, &bytes, 1, v->asInt());
    else
      cpu::fillValue(out.dtype, &bytes, 1, op.floatAttr("value", 0));
    if (out.numElements() > 0)
      launch(
          emitFillKernel(gm_, out,
                         std::string(reinterpret_cast<const char *>(&bytes), dtypeSize(out.dtype))),
          "pad (border)");
    View inner = out;
    inner.shape = x.shape;
    for (size_t d = 0; d < x.shape.size(); ++d)
      inner.ref.offset += w[2 * d] * out.strides[d] * int64_t(dtypeSize(out.dtype));
    if (inner.numElements() > 0)
      copyView(inner, x, "pad");
    return true;
  }

  // gather, embedding, dynamic_index: the indices checked first (unless
  // they are constants in range), an index out of range reported as the
  // CPU kernel reports it (backend/cpu/IndexingKernels.cpp, same message),
  // through the error record; the gather itself clamps, so that no kernel
  // reads outside x.
  bool lowerGather(const Operation &op, std::string &) {
    View out = result(op);
    View x = views_.at(op.operands[0]), idx = views_.at(op.operands[1]);
    bool embedding = op.kind == OpKind::Embedding;
    int axis = embedding ? 0 : int(op.intAttr("axis", 0));
    int64_t n = x.shape[size_t(axis)];
    std::string message =
        embedding ? "embedding id {} is out of range for a table of " + std::to_string(n) + " rows"
                  : "index {} is out of range for axis " + std::to_string(axis) + " with size " +
                        std::to_string(n);
    if (idx.numElements() > 0 && !constantIndicesInRange(idx, n, !embedding))
      launch(
          emitIndexCheckKernel(gm_, idx, n, !embedding, errorRecord(), uint32_t(p_.steps.size())),
          std::string(opName(op.kind)) + " (index check)", message);
    if (out.numElements() > 0 && n > 0)
      launch(emitGatherKernel(gm_, out, x, idx, axis, !embedding), opName(op.kind));
    return true;
  }

  // argmax / argmin / prod: the reduced axes moved last (a view), then one
  // work-group per row.
  bool lowerArgReduce(const Operation &op, std::string &) {
    View x = views_.at(op.operands[0]);
    std::vector<int64_t> axes;
    if (op.attr("axis")) {
      const Attribute *a = op.attr("axis");
      axes = a->kind() == Attribute::Kind::Int ? std::vector<int64_t>{a->asInt()} : a->asIntList();
    } else {
      axes.resize(x.shape.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    View t = x;
    t.shape.clear();
    t.strides.clear();
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (!std::count(axes.begin(), axes.end(), int64_t(d))) {
        t.shape.push_back(x.shape[d]);
        t.strides.push_back(x.strides[d]);
      }
    for (int64_t d : axes) {
      t.shape.push_back(x.shape[size_t(d)]);
      t.strides.push_back(x.strides[size_t(d)]);
    }
    View out = result(op);
    if (out.numElements() == 0)
      return true;
    if (x.numElements() == 0 && op.kind != OpKind::Prod) {
      // argmax / argmin of nothing is an error, the CPU kernel's (E0405 at
      // the operation's line): a check of index 0 against an axis of size
      // 0, which always writes the error record.
      std::string zero(8, '\0');
      View idx{constant(zero), DType::I64, {1}, {1}};
      launch(emitIndexCheckKernel(gm_, idx, 0, false, errorRecord(), uint32_t(p_.steps.size())),
             std::string(opName(op.kind)) + " (empty)",
             std::string("attempt to get ") + opName(op.kind) + " of an empty sequence");
      return true;
    }
    if (x.numElements() == 0) {
      // An empty product is 1.
      uint64_t one = 0;
      cpu::fillInt(out.dtype, &one, 1, 1);
      launch(emitFillKernel(
                 gm_, out, std::string(reinterpret_cast<const char *>(&one), dtypeSize(out.dtype))),
             opName(op.kind));
      return true;
    }
    launch(emitArgReduceKernel(gm_, op.kind, out, t, int(axes.size())), opName(op.kind));
    return true;
  }

  bool lowerConv(const Operation &op, std::string &) {
    View x = views_.at(op.operands[0]);
    std::vector<int64_t> stride = pairAttr(op, "stride", {1, 1}),
                         padding = pairAttr(op, "padding", {0, 0});
    View out = result(op);
    if (out.numElements() > 0)
      launch(emitConvKernel(gm_, out, x, views_.at(op.operands[1]), stride[0], stride[1],
                            padding[0], padding[1]),
             "conv2d " + op.operands[0]->type.str() + " * " + op.operands[1]->type.str());
    return true;
  }

  bool lowerPool(const Operation &op, std::string &) {
    View x = views_.at(op.operands[0]);
    std::vector<int64_t> size = pairAttr(op, "size", {1, 1}), stride = pairAttr(op, "stride", size);
    View out = result(op);
    if (out.numElements() > 0)
      launch(emitPoolKernel(gm_, op.kind == OpKind::MaxPool2d, out, x, size[0], size[1], stride[0],
                            stride[1]),
             opName(op.kind));
    return true;
  }

private:
  /// An attribute that is an integer or [h, w], as [h, w].
  static std::vector<int64_t> pairAttr(const Operation &op, const char *name,
                                       std::vector<int64_t> dflt) {
    const Attribute *a = op.attr(name);
    if (!a)
      return dflt;
    if (a->kind() == Attribute::Kind::Int)
      return {a->asInt(), a->asInt()};
    return a->asIntList().size() == 2 ? a->asIntList() : dflt;
  }

  bool fail(const Operation &op, std::string &error) {
    if (op.loc.line > 0)
      error = std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col) + ": " + error;
    return false;
  }

  /// The buffer an operation's result is computed into: its segment output
  /// when the value is yielded (and that output is not taken), else a new
  /// scratch slot.
  View result(const Operation &op, const Value *v = nullptr) {
    if (!v)
      v = op.result();
    GpuRef r;
    auto it = outputOf_.find(v);
    if (it != outputOf_.end() && !placed_[it->second]) {
      placed_[it->second] = true;
      r = {GpuRef::Kind::Output, it->second, 0};
    } else {
      r = {GpuRef::Kind::Scratch, scratch_.add(uint64_t(v->type.byteSize())), 0};
    }
    View view = View::dense(r, v->type);
    views_[v] = view;
    return view;
  }

  View materialize(const View &src) {
    View dst;
    dst.dtype = src.dtype;
    dst.shape = src.shape;
    dst.strides = cpu::rowMajorStrides(src.shape);
    dst.ref = {GpuRef::Kind::Scratch,
               scratch_.add(uint64_t(src.numElements()) * dtypeSize(src.dtype)), 0};
    if (dst.numElements() > 0)
      copyView(dst, src, "materialized view");
    return dst;
  }

  void copyView(const View &dst, const View &src, const std::string &what) {
    if (dst.contiguous() && src.contiguous()) {
      GpuStep s;
      s.kind = GpuStep::Kind::Copy;
      s.copy = {dst.ref, src.ref, uint64_t(dst.numElements()) * dtypeSize(dst.dtype)};
      s.what = what;
      if (s.copy.bytes > 0)
        addStep(std::move(s));
      return;
    }
    launch(emitCopyKernel(gm_, dst, src), what);
  }

  GpuRef constant(const std::string &bytes) {
    // 256-byte aligned, like every buffer a kernel reads.
    size_t at = (p_.constants.size() + 255) / 256 * 256;
    p_.constants.resize(at, '\0');
    p_.constants += bytes;
    return {GpuRef::Kind::Constant, 0, int64_t(at)};
  }

  void launch(const GpuLaunch &l, const std::string &what, std::string error = "") {
    GpuStep s;
    s.kind = GpuStep::Kind::Launch;
    s.launch = l;
    s.what = what;
    s.error = std::move(error);
    addStep(std::move(s));
  }

  /// The program's error record (a scratch slot live through every step).
  GpuRef errorRecord() {
    if (!errorSlot_)
      errorSlot_ = scratch_.add(sizeof(GpuErrorRecord));
    return {GpuRef::Kind::Scratch, *errorSlot_, 0};
  }

  /// Whether `idx` is constant data whose every index lies in [0, n)
  /// (with `fromEnd`, in [-n, n)): nothing to check when the program runs.
  bool constantIndicesInRange(const View &idx, int64_t n, bool fromEnd) const {
    if (idx.ref.kind != GpuRef::Kind::Constant || !isInteger(idx.dtype))
      return false;
    size_t size = dtypeSize(idx.dtype);
    for (int64_t i = 0, total = idx.numElements(); i < total; ++i) {
      int64_t at = 0, rest = i;
      for (size_t d = idx.shape.size(); d-- > 0;) {
        at += rest % idx.shape[d] * idx.strides[d];
        rest /= idx.shape[d];
      }
      size_t byte = size_t(idx.ref.offset + at * int64_t(size));
      if (byte + size > p_.constants.size())
        return false;
      int64_t k = 0;
      const char *src = p_.constants.data() + byte;
      switch (idx.dtype) {
      case DType::I8:
        k = int8_t(*src);
        break;
      case DType::U8:
        k = uint8_t(*src);
        break;
      case DType::I32: {
        int32_t v;
        std::memcpy(&v, src, 4);
        k = v;
        break;
      }
      case DType::I64:
        std::memcpy(&k, src, 8);
        break;
      default:
        return false;
      }
      if (k >= n || k < (fromEnd ? -n : 0))
        return false;
    }
    return true;
  }

  void addStep(GpuStep s) {
    if (current_) {
      s.line = current_->loc.line > 0 ? uint32_t(current_->loc.line) : 0;
      s.column = current_->loc.col > 0 ? uint32_t(current_->loc.col) : 0;
    }
    uint32_t index = uint32_t(p_.steps.size());
    auto touch = [&](const GpuRef &r) {
      if (r.kind == GpuRef::Kind::Scratch)
        scratch_.touch(r.index, index);
    };
    forEachRef(s, touch);
    p_.steps.push_back(std::move(s));
  }

  template <typename Fn> static void forEachRef(GpuStep &s, Fn &&fn) {
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      for (GpuRef &r : s.launch.args)
        fn(r);
      break;
    case GpuStep::Kind::Gemm:
      fn(s.gemm.a);
      fn(s.gemm.b);
      fn(s.gemm.c);
      for (GpuRef &r : s.gemm.fallback.args)
        fn(r);
      if (s.gemm.hasEpilogue)
        for (GpuRef &r : s.gemm.epilogue.args)
          fn(r);
      break;
    case GpuStep::Kind::Copy:
      fn(s.copy.dst);
      fn(s.copy.src);
      break;
    }
  }

  // Slots become offsets in the one scratch area.
  void finishScratch() {
    if (errorSlot_) {
      scratch_.touch(*errorSlot_, 0);
      scratch_.touch(*errorSlot_, uint32_t(p_.steps.size()));
    }
    p_.scratchBytes = scratch_.place();
    if (errorSlot_)
      p_.errorOffset = int64_t(scratch_.offset(*errorSlot_));
    for (GpuStep &s : p_.steps)
      forEachRef(s, [&](GpuRef &r) {
        if (r.kind != GpuRef::Kind::Scratch)
          return;
        r.offset += int64_t(scratch_.offset(r.index));
        r.index = 0;
      });
  }

  const Region &region_;
  GpuModule &gm_;
  GpuProgram &p_;
  ScratchPlan scratch_;
  std::unordered_map<const Value *, View> views_;
  std::unordered_map<const Value *, uint32_t> outputOf_;
  std::vector<bool> placed_;
  const Operation *current_ = nullptr;
  std::optional<uint32_t> errorSlot_;
  std::unordered_map<const Value *, std::vector<const Operation *>> uses_;
  std::unordered_set<const Operation *> inEpilogue_; // fusions a product computes
};

LoweringTable::LoweringTable() : fns_(size_t(kNumOpKinds), nullptr) {
  add({OpKind::Constant}, &Lowering::lowerConstant);
  add({OpKind::Zeros, OpKind::Ones, OpKind::Full, OpKind::Arange, OpKind::RandomNormal,
       OpKind::RandomUniform},
      &Lowering::lowerCreation);
  add({OpKind::Reshape, OpKind::BroadcastTo, OpKind::Transpose, OpKind::ExpandDims, OpKind::Squeeze,
       OpKind::Slice},
      &Lowering::lowerView);
  add({OpKind::Fusion}, &Lowering::lowerFusion);
  add({OpKind::Matmul}, &Lowering::lowerMatmul);
  add({OpKind::Concat, OpKind::Stack}, &Lowering::lowerConcat);
  add({OpKind::Pad}, &Lowering::lowerPad);
  add({OpKind::Gather, OpKind::Embedding, OpKind::DynamicIndex}, &Lowering::lowerGather);
  add({OpKind::Argmax, OpKind::Argmin, OpKind::Prod}, &Lowering::lowerArgReduce);
  add({OpKind::Conv2d}, &Lowering::lowerConv);
  add({OpKind::MaxPool2d, OpKind::AvgPool2d}, &Lowering::lowerPool);
}

} // namespace

bool lowerSegment(const Operation &segment, GpuModule &gm, GpuProgram &program,
                  std::string &error) {
  return Lowering(segment, gm, program).run(error);
}

bool generatorLowers(OpKind kind) {
  if (loweringTable().find(kind))
    return true;
  // Operations that reach the lowering inside fusions (element-wise ones and
  // row reductions, whatever fuse decided, since SegmentPrepare wraps the
  // rest), and the composites canonicalize decomposes into them.
  const stdlib::OpInfo &info = stdlib::opInfo(kind);
  if (info.dialect != stdlib::Dialect::Core)
    return false;
  switch (info.cls) {
  case stdlib::OpClass::ElementwiseUnary:
  case stdlib::OpClass::ElementwiseBinary:
  case stdlib::OpClass::Comparison:
  case stdlib::OpClass::Logic:
  case stdlib::OpClass::ElementwiseOther:
    return true;
  default:
    return stdlib::isRowReduction(kind) || kind == OpKind::Softmax || kind == OpKind::LogSoftmax ||
           kind == OpKind::Layernorm;
  }
}

} // namespace mdl::backend::hip
