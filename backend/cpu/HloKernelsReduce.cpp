// reduce, reduce_window and select_and_scatter.
//
// A named reducer (add, mul, max, min, and, or) runs as a native loop: float
// sums and products accumulate in double, integers wrap, max/min propagate
// NaN; the result starts from the init value and takes the elements in
// row-major order. Other reducers are module functions called once per
// element with (accumulators..., elements...). Window positions that fall in
// padding or between dilated elements are skipped, as XLA's evaluator does.
// select_and_scatter selects, in each window, the first element for which
// select(current, candidate) never fails (ge: the first maximum), and
// scatters the source value there with the scatter reducer.
#include "backend/cpu/HloKernels.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;
using Ints = std::vector<int64_t>;

namespace {

bool next(Ints &idx, const Ints &shape) {
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    if (++idx[size_t(d)] < shape[size_t(d)])
      return true;
    idx[size_t(d)] = 0;
  }
  return false;
}

// A named reduction on one element type: acc = f(acc, x).
template <typename T> struct Named {
  using A = std::conditional_t<kIsFloat<T>, double, std::conditional_t<std::is_same_v<T, bool>, bool, uint64_t>>;
  int kind; // 0 add, 1 mul, 2 max, 3 min, 4 and, 5 or
  static A load(T v) {
    if constexpr (kIsFloat<T>)
      return double(Elem<T>::load(v));
    else if constexpr (std::is_same_v<T, bool>)
      return v;
    else
      return uint64_t(int64_t(v));
  }
  static T store(A a) {
    if constexpr (kIsFloat<T>)
      return Elem<T>::store(ComputeT<T>(a));
    else if constexpr (std::is_same_v<T, bool>)
      return a;
    else
      return T(UnsignedT<T>(a));
  }
  A step(A acc, A x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind == 1 || kind == 3 || kind == 4 ? (acc && x) : (acc || x);
    } else if constexpr (kIsFloat<T>) {
      switch (kind) {
      case 0: return acc + x;
      case 1: return acc * x;
      case 2: return (x > acc || x != x) && acc == acc ? x : acc;
      default: return (x < acc || x != x) && acc == acc ? x : acc;
      }
    } else {
      switch (kind) {
      case 0: return acc + x;
      case 1: return acc * x;
      case 2: return T(x) > T(acc) ? x : acc;
      default: return T(x) < T(acc) ? x : acc;
      }
    }
  }
};

// acc[j] = step(acc[j], x[j]) for a row of n elements (the reducer chosen
// once for the row).
template <typename T>
void rowStep(const Named<T> &f, typename Named<T>::A *acc, const T *x, int64_t n) {
  switch (f.kind) {
  case 0:
    for (int64_t j = 0; j < n; ++j)
      acc[j] = Named<T>{0}.step(acc[j], Named<T>::load(x[j]));
    break;
  case 2:
    for (int64_t j = 0; j < n; ++j)
      acc[j] = Named<T>{2}.step(acc[j], Named<T>::load(x[j]));
    break;
  default:
    for (int64_t j = 0; j < n; ++j)
      acc[j] = f.step(acc[j], Named<T>::load(x[j]));
  }
}

int reducerKind(const std::string &r) {
  return r == "add" ? 0 : r == "mul" ? 1 : r == "max" ? 2 : r == "min" ? 3 : r == "and" ? 4
         : r == "or" ? 5 : -1;
}

Tensor scalarAt(const Tensor &t, int64_t i) {
  Tensor s = Tensor::empty(ir::TensorType::scalar(t.dtype()));
  size_t b = ir::dtypeSize(t.dtype());
  std::memcpy(s.raw(), static_cast<const char *>(t.raw()) + i * int64_t(b), b);
  return s;
}

// Generic reduction state: accumulators as scalar tensors.
struct FnAcc {
  const FunctionCaller *caller;
  std::string fn;
  std::vector<Tensor> acc, args, results;
  Status step(const std::vector<Tensor> &xs, int64_t at) {
    args = acc;
    for (const Tensor &x : xs)
      args.push_back(scalarAt(x, at));
    if (auto err = callScalarFunction(caller, fn, args, results))
      return err;
    if (results.size() != acc.size())
      return "@" + fn + " returned " + std::to_string(results.size()) + " values, expected " +
             std::to_string(acc.size());
    for (size_t i = 0; i < acc.size(); ++i)
      if (results[i].type() != acc[i].type())
        return "@" + fn + " returned " + results[i].type().str() + ", expected " +
               acc[i].type().str();
    acc = results;
    return std::nullopt;
  }
};

Status reduce(const ir::Operation &op, const std::vector<Tensor> &in, std::vector<Tensor> &out,
              const FunctionCaller *caller) {
  size_t n = in.size() / 2;
  const Ints &dims = op.intListAttr("dims");
  Ints xs = shapeOf(in[0]), str = rowMajorStrides(xs);
  Ints keptShape, keptStr, redShape, redStr;
  for (int d = 0; d < int(xs.size()); ++d) {
    bool red = std::find(dims.begin(), dims.end(), d) != dims.end();
    (red ? redShape : keptShape).push_back(xs[size_t(d)]);
    (red ? redStr : keptStr).push_back(str[size_t(d)]);
  }
  for (size_t i = 0; i < n; ++i)
    if (shapeOf(in[i]) != xs || out[i].numElements() != product(keptShape))
      return std::string("reduce inputs and results do not match");
  int64_t outN = product(keptShape), R = product(redShape);
  StridedLoop<1> red(redShape, {redStr});
  auto baseOf = [&](int64_t o) {
    int64_t b = 0;
    for (size_t d = keptShape.size(); d-- > 0;) {
      b += o % keptShape[d] * keptStr[d];
      o /= keptShape[d];
    }
    return b;
  };
  int kind = reducerKind(op.stringAttr("reducer"));
  if (kind >= 0) {
    return visitDType(in[0].dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Named<T> f{kind};
      const T *x = in[0].data<T>();
      T init = in[1].data<T>()[0];
      T *y = out[0].data<T>();
      bool par = outN * R >= kParallelCheap && outN >= 2 && !omp_in_parallel();
#pragma omp parallel for if (par) schedule(static)
      for (int64_t o = 0; o < outN; ++o) {
        auto acc = Named<T>::load(init);
        int64_t base = baseOf(o);
        red.runRange(0, R, [&](std::array<int64_t, 1> off, std::array<int64_t, 1> st, int64_t cnt) {
          const T *p = x + base + off[0];
          for (int64_t j = 0; j < cnt; ++j)
            acc = f.step(acc, Named<T>::load(p[j * st[0]]));
        });
        y[o] = Named<T>::store(acc);
      }
      return std::nullopt;
    });
  }
  std::vector<Tensor> xsIn(in.begin(), in.begin() + long(n));
  Ints offsets;
  for (int64_t o = 0; o < outN; ++o) {
    FnAcc f{caller, op.stringAttr("to_apply"), {}, {}, {}};
    for (size_t i = 0; i < n; ++i)
      f.acc.push_back(in[n + i].clone());
    int64_t base = baseOf(o);
    Status err;
    red.runRange(0, R, [&](std::array<int64_t, 1> off, std::array<int64_t, 1> st, int64_t cnt) {
      for (int64_t j = 0; j < cnt && !err; ++j)
        err = f.step(xsIn, base + off[0] + j * st[0]);
    });
    if (err)
      return err;
    for (size_t i = 0; i < n; ++i)
      std::memcpy(static_cast<char *>(out[i].raw()) + o * int64_t(f.acc[i].byteSize()),
                  f.acc[i].raw(), f.acc[i].byteSize());
  }
  return std::nullopt;
}

// The window geometry shared by reduce_window and select_and_scatter.
struct Windows {
  Ints in, win, stride, bdil, wdil, padLo, out;
  bool read(const ir::Operation &op, const Ints &shape, const Ints &outShape) {
    in = shape;
    out = outShape;
    win = op.intListAttr("window");
    stride = op.intListAttr("strides");
    bdil = op.intListAttr("base_dilation");
    wdil = op.intListAttr("window_dilation");
    const Ints &pad = op.intListAttr("padding");
    size_t r = shape.size();
    if (bdil.empty())
      bdil.assign(r, 1);
    if (wdil.empty())
      wdil.assign(r, 1);
    if (win.size() != r || stride.size() != r || bdil.size() != r || wdil.size() != r ||
        pad.size() != 2 * r || out.size() != r)
      return false;
    for (size_t d = 0; d < r; ++d)
      padLo.push_back(pad[2 * d]);
    return true;
  }
  /// Whether the last dimension has windows of one element, unstrided and
  /// unpadded (each window then spans whole rows of it).
  bool rowsWhole() const {
    size_t r = in.size();
    return r > 0 && win[r - 1] == 1 && stride[r - 1] == 1 && bdil[r - 1] == 1 &&
           wdil[r - 1] == 1 && padLo[r - 1] == 0 && out[r - 1] == in[r - 1] && out[r - 1] > 0;
  }
  // Calls f(offset) for the valid input elements of window `o`, row-major.
  template <typename F> void each(const Ints &o, const Ints &strides, F f) const {
    size_t r = in.size();
    Ints w(r, 0);
    if (product(win) == 0)
      return;
    do {
      int64_t off = 0;
      bool ok = true;
      for (size_t d = 0; d < r && ok; ++d) {
        int64_t pos = o[d] * stride[d] + w[d] * wdil[d] - padLo[d];
        ok = pos >= 0 && pos % bdil[d] == 0 && pos / bdil[d] < in[d];
        off += ok ? pos / bdil[d] * strides[d] : 0;
      }
      if (ok)
        f(off);
    } while (next(w, win));
  }
};

// Output rows [begin, end) of a reduce_window whose windows span whole rows
// of the last dimension (Windows::rowsWhole), on the calling thread.
template <typename T>
void rowRange(const Windows &g, const Ints &strides, const Named<T> &f, const T *x, T init, T *y,
              int64_t begin, int64_t end) {
  int64_t L = g.out.back();
  Ints o(g.out.size(), 0);
  // (not a vector: vector<bool> has no data())
  std::unique_ptr<typename Named<T>::A[]> acc(new typename Named<T>::A[size_t(L)]);
  for (int64_t p = begin; p < end; ++p) {
    int64_t rem = p;
    for (size_t d = o.size() - 1; d-- > 0;) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    std::fill(acc.get(), acc.get() + L, Named<T>::load(init));
    g.each(o, strides, [&](int64_t off) { rowStep(f, acc.get(), x + off, L); });
    for (int64_t j = 0; j < L; ++j)
      y[p * L + j] = Named<T>::store(acc[size_t(j)]);
  }
}

Status reduceWindow(const ir::Operation &op, const std::vector<Tensor> &in,
                    std::vector<Tensor> &out, const FunctionCaller *caller) {
  size_t n = in.size() / 2;
  Windows g;
  if (!g.read(op, shapeOf(in[0]), shapeOf(out[0])))
    return std::string("reduce_window attributes do not match the operand");
  Ints strides = rowMajorStrides(g.in);
  int kind = reducerKind(op.stringAttr("reducer"));
  int64_t outN = product(g.out);
  if (outN == 0)
    return std::nullopt;
  if (kind >= 0) {
    return visitDType(in[0].dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Named<T> f{kind};
      const T *x = in[0].data<T>();
      T init = in[1].data<T>()[0];
      T *y = out[0].data<T>();
      bool par = outN >= kParallelCostly && !omp_in_parallel();
      if (g.rowsWhole()) {
        // Windows of one element along the last dimension: each window
        // reduces whole rows of it (pooling of NHWC images), one
        // accumulator per element of the row.
        int64_t outer = outN / g.out.back();
#pragma omp parallel if (par)
        {
          int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
          rowRange(g, strides, f, x, init, y, outer * t / nt, outer * (t + 1) / nt);
        }
        return std::nullopt;
      }
#pragma omp parallel for if (par) schedule(static)
      for (int64_t i = 0; i < outN; ++i) {
        Ints o(g.out.size());
        int64_t rem = i;
        for (size_t d = o.size(); d-- > 0;) {
          o[d] = rem % g.out[d];
          rem /= g.out[d];
        }
        auto acc = Named<T>::load(init);
        g.each(o, strides, [&](int64_t off) { acc = f.step(acc, Named<T>::load(x[off])); });
        y[i] = Named<T>::store(acc);
      }
      return std::nullopt;
    });
  }
  std::vector<Tensor> xsIn(in.begin(), in.begin() + long(n));
  Ints o(g.out.size(), 0);
  int64_t i = 0;
  do {
    FnAcc f{caller, op.stringAttr("to_apply"), {}, {}, {}};
    for (size_t k = 0; k < n; ++k)
      f.acc.push_back(in[n + k].clone());
    Status err;
    g.each(o, strides, [&](int64_t off) {
      if (!err)
        err = f.step(xsIn, off);
    });
    if (err)
      return err;
    for (size_t k = 0; k < n; ++k)
      std::memcpy(static_cast<char *>(out[k].raw()) + i * int64_t(f.acc[k].byteSize()),
                  f.acc[k].raw(), f.acc[k].byteSize());
    ++i;
  } while (next(o, g.out));
  return std::nullopt;
}

Status selectAndScatter(const ir::Operation &op, const std::vector<Tensor> &in, Tensor &y,
                        const FunctionCaller *caller) {
  const Tensor &x = in[0], &src = in[1], &init = in[2];
  Windows g;
  if (!g.read(op, shapeOf(x), shapeOf(src)))
    return std::string("select_and_scatter attributes do not match the operand");
  Ints strides = rowMajorStrides(g.in);
  std::string sel = op.stringAttr("select"), selFn = op.stringAttr("select_fn");
  std::string sc = op.stringAttr("scatter"), scFn = op.stringAttr("scatter_fn");
  size_t b = ir::dtypeSize(y.dtype());
  for (int64_t i = 0; i < y.numElements(); ++i)
    std::memcpy(static_cast<char *>(y.raw()) + i * int64_t(b), init.raw(), b);
  int64_t srcN = product(g.out);
  if (srcN == 0)
    return std::nullopt;
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *px = x.data<T>(), *ps = src.data<T>();
    T *py = y.data<T>();
    std::vector<Tensor> args, results;
    Status err;
    // True when `cur` stays selected against `cand`.
    auto keep = [&](int64_t cur, int64_t cand) -> bool {
      if (!sel.empty()) {
        auto a = Elem<T>::load(px[cur]), c = Elem<T>::load(px[cand]);
        return sel == "ge" ? a >= c : sel == "gt" ? a > c : sel == "le" ? a <= c : a < c;
      }
      args = {scalarAt(x, cur), scalarAt(x, cand)};
      if ((err = callScalarFunction(caller, selFn, args, results)))
        return true;
      if (results.size() != 1 || results[0].dtype() != ir::DType::Bool) {
        err = "select_and_scatter: @" + selFn + " must return one bool";
        return true;
      }
      return *results[0].data<bool>();
    };
    int kind = reducerKind(sc);
    Ints o(g.out.size(), 0);
    int64_t i = 0;
    do {
      int64_t best = -1;
      g.each(o, strides, [&](int64_t off) {
        if (err)
          return;
        if (best < 0 || !keep(best, off))
          best = off;
      });
      if (err)
        return err;
      if (best >= 0) {
        if (kind >= 0) {
          Named<T> f{kind};
          py[best] = Named<T>::store(f.step(Named<T>::load(py[best]), Named<T>::load(ps[i])));
        } else {
          args = {scalarAt(y, best), scalarAt(src, i)};
          if ((err = callScalarFunction(caller, scFn, args, results)))
            return err;
          if (results.size() != 1 || results[0].dtype() != y.dtype())
            return "select_and_scatter: @" + scFn + " must return one " +
                   ir::dtypeName(y.dtype());
          py[best] = *results[0].data<T>();
        }
      }
      ++i;
    } while (next(o, g.out));
    return std::nullopt;
  });
}

} // namespace

int64_t reduceWindowRows(const ir::Operation &op, const std::vector<Tensor> &in,
                         const std::vector<Tensor> &out) {
  Windows g;
  if (op.kind != ir::OpKind::ReduceWindow || in.size() != 2 || out.size() != 1 ||
      reducerKind(op.stringAttr("reducer")) < 0 || !g.read(op, shapeOf(in[0]), shapeOf(out[0])) ||
      !g.rowsWhole())
    return 0;
  return product(g.out) / g.out.back();
}

Status reduceWindowRowRange(const ir::Operation &op, const std::vector<Tensor> &in,
                            std::vector<Tensor> &out, int64_t begin, int64_t end) {
  Windows g;
  if (!reduceWindowRows(op, in, out) || !g.read(op, shapeOf(in[0]), shapeOf(out[0])))
    return std::string("reduce_window of another form");
  Ints strides = rowMajorStrides(g.in);
  int kind = reducerKind(op.stringAttr("reducer"));
  return visitDType(in[0].dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    rowRange(g, strides, Named<T>{kind}, in[0].data<T>(), in[1].data<T>()[0], out[0].data<T>(),
             begin, end);
    return std::nullopt;
  });
}

void registerHloReduceKernels(KernelTable &t) {
  t.add(OpKind::Reduce,
        MDL_KERNEL {
          if (in.size() < 2 || in.size() % 2 || out.size() != in.size() / 2)
            return std::string(
                "reduce takes N inputs, N init values and gives N results");
          return reduce(op, in, out, caller);
        });
  t.add(OpKind::ReduceWindow,
        MDL_KERNEL {
          if (in.size() < 2 || in.size() % 2 || out.size() != in.size() / 2)
            return std::string("reduce_window takes N inputs, N init values "
                               "and gives N results");
          return reduceWindow(op, in, out, caller);
        });
  t.add(OpKind::SelectAndScatter,
        MDL_KERNEL {
          return selectAndScatter(op, in, out[0], caller);
        });
}

} // namespace mdl::backend::cpu
