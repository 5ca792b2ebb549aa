// Indexing kernels of the HLO import operations: dynamic_slice and
// dynamic_update_slice (start indices clamped so the slice fits, as XLA
// does), pad_general (negative and interior padding), and gather / scatter
// with XLA's dimension numbers, batching dimensions included.
//
// gather clamps each start index so the slice lies inside the operand;
// scatter skips an update window that does not fit (XLA's CPU and GPU
// behaviour), and combines with a named combiner or a module function.
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;
using Ints = std::vector<int64_t>;

namespace {

int64_t readIndex(const Tensor &t, int64_t i) {
  switch (t.dtype()) {
  case ir::DType::I8: return t.data<int8_t>()[i];
  case ir::DType::U8: return t.data<uint8_t>()[i];
  case ir::DType::I32: return t.data<int32_t>()[i];
  case ir::DType::I64: return t.data<int64_t>()[i];
  default: return int64_t(loadAsDouble(t, i));
  }
}

bool contains(const Ints &v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Advances a row-major multi-index; false after the last one.
bool next(Ints &idx, const Ints &shape) {
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    if (++idx[size_t(d)] < shape[size_t(d)])
      return true;
    idx[size_t(d)] = 0;
  }
  return false;
}

int64_t dot(const Ints &a, const Ints &b) {
  int64_t s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

Status dynamicSlice(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y) {
  const Tensor &x = in[0];
  Ints xs = shapeOf(x), ys = shapeOf(y), str = rowMajorStrides(xs);
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    int64_t s = std::clamp<int64_t>(readIndex(in[d + 1], 0), 0, xs[d] - ys[d]);
    base += s * str[d];
  }
  stridedCopy(ir::dtypeSize(y.dtype()), ys, y.raw(), rowMajorStrides(ys), 0, x.raw(), str, base);
  return std::nullopt;
}

Status dynamicUpdateSlice(const std::vector<Tensor> &in, Tensor &y) {
  const Tensor &x = in[0], &u = in[1];
  copyBytes(y.raw(), x.raw(), y.byteSize());
  Ints xs = shapeOf(x), us = shapeOf(u), str = rowMajorStrides(xs);
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (us[d] > xs[d])
      return std::string("dynamic_update_slice: the update is larger than the operand");
    int64_t s = std::clamp<int64_t>(readIndex(in[d + 2], 0), 0, xs[d] - us[d]);
    base += s * str[d];
  }
  stridedCopy(ir::dtypeSize(y.dtype()), us, y.raw(), str, base, u.raw(), rowMajorStrides(us), 0);
  return std::nullopt;
}

void fillWithScalar(Tensor &y, const Tensor &v) {
  visitBits(ir::dtypeSize(y.dtype()), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U value = *v.data<U>(), *p = y.data<U>();
    int64_t n = y.numElements();
    for (int64_t i = 0; i < n; ++i)
      p[i] = value;
  });
}

Status padGeneral(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y) {
  const Tensor &x = in[0];
  fillWithScalar(y, in[1]);
  const Ints &lo = op.intListAttr("low"), &in_ = op.intListAttr("interior");
  Ints xs = shapeOf(x), ys = shapeOf(y), xstr = rowMajorStrides(xs), ystr = rowMajorStrides(ys);
  if (lo.size() != xs.size() || in_.size() != xs.size())
    return std::string("pad_general attributes do not match the operand's rank");
  Ints count(xs.size()), dstStr(xs.size());
  int64_t srcBase = 0, dstBase = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    int64_t step = in_[d] + 1;
    int64_t i0 = lo[d] >= 0 ? 0 : (-lo[d] + step - 1) / step;
    int64_t i1 = ys[d] - 1 - lo[d] < 0 ? 0 : std::min(xs[d], (ys[d] - 1 - lo[d]) / step + 1);
    count[d] = std::max<int64_t>(0, i1 - i0);
    srcBase += i0 * xstr[d];
    dstBase += (lo[d] + i0 * step) * ystr[d];
    dstStr[d] = ystr[d] * step;
  }
  if (product(count) > 0)
    stridedCopy(ir::dtypeSize(y.dtype()), count, y.raw(), dstStr, dstBase, x.raw(), xstr, srcBase);
  return std::nullopt;
}

Status gather(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y) {
  const Tensor &x = in[0], &idx = in[1];
  const Ints &offsetDims = op.intListAttr("offset_dims"),
             &collapsed = op.intListAttr("collapsed_slice_dims"),
             &startMap = op.intListAttr("start_index_map"), &sizes = op.intListAttr("slice_sizes"),
             &obatch = op.intListAttr("operand_batching_dims"),
             &ibatch = op.intListAttr("start_indices_batching_dims");
  int64_t ivd = op.intAttr("index_vector_dim", 0);
  Ints xs = shapeOf(x), is = shapeOf(idx), ys = shapeOf(y);
  Ints xstr = rowMajorStrides(xs), istr = rowMajorStrides(is), ystr = rowMajorStrides(ys);
  int r = int(xs.size()), ir = int(is.size());
  if (int(sizes.size()) != r)
    return std::string("gather: slice_sizes do not match the operand's rank");
  // Output dimensions: batch (not in offset_dims) and offset ones.
  Ints batchOut, offsetOut, windowOperand;
  for (int d = 0; d < int(ys.size()); ++d)
    (contains(offsetDims, d) ? offsetOut : batchOut).push_back(d);
  for (int d = 0; d < r; ++d)
    if (!contains(collapsed, d) && !contains(obatch, d))
      windowOperand.push_back(d);
  if (windowOperand.size() != offsetOut.size())
    return std::string("gather: offset_dims do not match the slice");
  Ints batchShape, sliceShape, sliceDst, sliceSrc;
  for (int64_t d : batchOut)
    batchShape.push_back(ys[size_t(d)]);
  for (size_t j = 0; j < offsetOut.size(); ++j) {
    sliceShape.push_back(ys[size_t(offsetOut[j])]);
    sliceDst.push_back(ystr[size_t(offsetOut[j])]);
    sliceSrc.push_back(xstr[size_t(windowOperand[j])]);
  }
  int64_t sliceCount = product(sliceShape), vec = ivd < ir ? is[size_t(ivd)] : 1;
  size_t esize = ir::dtypeSize(y.dtype());
  const char *src = static_cast<const char *>(x.raw());
  char *dst = static_cast<char *>(y.raw());
  Ints b(batchShape.size(), 0), start(size_t(r), 0);
  if (product(batchShape) == 0 || y.numElements() == 0)
    return std::nullopt;
  do {
    // The indices position of this batch index (index vector dim at 0).
    int64_t ibase = 0;
    size_t k = 0;
    for (int d = 0; d < ir; ++d)
      if (d != ivd)
        ibase += b[k++] * istr[size_t(d)];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t j = 0; j < int64_t(startMap.size()) && j < vec; ++j)
      start[size_t(startMap[size_t(j)])] =
          readIndex(idx, ibase + (ivd < ir ? j * istr[size_t(ivd)] : 0));
    for (size_t j = 0; j < obatch.size(); ++j) {
      int64_t dIdx = ibatch[j];
      start[size_t(obatch[j])] = b[size_t(dIdx < ivd ? dIdx : dIdx - 1)];
    }
    int64_t srcBase = 0, dstBase = 0;
    for (int d = 0; d < r; ++d)
      srcBase += std::clamp<int64_t>(start[size_t(d)], 0, xs[size_t(d)] - sizes[size_t(d)]) *
                 xstr[size_t(d)];
    for (size_t j = 0; j < batchOut.size(); ++j)
      dstBase += b[j] * ystr[size_t(batchOut[j])];
    if (sliceCount == 1)
      std::memcpy(dst + dstBase * int64_t(esize), src + srcBase * int64_t(esize), esize);
    else
      stridedCopy(esize, sliceShape, dst, sliceDst, dstBase, src, sliceSrc, srcBase);
  } while (next(b, batchShape));
  return std::nullopt;
}

// The combiner of a scatter on one element of each operand.
template <typename T> T combine(const std::string &c, T old, T upd) {
  if constexpr (std::is_same_v<T, bool>) {
    return c == "assign" ? upd : (c == "add" || c == "or" || c == "max") ? (old || upd)
                                                                         : (old && upd);
  } else {
    using C = ComputeT<T>;
    C a = Elem<T>::load(old), b = Elem<T>::load(upd);
    if (c == "assign")
      return upd;
    if (c == "add") {
      if constexpr (kIsInt<T>)
        return wrapAdd(a, b);
      else
        return Elem<T>::store(C(a + b));
    }
    if (c == "mul") {
      if constexpr (kIsInt<T>)
        return wrapMul(a, b);
      else
        return Elem<T>::store(C(a * b));
    }
    if (c == "max")
      return Elem<T>::store((a > b || a != a) ? a : b);
    return Elem<T>::store((a < b || a != a) ? a : b);
  }
}

Status scatter(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,
               const FunctionCaller *caller) {
  size_t n = (in.size() - 1) / 2;
  const Tensor &idx = in[n], &u0 = in[n + 1];
  const Ints &win = op.intListAttr("update_window_dims"),
             &inserted = op.intListAttr("inserted_window_dims"),
             &toOperand = op.intListAttr("scatter_dims_to_operand_dims"),
             &ibatch = op.intListAttr("input_batching_dims"),
             &sbatch = op.intListAttr("scatter_indices_batching_dims");
  int64_t ivd = op.intAttr("index_vector_dim", 0);
  std::string comb = op.stringAttr("combiner"), fn = op.stringAttr("to_apply");
  for (size_t i = 0; i < n; ++i)
    copyBytes(out[i].raw(), in[i].raw(), out[i].byteSize());
  Ints xs = shapeOf(out[0]), is = shapeOf(idx), us = shapeOf(u0);
  Ints xstr = rowMajorStrides(xs), istr = rowMajorStrides(is), ustr = rowMajorStrides(us);
  int r = int(xs.size()), ir = int(is.size());
  Ints scatterU, windowOperand;
  for (int d = 0; d < int(us.size()); ++d)
    if (!contains(win, d))
      scatterU.push_back(d);
  for (int d = 0; d < r; ++d)
    if (!contains(inserted, d) && !contains(ibatch, d))
      windowOperand.push_back(d);
  if (windowOperand.size() != win.size())
    return std::string("scatter: update_window_dims do not match the operand");
  Ints sShape, wShape(win.size());
  for (int64_t d : scatterU)
    sShape.push_back(us[size_t(d)]);
  Ints wSize(size_t(r), 1);
  for (size_t j = 0; j < win.size(); ++j) {
    wShape[j] = us[size_t(win[j])];
    wSize[size_t(windowOperand[j])] = wShape[j];
  }
  int64_t vec = ivd < ir ? is[size_t(ivd)] : 1;
  if (product(sShape) == 0 || product(wShape) == 0)
    return std::nullopt;
  Ints s(sShape.size(), 0), start(size_t(r), 0);
  std::vector<Tensor> args, results;
  do {
    int64_t ibase = 0;
    size_t k = 0;
    for (int d = 0; d < ir; ++d)
      if (d != ivd)
        ibase += s[k++] * istr[size_t(d)];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t j = 0; j < int64_t(toOperand.size()) && j < vec; ++j)
      start[size_t(toOperand[size_t(j)])] =
          readIndex(idx, ibase + (ivd < ir ? j * istr[size_t(ivd)] : 0));
    for (size_t j = 0; j < ibatch.size(); ++j) {
      int64_t dIdx = sbatch[j];
      start[size_t(ibatch[j])] = s[size_t(dIdx < ivd ? dIdx : dIdx - 1)];
    }
    bool fits = true;
    for (int d = 0; d < r; ++d)
      fits &= start[size_t(d)] >= 0 && start[size_t(d)] + wSize[size_t(d)] <= xs[size_t(d)];
    if (!fits)
      continue;
    int64_t ubase = 0, xbase = dot(start, xstr);
    for (size_t j = 0; j < scatterU.size(); ++j)
      ubase += s[j] * ustr[size_t(scatterU[j])];
    Ints w(wShape.size(), 0);
    do {
      int64_t uo = ubase, xo = xbase;
      for (size_t j = 0; j < w.size(); ++j) {
        uo += w[j] * ustr[size_t(win[j])];
        xo += w[j] * xstr[size_t(windowOperand[j])];
      }
      if (!comb.empty()) {
        for (size_t i = 0; i < n; ++i)
          visitDType(out[i].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            T *o = out[i].data<T>();
            o[xo] = combine<T>(comb, o[xo], in[n + 1 + i].data<T>()[uo]);
          });
        continue;
      }
      args.clear();
      for (size_t i = 0; i < n; ++i) {
        Tensor a = Tensor::empty(ir::TensorType::scalar(out[i].dtype()));
        std::memcpy(a.raw(), static_cast<char *>(out[i].raw()) + xo * int64_t(a.byteSize()),
                    a.byteSize());
        args.push_back(a);
      }
      for (size_t i = 0; i < n; ++i) {
        const Tensor &upd = in[n + 1 + i];
        Tensor a = Tensor::empty(ir::TensorType::scalar(upd.dtype()));
        std::memcpy(a.raw(), static_cast<const char *>(upd.raw()) + uo * int64_t(a.byteSize()),
                    a.byteSize());
        args.push_back(a);
      }
      if (auto err = callScalarFunction(caller, fn, args, results))
        return err;
      if (results.size() != n)
        return "scatter: @" + fn + " returned " + std::to_string(results.size()) + " values";
      for (size_t i = 0; i < n; ++i)
        std::memcpy(static_cast<char *>(out[i].raw()) + xo * int64_t(results[i].byteSize()),
                    results[i].raw(), results[i].byteSize());
    } while (next(w, wShape));
  } while (next(s, sShape));
  return std::nullopt;
}

} // namespace

void registerHloIndexingKernels(KernelTable &t) {
  t.add(OpKind::DynamicSlice,
        MDL_KERNEL {
          if (int(in.size()) != 1 + in[0].rank())
            return std::string(
                "dynamic_slice needs one start index per dimension");
          return dynamicSlice(op, in, out[0]);
        });
  t.add(OpKind::DynamicUpdateSlice,
        MDL_KERNEL {
          if (int(in.size()) != 2 + in[0].rank() ||
              in[1].rank() != in[0].rank())
            return std::string(
                "dynamic_update_slice needs one start index per dimension");
          return dynamicUpdateSlice(in, out[0]);
        });
  t.add(OpKind::PadGeneral,
        MDL_KERNEL {
          return padGeneral(op, in, out[0]);
        });
  t.add(OpKind::GatherGeneral,
        MDL_KERNEL {
          return gather(op, in, out[0]);
        });
  t.add(OpKind::Scatter,
        MDL_KERNEL {
          if (in.size() < 3 || in.size() % 2 == 0 ||
              out.size() != (in.size() - 1) / 2)
            return std::string(
                "scatter needs N operands, the indices and N updates");
          return scatter(op, in, out, caller);
        });
}

} // namespace mdl::backend::cpu
