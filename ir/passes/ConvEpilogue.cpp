// epilogues, per function that has a convolution on an eligible device:
// 1. Regroup the function (Regroup.h): its host segments dissolved, small
//    callees inlined (JAX's jit(relu) and jit(_pad)), global reads hoisted.
// 2. For each convolution in walk order:
//    a. conv2d becomes the convolution it is (bf01_oi01->bf01);
//    b. an input padded with zeros (pad, pad_general) is read unpadded and
//       the padding added to the convolution's;
//    c. the chain of single uses that follows is absorbed while each link
//       is one of: add / sub / mul by a scalar or per-output-channel value
//       (broadcasts looked through), add of a value of the result's type
//       (residual, once), relu, maximum with 0, clip and minimum with
//       constants after it (one clip); no arithmetic after an activation;
//    d. after a leading add (the convolution's bias), the per-channel steps
//       are normalized with small new operations on their operands:
//       (x + a) * m as x * m + a * m, adjacent adds and adjacent
//       multiplications combined, so that at most one mul and one add
//       remain between the others;
//    e. one fused_convolution replaces the chain where its last link was.
// 3. A zero pad before a reduce_window (max pooling after a relu) becomes
//    the reduce_window's padding.
// 4. The absorbed operations go, with the views, constants and pads that
//    only they read; the function is partitioned again. Callees inlined
//    wherever they were called leave the module.
#include "ir/passes/ConvEpilogue.h"
#include "ir/Half.h"
#include "ir/passes/Partition.h"
#include "ir/passes/Regroup.h"
#include "stdlib/ConvEpilogue.h"
#include "stdlib/ConvLabels.h"
#include "stdlib/DeviceKinds.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace mdl::passes {

using namespace ir;
using stdlib::EpilogueKind;

namespace {

bool eligibleDevice(const Module &m, int d) {
  if (d < 0 || size_t(d) >= m.devices.size())
    return false;
  const stdlib::DeviceKindInfo *k = stdlib::findDeviceKind(m.devices[size_t(d)].kind);
  return k && k->memory == stdlib::MemoryModel::Host && k->jitPreparesSegments &&
         (!k->supports || k->supports(OpKind::FusedConvolution));
}

bool isConvolution(const Operation &op) {
  return (op.kind == OpKind::Convolution || op.kind == OpKind::Conv2d) && op.results.size() == 1 &&
         op.operands.size() == 2 && op.results[0]->type.isStatic() &&
         isFloat(op.results[0]->type.dtype);
}

/// `x` stored as `t` and read back.
std::optional<double> convertTo(DType t, double x) {
  switch (t) {
  case DType::F16:
    return halfToFloat(floatToHalf(float(x)));
  case DType::BF16:
    return bf16ToFloat(floatToBf16(float(x)));
  case DType::F32:
    return double(float(x));
  case DType::F64:
    return x;
  default: // integers: only values they hold exactly
    return std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 1e15 ? std::optional<double>(x)
                                                                         : std::nullopt;
  }
}

/// The value of every element of `v` when it is one constant, looking
/// through broadcasts, reshapes, conversions and constant globals (the
/// transfers pass hoists constants broadcast to large shapes into them).
std::optional<double> constantValue(const Module &m, const Value *v) {
  std::vector<DType> conversions;
  for (;;) {
    const Operation *d = v->def;
    if (d && d->operands.size() == 1 &&
        (d->kind == OpKind::BroadcastTo || d->kind == OpKind::Reshape ||
         d->kind == OpKind::ExpandDims || d->kind == OpKind::Squeeze ||
         d->kind == OpKind::Convert || d->kind == OpKind::Cast)) {
      conversions.push_back(v->type.dtype);
      v = d->operands[0];
      continue;
    }
    int g = d && d->kind == OpKind::Global ? m.findGlobal(d->stringAttr("name")) : -1;
    const Global *global = g >= 0 ? &m.globals[size_t(g)] : nullptr;
    const Operation *y =
        global && !global->isParam && global->init ? stdlib::terminatorOf(*global->init) : nullptr;
    if (!y || y->operands.size() != 1)
      break;
    v = y->operands[0];
  }
  if (v->def && v->def->kind == OpKind::Full) {
    const Attribute *a = v->def->attr("value");
    std::optional<double> r = a ? std::optional<double>(a->asNumber()) : std::nullopt;
    for (size_t i = conversions.size(); r && i-- > 0;)
      r = convertTo(conversions[i], *r);
    return r;
  }
  if (!v->def || v->def->kind != OpKind::Constant)
    return std::nullopt;
  const Attribute *a = v->def->attr("value");
  if (!a || a->kind() != Attribute::Kind::Dense)
    return std::nullopt;
  const DenseData &d = a->asDense();
  size_t n = d.bytes.size() / dtypeSize(d.type.dtype);
  if (n == 0)
    return std::nullopt;
  double x = d.elementAsDouble(0);
  for (size_t i = 1; i < n; ++i)
    if (d.elementAsDouble(int64_t(i)) != x)
      return std::nullopt;
  std::optional<double> r = x;
  for (size_t i = conversions.size(); r && i-- > 0;)
    r = convertTo(conversions[i], *r);
  return r;
}

/// What the rewrite of one convolution makes.
struct Rewrite {
  Operation *conv = nullptr;
  Operation *anchor = nullptr;                  // the last absorbed operation
  std::vector<Operation *> absorbed;            // the convolution and its chain
  std::vector<std::unique_ptr<Operation>> made; // new operations, the fused one last
};

class EpilogueFuser {
public:
  EpilogueFuser(const Module &m, Function &f) : m_(m), f_(f) {}

  int run(std::set<std::string> &inlined) {
    regroup(
        m_, f_, [this](int d) { return eligibleDevice(m_, d); }, inlined);
    countUses(*f_.body);
    std::vector<Operation *> convs;
    walk(*f_.body, [&](Operation &op) {
      if (isConvolution(op) && eligibleDevice(m_, op.device))
        convs.push_back(&op);
    });
    int n = 0;
    for (Operation *c : convs)
      n += rewrite(*c) ? 1 : 0;
    walk(*f_.body, [&](Operation &op) {
      if (op.kind == OpKind::ReduceWindow && eligibleDevice(m_, op.device))
        foldPoolingPad(op);
    });
    rebuild(*f_.body);
    removeUnused();
    partition(f_);
    return n;
  }

private:
  struct Step {
    EpilogueKind kind;
    Value *operand = nullptr;
  };

  void countUses(Region &r) {
    for (auto &op : r.ops) {
      for (Value *v : op->operands)
        uses_[v].push_back(op.get());
      for (auto &sub : op->regions)
        countUses(*sub);
    }
  }

  const std::vector<Operation *> &usesOf(const Value *v) {
    static const std::vector<Operation *> none;
    auto it = uses_.find(v);
    return it == uses_.end() ? none : it->second;
  }

  /// A new operation like `like` (device, placement, location); null when
  /// its shape rule refuses.
  Value *emit(OpKind k, std::vector<Value *> operands, const Operation &like, Rewrite &rw,
              std::vector<NamedAttr> attrs = {}) {
    std::vector<TensorType> types;
    for (Value *v : operands)
      types.push_back(v->type);
    stdlib::InferResult r = stdlib::inferTypes(k, types, attrs);
    if (!r.ok() || r.types.size() != 1)
      return nullptr;
    auto op = std::make_unique<Operation>(k, like.loc);
    op->operands = std::move(operands);
    op->attrs = std::move(attrs);
    op->device = like.device;
    op->placement = like.placement;
    Value *v = op->addResult(r.types[0]);
    v->device = like.device;
    rw.made.push_back(std::move(op));
    return v;
  }

  /// `v` with its broadcasts looked through, when that is a scalar or
  /// per-channel operand of a result of type `t`; else null.
  Value *channelOperand(Value *v, const TensorType &t, int feature) {
    for (Value *u = v;; u = u->def->operands[0]) {
      if (u->type.dtype == t.dtype && u->type.isStatic() &&
          stdlib::classifyChannelOperand(u->type, t, feature) != stdlib::ChannelOperand::Invalid)
        return u;
      if (!u->def || u->def->kind != OpKind::BroadcastTo)
        return nullptr;
    }
  }

  bool rewrite(Operation &conv) {
    Rewrite rw;
    rw.conv = &conv;
    std::vector<NamedAttr> attrs;
    if (!convAttributes(conv, attrs))
      return false;
    Value *input = conv.operands[0];
    foldPad(input, attrs);
    auto labels = stdlib::parseConvDimLabels(findString(attrs, "dim_labels"));
    if (!labels)
      return false;
    int feature = int(labels->output.b);
    const TensorType &type = conv.results[0]->type;
    std::vector<Step> steps;
    Value *cur = conv.results[0].get();
    rw.absorbed.push_back(&conv);
    rw.anchor = &conv;
    bool residual = false, clip = false;
    double lo = 0, hi = 6;
    for (;;) {
      const std::vector<Operation *> &u = usesOf(cur);
      if (u.size() != 1)
        break;
      Operation &op = *u[0];
      if (op.parent != conv.parent || op.device != conv.device || op.results.size() != 1 ||
          op.results[0]->type != type || dead_.count(&op))
        break;
      Value *other = nullptr;
      if (op.operands.size() == 2)
        other = op.operands[0] == cur ? op.operands[1] : op.operands[0];
      bool first = !op.operands.empty() && op.operands[0] == cur;
      Step s{EpilogueKind::Relu, nullptr};
      if (op.kind == OpKind::Relu && op.operands.size() == 1) {
        s.kind = EpilogueKind::Relu;
      } else if ((op.kind == OpKind::Add || op.kind == OpKind::Mul ||
                  (op.kind == OpKind::Sub && first)) &&
                 other != cur && !activated(steps)) {
        s.operand = channelOperand(other, type, feature);
        s.kind = op.kind == OpKind::Add   ? EpilogueKind::Add
                 : op.kind == OpKind::Sub ? EpilogueKind::Sub
                                          : EpilogueKind::Mul;
        if (!s.operand && op.kind == OpKind::Add && !residual && other->type == type) {
          s = {EpilogueKind::Residual, other};
          residual = true;
        }
        if (!s.operand)
          break;
      } else if (op.kind == OpKind::Maximum && other && other != cur &&
                 constantValue(m_, other) == 0.0) {
        s.kind = EpilogueKind::Relu;
      } else if (op.kind == OpKind::Minimum && other && other != cur && !clip && !steps.empty() &&
                 steps.back().kind == EpilogueKind::Relu) {
        std::optional<double> k = constantValue(m_, other);
        if (!k || !(*k >= 0))
          break;
        steps.back().kind = EpilogueKind::Clip;
        lo = 0, hi = *k, clip = true;
        absorb(rw, op, cur);
        continue;
      } else if (op.kind == OpKind::Clip && op.operands.size() == 3 && first && !clip) {
        std::optional<double> a = constantValue(m_, op.operands[1]),
                              b = constantValue(m_, op.operands[2]);
        if (!a || !b || !(*a <= *b))
          break;
        s.kind = EpilogueKind::Clip;
        lo = *a, hi = *b, clip = true;
      } else {
        break;
      }
      steps.push_back(s);
      absorb(rw, op, cur);
    }
    if (!normalize(steps, rw, conv))
      return false;
    std::string spec;
    std::vector<Value *> operands = {input, conv.operands[1]};
    for (const Step &s : steps) {
      spec += (spec.empty() ? "" : ",") + std::string(stdlib::epilogueName(s.kind));
      if (s.operand)
        operands.push_back(s.operand);
    }
    attrs.push_back({"epilogue", Attribute::string(spec)});
    attrs.push_back({"clip_lo", Attribute::real(lo)});
    attrs.push_back({"clip_hi", Attribute::real(hi)});
    Value *fused = emit(OpKind::FusedConvolution, operands, conv, rw, std::move(attrs));
    Value *last = rw.anchor->results[0].get();
    if (!fused || fused->type != last->type)
      return false;
    for (Operation *op : rw.absorbed)
      dead_.insert(op);
    replaced_[last] = fused;
    if (!steps.empty() && (steps.back().kind == EpilogueKind::Relu ||
                           (steps.back().kind == EpilogueKind::Clip && lo >= 0)))
      nonNegative_.insert(last);
    Operation *anchor = rw.anchor;
    made_[anchor] = std::move(rw.made);
    return true;
  }

  /// Whether an activation is among `steps` (the arithmetic after one
  /// stays outside: oneDNN applies the activation last).
  static bool activated(const std::vector<Step> &steps) {
    for (const Step &s : steps)
      if (s.kind == EpilogueKind::Relu || s.kind == EpilogueKind::Clip)
        return true;
    return false;
  }

  void absorb(Rewrite &rw, Operation &op, Value *&cur) {
    rw.absorbed.push_back(&op);
    rw.anchor = &op;
    cur = op.results[0].get();
  }

  static std::vector<int64_t> findInts(const std::vector<NamedAttr> &attrs, const char *name,
                                       std::vector<int64_t> dflt) {
    for (const NamedAttr &a : attrs)
      if (a.name == name && a.value.kind() == Attribute::Kind::IntList &&
          !a.value.asIntList().empty())
        return a.value.asIntList();
    return dflt;
  }

  static std::string findString(const std::vector<NamedAttr> &attrs, const char *name) {
    for (const NamedAttr &a : attrs)
      if (a.name == name)
        return a.value.asString();
    return "";
  }

  /// The fused operation's convolution attributes for `conv`.
  static bool convAttributes(const Operation &conv, std::vector<NamedAttr> &attrs) {
    if (conv.kind == OpKind::Convolution) {
      for (const NamedAttr &a : conv.attrs)
        attrs.push_back(a);
      return true;
    }
    // conv2d: NCHW input, OIHW kernel, symmetric zero padding.
    auto pair = [&](const char *name, int64_t dflt) {
      const Attribute *a = conv.attr(name);
      std::vector<int64_t> v;
      if (a && a->kind() == Attribute::Kind::Int)
        v = {a->asInt(), a->asInt()};
      else if (a && a->kind() == Attribute::Kind::IntList)
        v = a->asIntList();
      if (v.size() == 1)
        v.push_back(v[0]);
      return v.empty() ? std::vector<int64_t>{dflt, dflt} : v;
    };
    std::vector<int64_t> stride = pair("stride", 1), pad = pair("padding", 0);
    if (stride.size() != 2 || pad.size() != 2)
      return false;
    attrs = {{"dim_labels", Attribute::string("bf01_oi01->bf01")},
             {"strides", Attribute::intList(stride)},
             {"padding", Attribute::intList({pad[0], pad[0], pad[1], pad[1]})}};
    return true;
  }

  /// Reads `input` unpadded when it is a zero padding of the spatial
  /// dimensions (and the convolution dilates no input), adding the widths
  /// to `attrs`' padding.
  void foldPad(Value *&input, std::vector<NamedAttr> &attrs) {
    Operation *p = input->def;
    if (!p || p->results.size() != 1)
      return;
    std::vector<int64_t> lo, hi;
    if (p->kind == OpKind::PadGeneral && p->operands.size() == 2) {
      if (constantValue(m_, p->operands[1]) != 0.0)
        return;
      for (int64_t i : p->intListAttr("interior"))
        if (i != 0)
          return;
      lo = p->intListAttr("low");
      hi = p->intListAttr("high");
    } else if (p->kind == OpKind::Pad && p->operands.size() == 1 &&
               p->floatAttr("value", 0) == 0.0) {
      const std::vector<int64_t> &w = p->intListAttr("pads");
      for (size_t i = 0; i + 1 < w.size(); i += 2) {
        lo.push_back(w[i]);
        hi.push_back(w[i + 1]);
      }
    } else {
      return;
    }
    auto labels = stdlib::parseConvDimLabels(findString(attrs, "dim_labels"));
    Value *source = p->operands[0];
    if (!labels || int(lo.size()) != source->type.rank() || hi.size() != lo.size())
      return;
    const stdlib::DimLabels &in = labels->input;
    if (lo[size_t(in.a)] || hi[size_t(in.a)] || lo[size_t(in.b)] || hi[size_t(in.b)])
      return;
    size_t s = in.spatial.size();
    std::vector<int64_t> pad = findInts(attrs, "padding", std::vector<int64_t>(2 * s, 0));
    std::vector<int64_t> ldil = findInts(attrs, "lhs_dilation", std::vector<int64_t>(s, 1));
    if (pad.size() != 2 * s)
      return;
    for (int64_t d : ldil)
      if (d != 1)
        return;
    for (size_t i = 0; i < s; ++i) {
      int64_t l = lo[size_t(in.spatial[i])], h = hi[size_t(in.spatial[i])];
      if (l < 0 || h < 0)
        return;
      pad[2 * i] += l;
      pad[2 * i + 1] += h;
    }
    bool set = false;
    for (NamedAttr &a : attrs)
      if (a.name == "padding") {
        a.value = Attribute::intList(pad);
        set = true;
      }
    if (!set)
      attrs.push_back({"padding", Attribute::intList(pad)});
    input = source;
  }

  /// Step 3: a reduce_window reads a zero-padded input unpadded, its own
  /// padding (which pads with the initial value) in place of the pad, when
  /// the pad's value is the initial value, or when the reducer is max, the
  /// pad 0 and the padded values a relu's (never below 0: a window, which
  /// always holds one of them, has the same maximum with or without zeros).
  void foldPoolingPad(Operation &op) {
    if (op.operands.size() != 2 || op.results.size() != 1)
      return;
    Operation *p = op.operands[0]->def;
    if (!p || p->kind != OpKind::PadGeneral || p->operands.size() != 2 || dead_.count(p))
      return;
    std::optional<double> value = constantValue(m_, p->operands[1]),
                          init = constantValue(m_, op.operands[1]);
    bool same = value && init && *value == *init;
    bool relu =
        op.stringAttr("reducer") == "max" && value == 0.0 && nonNegative_.count(p->operands[0]);
    if (!same && !relu)
      return;
    size_t r = size_t(op.results[0]->type.rank());
    const std::vector<int64_t> &lo = p->intListAttr("low"), &hi = p->intListAttr("high"),
                               &in = p->intListAttr("interior");
    std::vector<int64_t> pad = op.intListAttr("padding"), bdil = op.intListAttr("base_dilation");
    if (lo.size() != r || hi.size() != r || pad.size() != 2 * r)
      return;
    for (size_t d = 0; d < r; ++d) {
      if ((d < in.size() && in[d] != 0) || lo[d] < 0 || hi[d] < 0 ||
          (d < bdil.size() && bdil[d] != 1))
        return;
      pad[2 * d] += lo[d];
      pad[2 * d + 1] += hi[d];
    }
    op.setAttr("padding", Attribute::intList(pad));
    op.operands[0] = p->operands[0];
    folded_.insert(p);
  }

  /// Step 2d. False when a new operation could not be typed.
  bool normalize(std::vector<Step> &steps, Rewrite &rw, const Operation &like) {
    // A leading add is the convolution's bias (oneDNN adds it before the
    // post-operations): (x + b) * s + t stays as it is.
    size_t first = !steps.empty() && steps[0].kind == EpilogueKind::Add ? 1 : 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = first; i + 1 < steps.size(); ++i) {
        Step &a = steps[i], &b = steps[i + 1];
        bool add = a.kind == EpilogueKind::Add, mul = a.kind == EpilogueKind::Mul;
        if ((add || mul) && b.kind == a.kind) {
          a.operand = emit(add ? OpKind::Add : OpKind::Mul, {a.operand, b.operand}, like, rw);
          steps.erase(steps.begin() + long(i) + 1);
        } else if (add && b.kind == EpilogueKind::Mul) {
          Value *am = emit(OpKind::Mul, {a.operand, b.operand}, like, rw);
          a = {EpilogueKind::Mul, b.operand};
          b = {EpilogueKind::Add, am};
        } else {
          continue;
        }
        for (const Step &s : steps)
          if (s.operand == nullptr && stdlib::takesOperand(s.kind))
            return false;
        changed = true;
        break;
      }
    }
    return true;
  }

  /// Step 4 in one region (and those below it): the chains replaced.
  void rebuild(Region &r) {
    std::vector<std::unique_ptr<Operation>> out;
    for (auto &op : r.ops) {
      for (Value *&v : op->operands)
        if (auto it = replaced_.find(v); it != replaced_.end())
          v = it->second;
      for (auto &sub : op->regions)
        rebuild(*sub);
      if (auto it = made_.find(op.get()); it != made_.end())
        for (auto &n : it->second) {
          remapOperands(*n, replaced_);
          out.push_back(std::move(n));
        }
      if (!dead_.count(op.get()))
        out.push_back(std::move(op));
      else
        graveyard_.push_back(std::move(op));
    }
    r.ops.clear();
    for (auto &op : out)
      r.push(std::move(op));
  }

  /// Drops the views, constants, conversions and pads of the function that
  /// nothing reads any more (those the absorbed operations read).
  void removeUnused() {
    std::unordered_map<const Value *, int> count;
    walk(*f_.body, [&](Operation &op) {
      for (Value *v : op.operands)
        ++count[v];
    });
    for (bool changed = true; changed;)
      changed = removeUnused(*f_.body, count);
  }

  /// One sweep of `r` and the regions below it; whether it removed any.
  bool removeUnused(Region &r, std::unordered_map<const Value *, int> &count) {
    bool any = false;
    for (auto &op : r.ops)
      for (auto &sub : op->regions)
        any |= removeUnused(*sub, count);
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<std::unique_ptr<Operation>> keep;
      for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
        Operation &op = **it;
        bool removable = (stdlib::isView(op.kind) || op.kind == OpKind::Constant ||
                          op.kind == OpKind::Pad || op.kind == OpKind::PadGeneral ||
                          op.kind == OpKind::Convert || op.kind == OpKind::Cast) &&
                         op.regions.empty() && !op.results.empty() &&
                         (wasRead(op) || folded_.count(&op));
        for (auto &res : op.results)
          removable = removable && count[res.get()] == 0;
        if (removable) {
          for (Value *v : op.operands)
            --count[v];
          removed_.insert(&op);
          graveyard_.push_back(std::move(*it));
          changed = any = true;
        } else {
          keep.push_back(std::move(*it));
        }
      }
      r.ops.clear();
      for (auto it = keep.rbegin(); it != keep.rend(); ++it)
        r.push(std::move(*it));
    }
    return any;
  }

  /// Whether an absorbed operation read `op`'s result: only those are
  /// removed (a value the program never read stays, as the interpreter
  /// computes it).
  bool wasRead(const Operation &op) {
    for (auto &res : op.results)
      for (Operation *u : usesOf(res.get()))
        if (dead_.count(u) || removed_.count(u))
          return true;
    return false;
  }

  const Module &m_;
  Function &f_;
  std::unordered_map<const Value *, std::vector<Operation *>> uses_;
  std::unordered_set<const Operation *> dead_, removed_, folded_;
  /// Results of absorbed chains that end in a relu (or a clip at 0 or above).
  std::unordered_set<const Value *> nonNegative_;
  ValueMap replaced_;
  std::unordered_map<const Operation *, std::vector<std::unique_ptr<Operation>>> made_;
  /// Removed operations, kept alive until the pass ends (maps point at them).
  std::vector<std::unique_ptr<Operation>> graveyard_;
};

} // namespace

int fuseConvolutionEpilogues(Module &m) {
  int n = 0;
  std::set<std::string> inlined;
  for (auto &f : m.functions) {
    bool any = false;
    walk(*f->body,
         [&](Operation &op) { any |= isConvolution(op) && eligibleDevice(m, op.device); });
    if (any)
      n += EpilogueFuser(m, *f).run(inlined);
  }
  // Callees inlined everywhere they were called are compiled no more.
  std::set<std::string> referenced;
  for (auto &f : m.functions)
    walk(*f->body, [&](Operation &op) {
      if (op.kind == OpKind::Call)
        referenced.insert(op.stringAttr("callee"));
      for (const std::string &a : stdlib::functionAttrs(op.kind))
        if (op.attr(a))
          referenced.insert(op.stringAttr(a));
    });
  size_t before = m.functions.size();
  m.functions.erase(std::remove_if(m.functions.begin(), m.functions.end(),
                                   [&](const std::unique_ptr<Function> &f) {
                                     return inlined.count(f->name) && !referenced.count(f->name);
                                   }),
                    m.functions.end());
  if (m.functions.size() != before)
    m.reindex();
  return n;
}

} // namespace mdl::passes
