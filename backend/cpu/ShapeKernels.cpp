// Kernels that move elements without computing on them: transpose,
// reshape-like views, broadcast_to, concat, stack, slice, pad, and the
// placement copies (to, reveal, transfer).
//
// Each is one strided copy: the output is walked in row-major order and the
// input read through strides that encode the permutation, broadcast, slice
// step (negative for reversed slices) or block offset.
#include "backend/cpu/KernelSupport.h"

#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

size_t elemBytes(const Tensor &t) { return ir::dtypeSize(t.dtype()); }

// Output = input, element for element (reshape, expand_dims, squeeze,
// placement copies).
Status sameBytes(const Tensor &x, Tensor &y) {
  copyBytes(y.raw(), x.raw(), y.byteSize());
  return std::nullopt;
}

Status transpose(const ir::Operation &op, const Tensor &x, Tensor &y) {
  std::vector<int64_t> inStr = rowMajorStrides(shapeOf(x)), os = shapeOf(y);
  const std::vector<int64_t> &perm = op.intListAttr("perm");
  std::vector<int64_t> src(os.size());
  for (size_t d = 0; d < os.size(); ++d)
    src[d] = inStr[perm.size() == os.size() ? perm[d] : os.size() - 1 - d];
  stridedCopy(elemBytes(y), os, y.raw(), rowMajorStrides(os), 0, x.raw(), src,
              0);
  return std::nullopt;
}

Status broadcastTo(const Tensor &x, Tensor &y) {
  std::vector<int64_t> os = shapeOf(y);
  stridedCopy(elemBytes(y), os, y.raw(), rowMajorStrides(os), 0, x.raw(),
              broadcastStrides(shapeOf(x), os), 0);
  return std::nullopt;
}

// concat (stack = true: each input gains a size-1 axis first).
Status concat(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y,
              bool stack) {
  int64_t axis = op.intAttr("axis", 0);
  std::vector<int64_t> os = shapeOf(y), outStr = rowMajorStrides(os);
  int64_t at = 0; // position along the axis
  for (const Tensor &x : in) {
    std::vector<int64_t> dims = shapeOf(x);
    if (stack)
      dims.insert(dims.begin() + axis, 1);
    stridedCopy(elemBytes(y), dims, y.raw(), outStr, at * outStr[axis], x.raw(),
                rowMajorStrides(dims), 0);
    at += dims[axis];
  }
  return std::nullopt;
}

Status slice(const ir::Operation &op, const Tensor &x, Tensor &y) {
  std::vector<int64_t> is = shapeOf(x), inStr = rowMajorStrides(is);
  const std::vector<int64_t> &start = op.intListAttr("start"),
                             &stop = op.intListAttr("stop"),
                             &step = op.intListAttr("step"),
                             &drop = op.intListAttr("drop");
  if (start.size() != is.size() || stop.size() != is.size() ||
      step.size() != is.size())
    return std::string("slice attributes do not match the rank of ") +
           x.type().str();
  std::vector<int64_t> dims, src;
  int64_t base = 0;
  for (size_t d = 0; d < is.size(); ++d) {
    if (std::find(drop.begin(), drop.end(), int64_t(d)) != drop.end()) {
      int64_t i = start[d] < 0 ? start[d] + is[d] : start[d];
      if (i < 0 || i >= is[d])
        return "index " + std::to_string(start[d]) +
               " is out of range for axis " + std::to_string(d) +
               " with size " + std::to_string(is[d]);
      base += i * inStr[d];
      continue;
    }
    stdlib::SliceDim s =
        stdlib::normalizeSliceDim(is[d], start[d], stop[d], step[d]);
    if (s.len > 0)
      base += s.start * inStr[d];
    dims.push_back(s.len);
    src.push_back(s.step * inStr[d]);
  }
  if (product(dims) != y.numElements())
    return "slice of " + x.type().str() + " does not give " + y.type().str();
  stridedCopy(elemBytes(y), dims, y.raw(), rowMajorStrides(dims), 0, x.raw(),
              src, base);
  return std::nullopt;
}

Status pad(const ir::Operation &op, const Tensor &x, Tensor &y) {
  const std::vector<int64_t> &pads = op.intListAttr("pads");
  std::vector<int64_t> is = shapeOf(x), os = shapeOf(y),
                       outStr = rowMajorStrides(os);
  const ir::Attribute *v = op.attr("value");
  if (v && v->kind() == ir::Attribute::Kind::Int)
    fillInt(y.dtype(), y.raw(), y.numElements(), v->asInt());
  else
    fillValue(y.dtype(), y.raw(), y.numElements(), op.floatAttr("value", 0));
  int64_t base = 0;
  for (size_t d = 0; d < is.size() && 2 * d < pads.size(); ++d)
    base += pads[2 * d] * outStr[d];
  stridedCopy(elemBytes(y), is, y.raw(), outStr, base, x.raw(),
              rowMajorStrides(is), 0);
  return std::nullopt;
}

} // namespace

void registerShapeKernels(KernelTable &t) {
  // A transfer or reshape keeps the bytes (a copy: host memory is shared
  // only by the executors, never by a kernel's output).
  t.add({OpKind::To, OpKind::Reveal, OpKind::Transfer, OpKind::Reshape,
         OpKind::ExpandDims, OpKind::Squeeze},
        MDL_KERNEL {
          if (in[0].numElements() != out[0].numElements())
            return "cannot reshape " + in[0].type().str() + " into " +
                   out[0].type().str();
          return sameBytes(in[0], out[0]);
        });
  t.add(OpKind::Transpose,
        MDL_KERNEL { return transpose(op, in[0], out[0]); });
  t.add(OpKind::BroadcastTo,
        MDL_KERNEL { return broadcastTo(in[0], out[0]); });
  t.add(OpKind::Concat, MDL_KERNEL { return concat(op, in, out[0], false); });
  t.add(OpKind::Stack, MDL_KERNEL { return concat(op, in, out[0], true); });
  t.add(OpKind::Slice, MDL_KERNEL { return slice(op, in[0], out[0]); });
  t.add(OpKind::Pad, MDL_KERNEL { return pad(op, in[0], out[0]); });
}

} // namespace mdl::backend::cpu
