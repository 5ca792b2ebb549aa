// The mpc kind's compile-time half: a segment of the IR becomes a protocol
// program (Program.h). The segment's arguments are the program's inputs,
// already secret-shared on the device; its yielded values are outputs that
// stay shared. Public values inside the segment (literals, zeros, ones,
// full, arange) become constants, trivially shared; a product, sum or
// difference with one becomes the cheaper operation by a public value.
//
// The operations it translates are the kind's answer to supports(): what
// the protocol implements. A segment it cannot translate (a cast from
// fixed point to an integer, gather with secret indices, a negative slice
// step) is refused with a message naming the operation and its line.
#include "backend/mpc/MpcArtifact.h"
#include "stdlib/OpAttrs.h"
#include "stdlib/Registry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace mdl::backend::mpc {

namespace {

using ir::DType;
using ir::OpKind;
using K = ProgramOpKind;

bool isFixed(DType t) { return ir::isFloat(t); }

ProgramAttr ints(const std::string &name, std::vector<int64_t> v) {
  ProgramAttr a;
  a.name = name;
  a.kind = AttrKind::Ints;
  a.ints = std::move(v);
  return a;
}

ProgramAttr reals(const std::string &name, std::vector<double> v) {
  ProgramAttr a;
  a.name = name;
  a.kind = AttrKind::Floats;
  a.floats = std::move(v);
  return a;
}

/// A public tensor known when the segment is compiled.
struct Public {
  Shape shape;
  std::vector<double> values;
  bool integer = false;
};

class Translator {
public:
  explicit Translator(const ir::Operation &segment) : seg_(segment) {}

  bool run(Program &p, std::string &error) {
    const ir::Region &body = *seg_.regions[0];
    for (auto &a : body.args) {
      ProgramInput in;
      in.slot = newSlot(a.get());
      in.owner = 0; // unused: a segment's inputs arrive shared
      in.shape = a->type.sizes();
      in.encoding = isFixed(a->type.dtype) ? EncodingKind::Fixed : EncodingKind::Integer;
      p_.inputs.push_back(in);
    }
    for (auto &op : body.ops) {
      if (stdlib::hasTrait(op->kind, stdlib::trait::Terminator)) {
        for (ir::Value *v : op->operands) {
          int s = slotOf(v);
          if (s < 0)
            return fail(*op, "yields a value it cannot hold shared", error);
          p_.outputs.push_back({s, false});
        }
        break;
      }
      size_t first = p_.instructions.size();
      if (!translate(*op, error))
        return false;
      for (size_t i = first; i < p_.instructions.size(); ++i) {
        p_.instructions[i].line = int(op->loc.line);
        p_.instructions[i].col = int(op->loc.col);
      }
    }
    p_.numSlots = next_;
    p = std::move(p_);
    return true;
  }

private:
  int newSlot(const ir::Value *v) {
    slots_[v] = next_;
    return next_++;
  }

  /// The slot of a shared value; a public one is shared on first use.
  int slotOf(const ir::Value *v) {
    auto it = slots_.find(v);
    if (it != slots_.end())
      return it->second;
    auto pub = publics_.find(v);
    if (pub == publics_.end())
      return -1;
    Instruction ins;
    ins.op = K::Constant;
    ins.shape = pub->second.shape;
    ins.attrs = {reals("value", pub->second.values), ints("value_shape", pub->second.shape),
                 ints("integer", {pub->second.integer ? 1 : 0})};
    ins.result = newSlot(v);
    p_.instructions.push_back(std::move(ins));
    return ins.result;
  }

  const Public *publicOf(const ir::Value *v) const {
    auto it = publics_.find(v);
    return it == publics_.end() ? nullptr : &it->second;
  }

  bool fail(const ir::Operation &op, const std::string &why, std::string &error) {
    error = std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col) + ": '" +
            ir::opName(op.kind) + "' on an mpc device: " + why;
    return false;
  }

  /// Appends `result = kind(operands...)`.
  bool emit(const ir::Operation &op, K kind, std::vector<const ir::Value *> operands,
            std::vector<ProgramAttr> attrs, std::string &error) {
    std::vector<int> slots;
    for (const ir::Value *v : operands) {
      int s = slotOf(v);
      if (s < 0)
        return fail(op, "an operand is not available on the device", error);
      slots.push_back(s);
    }
    return finish(op, kind, std::move(slots), std::move(attrs));
  }

  /// An intermediate value of shape `shape` (for multi-step translations).
  int emitTemp(K kind, std::vector<int> operands, std::vector<ProgramAttr> attrs, Shape shape) {
    Instruction ins;
    ins.op = kind;
    ins.operands = std::move(operands);
    ins.attrs = std::move(attrs);
    ins.shape = std::move(shape);
    ins.result = next_++;
    p_.instructions.push_back(std::move(ins));
    return ins.result;
  }

  /// Appends the step that gives `op`'s result from slots already made.
  bool finish(const ir::Operation &op, K kind, std::vector<int> operands,
              std::vector<ProgramAttr> attrs = {}) {
    Instruction ins;
    ins.op = kind;
    ins.operands = std::move(operands);
    ins.attrs = std::move(attrs);
    ins.shape = op.results[0]->type.sizes();
    ins.result = newSlot(op.results[0].get());
    p_.instructions.push_back(std::move(ins));
    return true;
  }

  void record(const ir::Operation &op, Public pub) { publics_[op.results[0].get()] = std::move(pub); }

  static Public filled(const ir::TensorType &t, double v) {
    Public p{t.sizes(), std::vector<double>(size_t(t.numElements()), v), !isFixed(t.dtype)};
    return p;
  }

  bool translate(const ir::Operation &op, std::string &error) {
    const ir::TensorType &rt = op.results.empty() ? ir::TensorType() : op.results[0]->type;
    switch (op.kind) {
    // Public values: known now, shared when first used.
    case OpKind::Constant: {
      const ir::DenseData &d = op.attr("value")->asDense();
      Public p{d.type.sizes(), {}, !isFixed(d.type.dtype)};
      for (int64_t i = 0; i < d.type.numElements(); ++i)
        p.values.push_back(d.elementAsDouble(i));
      record(op, std::move(p));
      return true;
    }
    case OpKind::Zeros:
      record(op, filled(rt, 0));
      return true;
    case OpKind::Ones:
      record(op, filled(rt, 1));
      return true;
    case OpKind::Full:
      record(op, filled(rt, stdlib::attrs::Full::of(op).value));
      return true;
    case OpKind::Arange: {
      Public p = filled(rt, 0);
      for (size_t i = 0; i < p.values.size(); ++i)
        p.values[i] = double(i);
      record(op, std::move(p));
      return true;
    }
    // Linear operations.
    case OpKind::Add:
    case OpKind::Sub:
      return emit(op, op.kind == OpKind::Add ? K::Add : K::Sub, {op.operands[0], op.operands[1]},
                  {}, error);
    case OpKind::Neg:
      return emit(op, K::Neg, {op.operands[0]}, {}, error);
    case OpKind::Mul:
      return product(op, error);
    case OpKind::Div: {
      // By a public divisor: a product by its reciprocal.
      if (const Public *c = publicOf(op.operands[1])) {
        std::vector<double> inv;
        for (double v : c->values)
          inv.push_back(1.0 / v);
        return emit(op, K::MulPublic, {op.operands[0]},
                    {reals("value", inv), ints("value_shape", c->shape)}, error);
      }
      return emit(op, K::Div, {op.operands[0], op.operands[1]}, {}, error);
    }
    case OpKind::Matmul:
      return emit(op, K::MatMul, {op.operands[0], op.operands[1]}, {}, error);
    // Comparisons and selections (secret bits, EncodingKind::Integer).
    case OpKind::Lt: return emit(op, K::Lt, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Le: return emit(op, K::Le, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Gt: return emit(op, K::Gt, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Ge: return emit(op, K::Ge, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Eq: return emit(op, K::Eq, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Ne: return emit(op, K::Ne, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Select:
      return emit(op, K::Select, {op.operands[0], op.operands[1], op.operands[2]}, {}, error);
    case OpKind::Maximum: return emit(op, K::Max, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Minimum: return emit(op, K::Min, {op.operands[0], op.operands[1]}, {}, error);
    case OpKind::Clip: {
      const Public *lo = publicOf(op.operands[1]), *hi = publicOf(op.operands[2]);
      if (lo && hi && lo->values.size() == 1 && hi->values.size() == 1)
        return emit(op, K::Clip, {op.operands[0]},
                    {reals("lo", {lo->values[0]}), reals("hi", {hi->values[0]})}, error);
      // Bounds that are tensors or secret: max then min.
      int m = emitTemp(K::Max, {slotOf(op.operands[0]), slotOf(op.operands[1])}, {}, rt.sizes());
      return finish(op, K::Min, {m, slotOf(op.operands[2])});
    }
    // Nonlinear functions.
    case OpKind::Abs: return emit(op, K::Abs, {op.operands[0]}, {}, error);
    case OpKind::Relu: return emit(op, K::Relu, {op.operands[0]}, {}, error);
    case OpKind::Exp: return emit(op, K::Exp, {op.operands[0]}, {}, error);
    case OpKind::Sqrt: return emit(op, K::Sqrt, {op.operands[0]}, {}, error);
    case OpKind::Rsqrt: return emit(op, K::Rsqrt, {op.operands[0]}, {}, error);
    case OpKind::Tanh: return emit(op, K::Tanh, {op.operands[0]}, {}, error);
    case OpKind::Sigmoid: return emit(op, K::Sigmoid, {op.operands[0]}, {}, error);
    case OpKind::Gelu:
      return emit(op, K::Gelu, {op.operands[0]},
                  {ints("approximate", {stdlib::attrs::Gelu::of(op).approximate ? 1 : 0})},
                  error);
    case OpKind::Softmax:
      return emit(op, K::Softmax, {op.operands[0]},
                  {ints("axis", {stdlib::attrs::Softmax::of(op).axis})}, error);
    case OpKind::Layernorm: {
      auto a = stdlib::attrs::Layernorm::of(op);
      return emit(op, K::LayerNorm, {op.operands[0], op.operands[1], op.operands[2]},
                  {reals("eps", {a.eps}), ints("axis", {a.axis})}, error);
    }
    // Casts between the two encodings.
    case OpKind::Cast: {
      DType from = op.operands[0]->type.dtype, to = rt.dtype;
      if (to == DType::Bool && from != DType::Bool)
        return fail(op, "a cast to bool is not implemented (compare with != 0 instead)", error);
      if (isFixed(from) == isFixed(to))
        return emit(op, K::Reshape, {op.operands[0]}, {}, error); // same values
      if (!isFixed(from))                                           // bits, counts -> fixed
        return emit(op, K::MulPublic, {op.operands[0]},
                    {reals("value", {1.0}), ints("value_shape", {})}, error);
      return fail(op, "a cast from fixed point to " + std::string(ir::dtypeName(to)) +
                          " is not implemented",
                  error);
    }
    // Reductions.
    case OpKind::Sum:
    case OpKind::Mean: {
      auto axes = stdlib::attrs::Sum::of(op).axis;
      return emit(op, op.kind == OpKind::Sum ? K::Sum : K::Mean, {op.operands[0]},
                  {ints("axes", axes ? *axes : std::vector<int64_t>()),
                   ints("keepdims", {stdlib::attrs::Sum::of(op).keepdims ? 1 : 0})},
                  error);
    }
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
      return reduceExtremum(op, error);
    case OpKind::Argmax:
    case OpKind::Argmin:
      return argExtremum(op, error);
    // Data movement with public indices: local.
    case OpKind::Reshape:
    case OpKind::ExpandDims:
    case OpKind::Squeeze:
      return emit(op, K::Reshape, {op.operands[0]}, {}, error);
    case OpKind::BroadcastTo:
      return emit(op, K::Broadcast, {op.operands[0]}, {}, error);
    case OpKind::Transpose:
      return emit(op, K::Transpose, {op.operands[0]},
                  {ints("perm", op.intListAttr("perm"))}, error);
    case OpKind::Concat:
    case OpKind::Stack:
      return concat(op, error);
    case OpKind::Slice:
      return slice(op, error);
    case OpKind::Gather: {
      const Public *idx = publicOf(op.operands[1]);
      if (!idx)
        return fail(op, "gather needs public indices (constants in the program)", error);
      std::vector<int64_t> indices;
      for (double v : idx->values)
        indices.push_back(int64_t(v));
      return emit(op, K::Gather, {op.operands[0]},
                  {ints("indices", indices), ints("index_shape", idx->shape),
                   ints("axis", {stdlib::attrs::Gather::of(op).axis})},
                  error);
    }
    case OpKind::Pad:
      return pad(op, error);
    default:
      return fail(op, "not implemented by the mpc device", error);
    }
  }

  bool product(const ir::Operation &op, std::string &error) {
    // By a public value: one truncation instead of a secret product.
    for (int k = 0; k < 2; ++k)
      if (const Public *c = publicOf(op.operands[size_t(k)]))
        return emit(op, K::MulPublic, {op.operands[size_t(1 - k)]},
                    {reals("value", c->values), ints("value_shape", c->shape)}, error);
    return emit(op, K::Mul, {op.operands[0], op.operands[1]}, {}, error);
  }

  bool reduceExtremum(const ir::Operation &op, std::string &error) {
    auto a = stdlib::attrs::ReduceMax::of(op);
    const ir::TensorType &x = op.operands[0]->type;
    std::vector<int64_t> axes = a.axis ? *a.axis : std::vector<int64_t>();
    if (axes.empty())
      for (int i = 0; i < x.rank(); ++i)
        axes.push_back(i);
    K kind = op.kind == OpKind::ReduceMax ? K::ReduceMax : K::ReduceMin;
    // One axis at a time, highest first, keeping dimensions until the end.
    std::sort(axes.rbegin(), axes.rend());
    int cur = slotOf(op.operands[0]);
    Shape shape = x.sizes();
    for (int64_t ax : axes) {
      shape[size_t(ax)] = 1;
      cur = emitTemp(kind, {cur}, {ints("axis", {ax}), ints("keepdims", {1})}, shape);
    }
    return finish(op, K::Reshape, {cur});
  }

  /// argmax/argmin along an axis, or over the flattened tensor.
  bool argExtremum(const ir::Operation &op, std::string &error) {
    const ir::TensorType &x = op.operands[0]->type;
    std::optional<int64_t> axis = stdlib::attrs::Argmax::of(op).axis;
    int src = slotOf(op.operands[0]);
    if (src < 0)
      return fail(op, "an operand is not available on the device", error);
    int64_t ax = 0;
    if (!axis) {
      if (x.rank() != 1)
        src = emitTemp(K::Reshape, {src}, {}, {x.numElements()});
    } else {
      ax = *axis < 0 ? *axis + x.rank() : *axis;
    }
    return finish(op, op.kind == OpKind::Argmax ? K::ArgMax : K::ArgMin, {src},
                  {ints("axis", {ax}), ints("keepdims", {0})});
  }

  bool concat(const ir::Operation &op, std::string &error) {
    int64_t axis = stdlib::attrs::Concat::of(op).axis;
    std::vector<int> parts;
    for (const ir::Value *v : op.operands) {
      int s = slotOf(v);
      if (s < 0)
        return fail(op, "an operand is not available on the device", error);
      if (op.kind == OpKind::Stack) { // a new axis of size 1 on each part
        Shape sh = v->type.sizes();
        sh.insert(sh.begin() + axis, 1);
        s = emitTemp(K::Reshape, {s}, {}, sh);
      }
      parts.push_back(s);
    }
    return finish(op, K::Concat, parts, {ints("axis", {axis})});
  }

  bool slice(const ir::Operation &op, std::string &error) {
    const ir::TensorType &x = op.operands[0]->type;
    const std::vector<int64_t> &start = op.intListAttr("start"), &stop = op.intListAttr("stop"),
                               &step = op.intListAttr("step"), &drop = op.intListAttr("drop");
    std::vector<int64_t> starts, stops, steps;
    Shape kept;
    for (int i = 0; i < x.rank(); ++i) {
      int64_t n = x.dims[size_t(i)].size;
      bool dropped = std::find(drop.begin(), drop.end(), i) != drop.end();
      if (dropped) {
        int64_t b = start[size_t(i)] < 0 ? start[size_t(i)] + n : start[size_t(i)];
        starts.push_back(b);
        stops.push_back(b + 1);
        steps.push_back(1);
        kept.push_back(1);
        continue;
      }
      if (step[size_t(i)] < 0)
        return fail(op, "negative slice steps are not implemented", error);
      stdlib::SliceDim d = stdlib::normalizeSliceDim(n, start[size_t(i)], stop[size_t(i)],
                                                     step[size_t(i)]);
      starts.push_back(d.start);
      stops.push_back(d.start + d.len * d.step);
      steps.push_back(d.step);
      kept.push_back(d.len);
    }
    int s = emitTemp(K::Slice, {slotOf(op.operands[0])},
                     {ints("starts", starts), ints("stops", stops), ints("steps", steps)}, kept);
    return finish(op, K::Reshape, {s});
  }

  bool pad(const ir::Operation &op, std::string &error) {
    auto a = stdlib::attrs::Pad::of(op);
    const ir::TensorType &x = op.operands[0]->type;
    int cur = slotOf(op.operands[0]);
    Shape shape = x.sizes();
    bool integer = !isFixed(x.dtype);
    for (int i = 0; i < x.rank(); ++i) {
      int64_t lo = a.pads[size_t(2 * i)], hi = a.pads[size_t(2 * i + 1)];
      if (lo == 0 && hi == 0)
        continue;
      std::vector<int> parts;
      for (int64_t w : {lo, int64_t(-1), hi}) {
        if (w == -1) {
          parts.push_back(cur);
          continue;
        }
        if (w == 0)
          continue;
        Shape block = shape;
        block[size_t(i)] = w;
        int64_t n = 1;
        for (int64_t d : block)
          n *= d;
        parts.push_back(emitTemp(K::Constant, {},
                                 {reals("value", std::vector<double>(size_t(n), a.value)),
                                  ints("value_shape", block), ints("integer", {integer ? 1 : 0})},
                                 block));
      }
      shape[size_t(i)] += lo + hi;
      cur = emitTemp(K::Concat, parts, {ints("axis", {i})}, shape);
    }
    return finish(op, K::Reshape, {cur});
  }

  const ir::Operation &seg_;
  Program p_;
  int next_ = 0;
  std::unordered_map<const ir::Value *, int> slots_;
  std::unordered_map<const ir::Value *, Public> publics_;
};

} // namespace

bool mpcImplements(ir::OpKind k) {
  switch (k) {
  // The structure every segment and host program carries.
  case OpKind::Constant: case OpKind::Global: case OpKind::Call:
  case OpKind::If: case OpKind::For: case OpKind::While: case OpKind::Yield:
  case OpKind::Return: case OpKind::Segment: case OpKind::Fusion:
  case OpKind::To: case OpKind::Reveal: case OpKind::Transfer:
  // What Translator::translate turns into protocol operations.
  case OpKind::Zeros: case OpKind::Ones: case OpKind::Full: case OpKind::Arange:
  case OpKind::Add: case OpKind::Sub: case OpKind::Neg: case OpKind::Mul: case OpKind::Div:
  case OpKind::Matmul: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
  case OpKind::Eq: case OpKind::Ne: case OpKind::Select: case OpKind::Maximum:
  case OpKind::Minimum: case OpKind::Clip: case OpKind::Abs: case OpKind::Relu:
  case OpKind::Exp: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Tanh:
  case OpKind::Sigmoid: case OpKind::Gelu: case OpKind::Softmax: case OpKind::Layernorm:
  case OpKind::Cast: case OpKind::Sum: case OpKind::Mean: case OpKind::ReduceMax:
  case OpKind::ReduceMin: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Reshape:
  case OpKind::ExpandDims: case OpKind::Squeeze: case OpKind::BroadcastTo:
  case OpKind::Transpose: case OpKind::Concat: case OpKind::Stack: case OpKind::Slice:
  case OpKind::Gather: case OpKind::Pad:
    return true;
  default:
    return false;
  }
}

std::unique_ptr<Artifact> compileProtocol(const ir::Operation &segment, std::string &error) {
  auto a = std::make_unique<ProtocolArtifact>();
  Translator t(segment);
  if (!t.run(a->program, error))
    return nullptr;
  if (llvm::Error e = verifyProgram(a->program)) {
    error = "the protocol program is malformed (please report this): " +
            llvm::toString(std::move(e));
    return nullptr;
  }
  return a;
}

} // namespace mdl::backend::mpc
