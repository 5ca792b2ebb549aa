// 2-D convolution and pooling on NCHW tensors.
//
// conv2d (OIHW weights, stride and zero padding per axis) lowers each image
// to a matrix with im2col and multiplies it by the weights through BLAS:
// y[n] (O x OH*OW) = W (O x C*KH*KW) @ col (C*KH*KW x OH*OW). A 1x1
// convolution with stride 1 and no padding uses the image itself as the
// matrix. The halves are converted to f32 and back. Pooling windows have no
// padding; avg_pool2d divides by the window size, max_pool2d propagates NaN.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/Registry.h"

namespace mdl::backend::cpu {

using ir::OpKind;

namespace {

struct ConvGeom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw;
};

template <typename F> void im2col(const F *img, F *col, const ConvGeom &g) {
  int64_t rows = g.C * g.KH * g.KW, P = g.OH * g.OW;
  bool big = rows * P >= kParallelCheap && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t c = r / (g.KH * g.KW), kh = r / g.KW % g.KH, kw = r % g.KW;
    const F *plane = img + c * g.H * g.W;
    F *dst = col + r * P;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      int64_t ih = oh * g.sh - g.ph + kh;
      F *d = dst + oh * g.OW;
      if (ih < 0 || ih >= g.H) {
        for (int64_t ow = 0; ow < g.OW; ++ow)
          d[ow] = 0;
        continue;
      }
      const F *line = plane + ih * g.W;
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        int64_t iw = ow * g.sw - g.pw + kw;
        d[ow] = (iw >= 0 && iw < g.W) ? line[iw] : F(0);
      }
    }
  }
}

template <typename F>
void conv2d(const F *x, const F *w, F *y, const ConvGeom &g) {
  int64_t K = g.C * g.KH * g.KW, P = g.OH * g.OW;
  bool direct = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 &&
                g.pw == 0;
  // A batch of at least one image per thread runs an image per thread
  // (im2col and gemm then stay on that thread); otherwise each image's
  // im2col and gemm are split among the threads.
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  bool perImage =
      threads > 1 && g.N >= threads && g.N * g.O * P * K >= kParallelCheap;
  size_t colSize = direct ? 0 : size_t(K * P);
  std::vector<F> cols(colSize * size_t(perImage ? threads : 1));
#pragma omp parallel for if (perImage) schedule(static)
  for (int64_t n = 0; n < g.N; ++n) {
    const F *img = x + n * g.C * g.H * g.W;
    F *col =
        cols.data() + colSize * size_t(perImage ? omp_get_thread_num() : 0);
    if (!direct)
      im2col(img, col, g);
    gemm(g.O, P, K, w, K, direct ? img : col, P, y + n * g.O * P, P);
  }
}

std::vector<float> widen(const Tensor &t) {
  std::vector<float> v(size_t(t.numElements()));
  const uint16_t *p = t.data<uint16_t>();
  bool bf = t.dtype() == ir::DType::BF16;
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = bf ? ir::bf16ToFloat(p[i]) : ir::halfToFloat(p[i]);
  return v;
}

Status runConv(const ir::Operation &op, const Tensor &x, const Tensor &w,
               Tensor &y) {
  std::vector<int64_t> xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(y);
  const std::vector<int64_t> &stride = op.intListAttr("stride"),
                             &padding = op.intListAttr("padding");
  ConvGeom g{xs[0],
             xs[1],
             xs[2],
             xs[3],
             ws[0],
             ws[2],
             ws[3],
             ys[2],
             ys[3],
             stride.size() == 2 ? stride[0] : 1,
             stride.size() == 2 ? stride[1] : 1,
             padding.size() == 2 ? padding[0] : 0,
             padding.size() == 2 ? padding[1] : 0};
  switch (y.dtype()) {
  case ir::DType::F32:
    conv2d(x.data<float>(), w.data<float>(), y.data<float>(), g);
    return std::nullopt;
  case ir::DType::F64:
    conv2d(x.data<double>(), w.data<double>(), y.data<double>(), g);
    return std::nullopt;
  case ir::DType::F16:
  case ir::DType::BF16: {
    std::vector<float> fx = widen(x), fw = widen(w),
                       fy(size_t(y.numElements()));
    conv2d(fx.data(), fw.data(), fy.data(), g);
    bool bf = y.dtype() == ir::DType::BF16;
    uint16_t *py = y.data<uint16_t>();
    for (size_t i = 0; i < fy.size(); ++i)
      py[i] = bf ? ir::floatToBf16(fy[i]) : ir::floatToHalf(fy[i]);
    return std::nullopt;
  }
  default:
    return std::string("the cpu kernel of 'conv2d' does not support ") +
           ir::dtypeName(y.dtype());
  }
}

template <typename T>
void pool(const T *x, T *y, const std::vector<int64_t> &xs,
          const std::vector<int64_t> &ys, int64_t kh, int64_t kw, int64_t sh,
          int64_t sw, bool isMax) {
  using C = ComputeT<T>;
  int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  int64_t lines = xs[0] * xs[1] * OH;
  C area = C(kh * kw);
  bool big = lines * OW * kh * kw >= kParallelCheap && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t l = 0; l < lines; ++l) {
    int64_t plane = l / OH, oh = l % OH;
    const T *src = x + plane * H * W + oh * sh * W;
    T *dst = y + plane * OH * OW + oh * OW;
    for (int64_t ow = 0; ow < OW; ++ow) {
      C acc = isMax ? -std::numeric_limits<C>::infinity() : C(0);
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          C v = Elem<T>::load(src[i * W + ow * sw + j]);
          if (!isMax)
            acc += v;
          else if (v > acc || std::isnan(v))
            acc = std::isnan(acc) ? acc : v;
        }
      dst[ow] = Elem<T>::store(isMax ? acc : acc / area);
    }
  }
}

Status runPool(const ir::Operation &op, const Tensor &x, Tensor &y) {
  const std::vector<int64_t> &size = op.intListAttr("size");
  std::vector<int64_t> stride = op.intListAttr("stride");
  if (size.size() != 2)
    return std::string("pooling needs a [h, w] size attribute");
  if (stride.size() != 2)
    stride = size;
  bool isMax = op.kind == OpKind::MaxPool2d;
  return visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return std::string("the cpu kernel of '") + ir::opName(op.kind) +
             "' does not support " + ir::dtypeName(x.dtype());
    } else {
      pool(x.data<T>(), y.data<T>(), shapeOf(x), shapeOf(y), size[0], size[1],
           stride[0], stride[1], isMax);
      return std::nullopt;
    }
  });
}

} // namespace

void registerConvKernels(KernelTable &t) {
  t.add(OpKind::Conv2d, MDL_KERNEL { return runConv(op, in[0], in[1], out[0]); });
  t.add({OpKind::MaxPool2d, OpKind::AvgPool2d},
        MDL_KERNEL { return runPool(op, in[0], out[0]); });
}

} // namespace mdl::backend::cpu
