// The JIT's convolutions through oneDNN (see ConvPrimitive.h).
//
// create():
// 1. The operation's dimension labels, strides, padding, kernel dilation
//    and feature groups become oneDNN's {N, C, spatial...} problem, with
//    the program's strides for the input and output.
// 2. The epilogue: a leading add is the bias; the steps up to the trailing
//    relu / clip are post-operations (binary add / sub / mul by an f32
//    vector, sum for the residual).
// 3. The output is cut into one contiguous slab per worker-pool thread
//    along its outermost dimension of more than one element: images, rows
//    (the input rows each slab reads, with the padding at its edges), or
//    output features (a slice of the kernel each). Each slab is a
//    primitive of its own, created for one thread. A convolution too small
//    to share, or one whose output cannot be cut so, is one primitive on
//    oneDNN's own threads.
// run(): converts what oneDNN does not take as it is (f16 data, non-f32
// vectors), reorders a constant kernel the first time, then each slab, on
// its thread: the residual copied into the output (the sum post-operation
// adds to what the output holds), the primitive, the activation.
#include "backend/jit/ConvPrimitive.h"
#include "backend/jit/Onednn.h"
#include "backend/cpu/Kernels.h"
#include "backend/jit/WorkerPool.h"
#include "ir/Half.h"
#include "stdlib/ConvEpilogue.h"
#include "stdlib/ConvLabels.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

namespace mdl::backend::jit {

using namespace ir;
using dnnl::memory;
using stdlib::EpilogueKind;

namespace {

/// Multiply-adds below which a convolution runs whole on the calling thread.
constexpr int64_t kShareMacs = int64_t(1) << 21;
/// Elements below which a conversion stays on one thread.
constexpr int64_t kParallelElements = int64_t(1) << 16;

std::optional<memory::data_type> onednnType(DType t) {
  switch (t) {
  case DType::F32:
    return memory::data_type::f32;
  case DType::BF16:
    return memory::data_type::bf16;
  default:
    return std::nullopt;
  }
}

/// A conversion between f32 and a half type, in pieces on the worker pool
/// from kParallelElements elements (never an OpenMP team: it would spin
/// beside the pool's threads afterwards).
struct Conversion {
  const void *src;
  void *dst;
  DType t;
  bool widen; // half to f32 (else f32 to half, rounded)
  int64_t n, chunk;

  void range(int64_t begin, int64_t end) const {
    const uint16_t *h = static_cast<const uint16_t *>(src);
    const float *f = static_cast<const float *>(src);
    float *fo = static_cast<float *>(dst);
    uint16_t *ho = static_cast<uint16_t *>(dst);
    for (int64_t i = begin; i < end; ++i) {
      if (widen)
        fo[i] = t == DType::BF16 ? bf16ToFloat(h[i]) : halfToFloat(h[i]);
      else
        ho[i] = t == DType::BF16 ? floatToBf16(f[i]) : floatToHalf(f[i]);
    }
  }
  void run() {
    if (t == DType::F32) {
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      return;
    }
    WorkerPool &pool = WorkerPool::get();
    if (n < kParallelElements || pool.size() <= 1) {
      range(0, n);
      return;
    }
    chunk = (n + int64_t(pool.size()) - 1) / int64_t(pool.size());
    pool.run(
        (n + chunk - 1) / chunk,
        [](void *p, int64_t k) {
          const Conversion &c = *static_cast<const Conversion *>(p);
          c.range(k * c.chunk, std::min(c.n, (k + 1) * c.chunk));
        },
        this);
  }
};

/// dst[i] = float(src[i]) for f16, bf16 or f32 data.
void toFloat(const void *src, DType t, float *dst, int64_t n) {
  Conversion{src, dst, t, true, n, 0}.run();
}

/// dst[i] = src[i] rounded to t (f16 or bf16; f32 copies).
void fromFloat(const float *src, DType t, void *dst, int64_t n) {
  Conversion{src, dst, t, false, n, 0}.run();
}

/// y = clip(y, lo, hi) in place, NaN kept (the reference's comparisons).
void clampFloat(float *y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i];
    y[i] = v < lo ? lo : (v > hi ? hi : v);
  }
}
void clampBf16(uint16_t *y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = bf16ToFloat(y[i]);
    y[i] = floatToBf16(v < lo ? lo : (v > hi ? hi : v));
  }
}

/// y = a + r (y may be r), in f32; for bf16 rounded once.
void addFloat(float *y, const float *a, const float *r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + r[i];
}
void addBf16(uint16_t *y, const uint16_t *a, const uint16_t *r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = floatToBf16(bf16ToFloat(a[i]) + bf16ToFloat(r[i]));
}

/// Runs a scope with OpenMP (oneDNN) on `n` threads.
class OpenMPThreads {
public:
  explicit OpenMPThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OpenMPThreads() { omp_set_num_threads(saved_); }

private:
  int saved_;
};

/// A tensor in oneDNN's terms: dims {a, b, spatial...} and their strides.
struct Layout {
  memory::dims dims, strides;

  /// The dims of a tensor of `sizes` labeled `l`, with its row-major strides.
  static Layout of(const std::vector<int64_t> &sizes, const stdlib::DimLabels &l) {
    std::vector<int64_t> rm(sizes.size(), 1);
    for (size_t i = sizes.size(); i-- > 1;)
      rm[i - 1] = rm[i] * sizes[i];
    Layout t{{sizes[size_t(l.a)], sizes[size_t(l.b)]}, {rm[size_t(l.a)], rm[size_t(l.b)]}};
    for (int64_t s : l.spatial) {
      t.dims.push_back(sizes[size_t(s)]);
      t.strides.push_back(rm[size_t(s)]);
    }
    return t;
  }

  /// The dims, outermost in memory first (larger stride; a dim of size 1
  /// after those it ties with).
  std::vector<size_t> order() const {
    std::vector<size_t> o(dims.size());
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      return strides[a] != strides[b] ? strides[a] > strides[b] : dims[a] > dims[b];
    });
    return o;
  }

  /// Whether every dim outside `d` in memory has one element (a range of
  /// `d` is then contiguous).
  bool outermost(size_t d) const {
    for (size_t i : order()) {
      if (i == d)
        return true;
      if (dims[i] != 1)
        return false;
    }
    return false;
  }

  /// `dims` with dim `d` cut to `n`, strides dense in this layout's order.
  memory::desc slab(size_t d, int64_t n, memory::data_type t) const {
    memory::dims sub = dims, st(dims.size());
    sub[d] = n;
    int64_t acc = 1;
    std::vector<size_t> o = order();
    for (size_t k = o.size(); k-- > 0;) {
      st[o[k]] = acc;
      acc *= sub[o[k]];
    }
    return memory::desc(sub, t, st);
  }
};

} // namespace

struct ConvPrimitive::Impl {
  const Operation *op = nullptr;
  bool constantKernel = false;
  std::string description;
  bool ready = false; // oneDNN runs it

  DType xType = DType::F32, yType = DType::F32;
  bool viaFloat = false; // f16 data converted to and from f32
  int64_t xElems = 0, wElems = 0, yElems = 0, outFeatures = 0;

  /// One slab of the output and its primitive.
  struct Part {
    std::optional<dnnl::convolution_forward> prim;
    memory::desc src, dst, kernelPlain, kernel, bias;
    std::vector<memory::desc> vectors; // of the binary post-operations
    int64_t srcOff = 0, dstOff = 0, dstCount = 0, kernelOff = 0, channelOff = 0;
    bool slice = false;       // reads its own slice of the kernel (output features)
    bool sharesFirst = false; // reads part 0's reordered kernel
    std::optional<dnnl::reorder> reorder;
    std::optional<memory> kernelMem;
    memory scratchpad;
    std::vector<char> temp; // the output before the residual (residualAfter)
  };
  std::vector<Part> parts;
  /// Whether the parts run on the worker pool (each on one thread); else
  /// the single part runs on oneDNN's threads (`threads`).
  bool shared = false;
  int threads = 1;
  const void *kernelFrom = nullptr; // the constant kernel reordered
  std::vector<float> kernelFloat;   // an f16 kernel in f32

  struct Binary {
    int operand;   // index into the operation's operands
    int64_t count; // 1 or the output features
    dnnl::algorithm alg;
    int index; // its position among the post-operations
  };
  std::vector<Binary> binaries;
  int residual = -1;          // index into the operands, or -1
  bool residualLast = false;  // no binary post-operation after it
  bool residualAfter = false; // added by mdl after the primitive, not as a sum
  int bias = -1;              // the leading add's operand, or -1
  int64_t biasCount = 0;
  bool activation = false;
  float lo = 0, hi = std::numeric_limits<float>::infinity();

  bool build();
  bool makePart(Part &p, const memory::desc &src, const memory::desc &dst,
                const memory::desc &kernel, const memory::dims &padL, const memory::dims &padR,
                const memory::dims &st, const memory::dims &dil, int64_t features,
                std::string &impl);
  int32_t runKernel(RuntimeContext &ctx, void *const *ins, void *const *outs);
  int32_t runOnednn(RuntimeContext &ctx, void *const *ins, void *const *outs);
  /// The kernel each part reads (reordered, unless it is the constant
  /// kernel reordered before).
  void kernelMemories(const void *kernel, std::vector<memory> &out);
};

namespace {

/// What the parts of one call read and write.
struct CallData {
  ConvPrimitive::Impl *impl;
  const void *x;
  void *y;
  const void *residual;
  std::vector<const float *> vectors; // per binary post-operation, all features
  const float *bias = nullptr;
  std::vector<memory> kernels; // per part
  std::vector<std::string> errors;
};

} // namespace

bool ConvPrimitive::Impl::makePart(Part &p, const memory::desc &src, const memory::desc &dst,
                                   const memory::desc &kernel, const memory::dims &padL,
                                   const memory::dims &padR, const memory::dims &st,
                                   const memory::dims &dil, int64_t features, std::string &impl) {
  p.src = src;
  p.dst = dst;
  dnnl::post_ops post;
  for (const Binary &b : binaries) {
    while (post.len() < b.index)
      post.append_sum(1.f); // the residual's place
    memory::dims vd(dst.dims().size(), 1), vs(vd.size(), 1);
    if (b.count > 1)
      vd[1] = features;
    for (size_t k = vd.size(); k-- > 1;)
      vs[k - 1] = vs[k] * vd[k];
    p.vectors.push_back(memory::desc(vd, memory::data_type::f32, vs));
    post.append_binary(b.alg, p.vectors.back());
  }
  if (residual >= 0 && !residualAfter && post.len() == int(binaries.size()))
    post.append_sum(1.f); // after every binary one
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  // Slabs run at the same time: each has its own scratchpad (oneDNN's own
  // is one per process unless built for concurrent execution).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (bias >= 0)
    p.bias = memory::desc({features}, memory::data_type::f32, memory::format_tag::a);
  auto desc = [&](const memory::desc &k) {
    return bias >= 0 ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, src, k,
                                                       p.bias, dst, st, dil, padL, padR)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, src, k,
                                                       dst, st, dil, padL, padR);
  };
  std::optional<dnnl::convolution_forward::primitive_desc> pd;
  try {
    pd.emplace(desc(kernel), attr, onednnEngine());
  } catch (const dnnl::error &) {
    if (kernel.data.format_kind == dnnl_format_kind_any)
      throw;
    // Another slab's choice of kernel layout: this one chooses its own.
    pd.emplace(desc(memory::desc(kernel.dims(), kernel.data_type(), memory::format_tag::any)), attr,
               onednnEngine());
  }
  impl = pd->impl_info_str();
  p.kernel = pd->weights_desc();
  p.prim = dnnl::convolution_forward(*pd);
  p.scratchpad = memory(pd->scratchpad_desc(), onednnEngine());
  return impl.rfind("ref", 0) != 0;
}

bool ConvPrimitive::Impl::build() {
  auto why = [this](std::string s) {
    description = "CPU kernel: " + std::move(s);
    return false;
  };
  const Operation &o = *op;
  auto labels = stdlib::parseConvDimLabels(o.stringAttr("dim_labels"));
  auto steps = stdlib::parseEpilogue(o.stringAttr("epilogue"));
  if (!labels || !steps || o.operands.size() < 2)
    return why("malformed operation");
  const TensorType &xt = o.operands[0]->type, &wt = o.operands[1]->type, &yt = o.results[0]->type;
  xType = xt.dtype;
  yType = yt.dtype;
  size_t s = labels->input.spatial.size();
  if (s < 1 || s > 3)
    return why(std::to_string(s) + " spatial dimensions");
  if (xType == DType::F16 && wt.dtype == DType::F16 && yType == DType::F16)
    viaFloat = true;
  else if (!onednnType(xType) || wt.dtype != xType || !onednnType(yType) ||
           (yType != xType && yType != DType::F32))
    return why(std::string(dtypeName(xType)) + " data with a " + dtypeName(yType) + " result");
  memory::data_type dx = viaFloat ? memory::data_type::f32 : *onednnType(xType);
  memory::data_type dy = viaFloat ? memory::data_type::f32 : *onednnType(yType);

  const std::vector<int64_t> &strides = o.intListAttr("strides"), &pad = o.intListAttr("padding"),
                             &ldil = o.intListAttr("lhs_dilation"),
                             &rdil = o.intListAttr("rhs_dilation");
  int64_t groups = o.intAttr("feature_groups", 1);
  if (o.intAttr("batch_groups", 1) != 1)
    return why("batch groups");
  if (strides.size() != s || pad.size() != 2 * s || ldil.size() != s || rdil.size() != s)
    return why("attributes of another rank");
  memory::dims st, dil, padL, padR;
  for (size_t i = 0; i < s; ++i) {
    if (ldil[i] != 1)
      return why("input dilation");
    if (pad[2 * i] < 0 || pad[2 * i + 1] < 0)
      return why("negative padding");
    st.push_back(strides[i]);
    dil.push_back(rdil[i] - 1);
    padL.push_back(pad[2 * i]);
    padR.push_back(pad[2 * i + 1]);
  }
  Layout x = Layout::of(xt.sizes(), labels->input), y = Layout::of(yt.sizes(), labels->output);
  // The kernel: {O, I, k...}, or {G, O/G, I, k...} with groups.
  Layout k = Layout::of(wt.sizes(), labels->kernel); // {I, O, k...}
  Layout kp{{k.dims[1], k.dims[0]}, {k.strides[1], k.strides[0]}};
  if (groups > 1)
    kp = {{groups, k.dims[1] / groups, k.dims[0]},
          {k.strides[1] * (k.dims[1] / groups), k.strides[1], k.strides[0]}};
  for (size_t i = 2; i < k.dims.size(); ++i) {
    kp.dims.push_back(k.dims[i]);
    kp.strides.push_back(k.strides[i]);
  }
  xElems = xt.numElements();
  wElems = wt.numElements();
  yElems = yt.numElements();
  outFeatures = y.dims[1];

  // The epilogue.
  size_t i = 0;
  int posts = 0;
  if (!steps->empty() && (*steps)[0].kind == EpilogueKind::Add) {
    bias = (*steps)[0].operand + 2;
    biasCount =
        stdlib::classifyChannelOperand(o.operands[size_t(bias)]->type, yt, int(labels->output.b)) ==
                stdlib::ChannelOperand::Scalar
            ? 1
            : outFeatures;
    i = 1;
  }
  for (; i < steps->size(); ++i) {
    const stdlib::EpilogueStep &step = (*steps)[i];
    int operand = step.operand + 2;
    if (step.kind == EpilogueKind::Relu || step.kind == EpilogueKind::Clip)
      break;
    if (step.kind == EpilogueKind::Residual) {
      if (residual >= 0)
        return why("two residual additions");
      residual = operand;
      residualLast = true;
      ++posts;
      continue;
    }
    residualLast = false;
    bool scalar =
        stdlib::classifyChannelOperand(o.operands[size_t(operand)]->type, yt,
                                       int(labels->output.b)) == stdlib::ChannelOperand::Scalar;
    binaries.push_back({operand, scalar ? 1 : outFeatures,
                        step.kind == EpilogueKind::Add   ? dnnl::algorithm::binary_add
                        : step.kind == EpilogueKind::Sub ? dnnl::algorithm::binary_sub
                                                         : dnnl::algorithm::binary_mul,
                        posts++});
  }
  for (; i < steps->size(); ++i) {
    const stdlib::EpilogueStep &step = (*steps)[i];
    if (step.kind != EpilogueKind::Relu && step.kind != EpilogueKind::Clip)
      return why(std::string("a ") + stdlib::epilogueName(step.kind) + " after an activation");
    float l = step.kind == EpilogueKind::Relu ? 0.f : float(o.floatAttr("clip_lo", 0));
    float h = step.kind == EpilogueKind::Relu ? std::numeric_limits<float>::infinity()
                                              : float(o.floatAttr("clip_hi", 6));
    // Successive clamps compose into one: clip(clip(y, a, b), c, d).
    lo = activation ? std::min(std::max(lo, l), h) : l;
    hi = activation ? std::max(std::min(hi, h), l) : h;
    activation = true;
  }

  // The slabs: along the output's outermost dimension of several elements.
  int pool = WorkerPool::get().size();
  int64_t kernelSize = 1;
  for (size_t d = 2; d < k.dims.size(); ++d)
    kernelSize *= k.dims[d];
  int64_t macs = yElems * (k.dims[0]) * kernelSize;
  size_t cut = y.dims.size();
  for (size_t d : y.order())
    if (y.dims[d] > 1) {
      cut = d;
      break;
    }
  bool ok = pool > 1 && macs >= kShareMacs && cut < y.dims.size();
  if (ok && cut == 0)
    ok = x.outermost(0);
  else if (ok && cut >= 2)
    ok = x.outermost(cut);
  else if (ok && cut == 1)
    ok = groups == 1 && constantKernel;
  int n = ok ? int(std::min<int64_t>(pool, y.dims[cut])) : 1;
  shared = n > 1;
  threads = shared || macs < kShareMacs ? 1 : omp_get_max_threads();
  OpenMPThreads scope(threads); // oneDNN tunes its kernels for it
  memory::desc kernelAny(kp.dims, dx, memory::format_tag::any);
  std::string impl;
  // With the residual as a sum post-operation; when that leaves oneDNN only
  // its reference (gemm:jit has no sum), again with the residual added
  // after the primitive, if nothing comes between them.
  for (bool again = true; again;) {
    again = false;
    parts.clear();
    parts.resize(size_t(n));
    for (int p = 0; p < n; ++p) {
      Part &part = parts[size_t(p)];
      int64_t lo0 = y.dims[cut < y.dims.size() ? cut : 0] * p / n,
              hi0 = y.dims[cut < y.dims.size() ? cut : 0] * (p + 1) / n;
      memory::desc src = memory::desc(x.dims, dx, x.strides),
                   dst = memory::desc(y.dims, dy, y.strides);
      // The kernel in the layout oneDNN chooses: reordered once when it is
      // constant, at every call otherwise (still several times faster than
      // reading HWIO as it is, which gives gemm:jit: 113 against 565 ms per
      // call for ResNet-50 with its weights as arguments).
      memory::desc kernel = kernelAny;
      memory::dims pl = padL, pr = padR;
      int64_t features = outFeatures;
      if (shared) {
        dst = y.slab(cut, hi0 - lo0, dy);
        part.dstOff = lo0 * y.strides[cut];
        if (cut == 0) {
          src = x.slab(0, hi0 - lo0, dx);
          part.srcOff = lo0 * x.strides[0];
        } else if (cut == 1) {
          memory::dims kd = kp.dims;
          kd[0] = hi0 - lo0;
          part.kernelPlain = memory::desc(kd, dx, kp.strides);
          part.kernelOff = lo0 * kp.strides[0];
          part.channelOff = lo0;
          part.slice = true;
          kernel = memory::desc(kd, dx, memory::format_tag::any);
          features = hi0 - lo0;
        } else {
          // The input rows this slab reads, and the padding at its edges.
          size_t sd = cut - 2;
          int64_t span = (k.dims[cut] - 1) * (dil[sd] + 1) + 1;
          int64_t first = lo0 * st[sd] - padL[sd], end = (hi0 - 1) * st[sd] - padL[sd] + span;
          int64_t in0 = std::max<int64_t>(0, first), in1 = std::min(x.dims[cut], end);
          pl[sd] = in0 - first;
          pr[sd] = end - in1;
          if (in1 <= in0)
            return why("a slab of padding only"); // not reached with sane padding
          src = x.slab(cut, in1 - in0, dx);
          part.srcOff = in0 * x.strides[cut];
        }
        if (p > 0 && cut != 1)
          kernel = parts[0].kernel;
      }
      part.dstCount = dst.get_size() / dtypeSize(viaFloat ? DType::F32 : yType);
      if (!part.slice)
        part.kernelPlain = memory::desc(kp.dims, dx, kp.strides);
      std::string partImpl;
      bool good = makePart(part, src, dst, kernel, pl, pr, st, dil, features, partImpl);
      if (!good) {
        // oneDNN's layout leaves only the reference: the kernel as it is.
        part.vectors.clear();
        good = makePart(part, src, dst, part.kernelPlain, pl, pr, st, dil, features, partImpl);
      }
      if (!good && residual >= 0 && !residualAfter && residualLast) {
        residualAfter = again = true;
        break;
      }
      if (!good)
        return why("oneDNN offers only its reference implementation");
      if (p == 0)
        impl = partImpl;
      if (p > 0 && !part.slice && part.kernel == parts[0].kernel)
        part.sharesFirst = true;
      else if (part.kernel != part.kernelPlain)
        part.reorder = dnnl::reorder(memory(part.kernelPlain, onednnEngine(), DNNL_MEMORY_NONE),
                                     memory(part.kernel, onednnEngine(), DNNL_MEMORY_NONE));
      if (residualAfter)
        part.temp.resize(size_t(part.dstCount) * (viaFloat ? sizeof(float) : dtypeSize(yType)));
    }
  }
  description = impl +
                (parts[0].reorder ? constantKernel ? ", kernel reordered once"
                                                   : ", kernel reordered at every call"
                                  : "") +
                (shared ? ", " + std::to_string(n) + " slabs on the worker pool" : "") +
                (!shared && threads > 1 ? ", oneDNN's threads" : "") +
                (residualAfter ? ", residual added after it" : "");
  return true;
}

int32_t ConvPrimitive::Impl::runKernel(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  return mdl_rt_kernel(&ctx, op, ins, outs);
}

namespace {

/// One slab: residual, primitive, activation.
void runPart(void *p, int64_t k) {
  CallData &c = *static_cast<CallData *>(p);
  ConvPrimitive::Impl &impl = *c.impl;
  ConvPrimitive::Impl::Part &part = impl.parts[size_t(k)];
  try {
    dnnl::engine &eng = onednnEngine();
    size_t elem = impl.viaFloat ? sizeof(float) : dtypeSize(impl.yType);
    char *y = static_cast<char *>(c.y) + part.dstOff * int64_t(elem);
    const char *r =
        c.residual ? static_cast<const char *>(c.residual) + part.dstOff * int64_t(elem) : nullptr;
    if (r && !impl.residualAfter && r != y) // the plan may put the output in its place
      std::memcpy(y, r, size_t(part.dstCount) * elem);
    char *out = impl.residualAfter ? part.temp.data() : y;
    size_t xElem = impl.viaFloat ? sizeof(float) : dtypeSize(impl.xType);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC,
         memory(part.src, eng,
                const_cast<char *>(static_cast<const char *>(c.x)) + part.srcOff * int64_t(xElem))},
        {DNNL_ARG_WEIGHTS, c.kernels[size_t(k)]},
        {DNNL_ARG_DST, memory(part.dst, eng, out)},
        {DNNL_ARG_SCRATCHPAD, part.scratchpad}};
    for (size_t b = 0; b < impl.binaries.size(); ++b) {
      const float *v = c.vectors[b] + (impl.binaries[b].count > 1 ? part.channelOff : 0);
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(impl.binaries[b].index) | DNNL_ARG_SRC_1] =
          memory(part.vectors[b], eng, const_cast<float *>(v));
    }
    if (c.bias)
      args[DNNL_ARG_BIAS] = memory(part.bias, eng, const_cast<float *>(c.bias) + part.channelOff);
    dnnl::stream &s = onednnThreadStream();
    part.prim->execute(s, args);
    s.wait();
    if (impl.residualAfter) {
      if (impl.viaFloat || impl.yType == DType::F32)
        addFloat(reinterpret_cast<float *>(y), reinterpret_cast<const float *>(out),
                 reinterpret_cast<const float *>(r), part.dstCount);
      else
        addBf16(reinterpret_cast<uint16_t *>(y), reinterpret_cast<const uint16_t *>(out),
                reinterpret_cast<const uint16_t *>(r), part.dstCount);
    }
    if (impl.activation) {
      if (impl.viaFloat || impl.yType == DType::F32)
        clampFloat(reinterpret_cast<float *>(y), part.dstCount, impl.lo, impl.hi);
      else
        clampBf16(reinterpret_cast<uint16_t *>(y), part.dstCount, impl.lo, impl.hi);
    }
  } catch (const dnnl::error &e) {
    c.errors[size_t(k)] = std::string("oneDNN failed: ") + e.what();
  } catch (const std::bad_alloc &) {
    c.errors[size_t(k)] = "out of memory";
  }
}

} // namespace

void ConvPrimitive::Impl::kernelMemories(const void *kernelIn, std::vector<memory> &out) {
  dnnl::engine &eng = onednnEngine();
  bool fresh = !constantKernel || kernelFrom != kernelIn;
  const void *w = kernelIn;
  if (viaFloat) {
    // Kept: a part whose kernel needs no reorder reads it at every call.
    kernelFloat.resize(size_t(wElems));
    if (fresh)
      toFloat(kernelIn, DType::F16, kernelFloat.data(), wElems);
    w = kernelFloat.data();
  }
  size_t wElem = viaFloat ? sizeof(float) : dtypeSize(xType);
  for (Part &p : parts) {
    memory plain(p.kernelPlain, eng,
                 const_cast<char *>(static_cast<const char *>(w)) + p.kernelOff * int64_t(wElem));
    if (p.sharesFirst) {
      out.push_back(out[0]);
    } else if (!p.reorder) {
      out.push_back(plain);
    } else {
      if (fresh || !p.kernelMem) {
        if (!p.kernelMem)
          p.kernelMem = memory(p.kernel, eng);
        // At every call: on this thread (an OpenMP team would spin beside
        // the worker pool afterwards).
        OpenMPThreads threads(constantKernel ? omp_get_max_threads() : 1);
        dnnl::stream &s = onednnThreadStream();
        p.reorder->execute(s, plain, *p.kernelMem);
        s.wait();
      }
      out.push_back(*p.kernelMem);
    }
  }
  kernelFrom = kernelIn;
}

int32_t ConvPrimitive::Impl::runOnednn(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  CallData c{this, ins[0], outs[0], residual >= 0 ? ins[residual] : nullptr, {},
             nullptr, {}, std::vector<std::string>(parts.size())};
  // f16: the data in f32 (the kernel once, when it is constant).
  std::vector<float> xf, yf, rf;
  if (viaFloat) {
    xf.resize(size_t(xElems));
    yf.resize(size_t(yElems));
    toFloat(ins[0], DType::F16, xf.data(), xElems);
    c.x = xf.data();
    c.y = yf.data();
    if (residual >= 0) {
      rf.resize(size_t(yElems));
      toFloat(ins[residual], DType::F16, rf.data(), yElems);
      c.residual = rf.data();
    }
  }
  kernelMemories(ins[1], c.kernels);
  std::vector<std::vector<float>> vectors(binaries.size());
  for (size_t k = 0; k < binaries.size(); ++k) {
    const Binary &b = binaries[k];
    DType t = op->operands[size_t(b.operand)]->type.dtype;
    if (t == DType::F32) {
      c.vectors.push_back(static_cast<const float *>(ins[b.operand]));
      continue;
    }
    vectors[k].resize(size_t(b.count));
    toFloat(ins[b.operand], t, vectors[k].data(), b.count);
    c.vectors.push_back(vectors[k].data());
  }
  std::vector<float> biasData;
  if (bias >= 0) {
    DType t = op->operands[size_t(bias)]->type.dtype;
    c.bias = static_cast<const float *>(ins[bias]);
    if (t != DType::F32 || biasCount != outFeatures) {
      biasData.resize(size_t(outFeatures));
      toFloat(ins[bias], t, biasData.data(), biasCount);
      std::fill(biasData.begin() + biasCount, biasData.end(), biasData[0]);
      c.bias = biasData.data();
    }
  }
  if (shared) {
    WorkerPool::get().run(int64_t(parts.size()), runPart, &c, WorkerPool::Schedule::Static);
  } else {
    OpenMPThreads scope(threads);
    runPart(&c, 0);
  }
  for (const std::string &e : c.errors)
    if (!e.empty())
      return ctx.fail("E0405", op->loc, e);
  if (viaFloat)
    fromFloat(yf.data(), DType::F16, outs[0], yElems);
  return 0;
}

ConvPrimitive::ConvPrimitive(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConvPrimitive::~ConvPrimitive() = default;

std::unique_ptr<ConvPrimitive> ConvPrimitive::create(const Operation &op, bool constantKernel) {
  auto impl = std::make_unique<Impl>();
  impl->op = &op;
  impl->constantKernel = constantKernel;
  return std::unique_ptr<ConvPrimitive>(new ConvPrimitive(std::move(impl)));
}

namespace {
void prepareOne(void *list, int64_t i) {
  ConvPrimitive::Impl &impl =
      *(*static_cast<std::vector<ConvPrimitive::Impl *> *>(list))[size_t(i)];
  try {
    impl.ready = impl.build();
  } catch (const dnnl::error &e) {
    impl.ready = false;
    impl.description = std::string("CPU kernel: oneDNN cannot take it (") + e.what() + ")";
  } catch (const std::bad_alloc &) {
    impl.ready = false;
    impl.description = "CPU kernel: out of memory making its primitive";
  }
  if (!impl.ready)
    impl.parts.clear();
}
} // namespace

void ConvPrimitive::prepare(const std::vector<ConvPrimitive *> &convs,
                            const std::vector<const void *> &kernels) {
  // (oneDNN's tracing-tool marks are off: onednnEngine.)
  std::vector<Impl *> list;
  for (ConvPrimitive *c : convs)
    list.push_back(c->impl_.get());
  // (On the worker pool's threads at once it takes as long: oneDNN
  // serializes much of it.)
  for (size_t i = 0; i < list.size(); ++i) {
    prepareOne(&list, int64_t(i));
    // A constant kernel whose bytes are known now is reordered now.
    Impl &impl = *list[i];
    if (impl.ready && impl.constantKernel && i < kernels.size() && kernels[i]) {
      try {
        std::vector<memory> unused;
        impl.kernelMemories(kernels[i], unused);
      } catch (const dnnl::error &) {
        impl.kernelFrom = nullptr; // the first call tries again, and reports
      }
    }
  }
}

int32_t ConvPrimitive::run(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  if (!impl_->ready)
    return impl_->runKernel(ctx, ins, outs);
  try {
    return impl_->runOnednn(ctx, ins, outs);
  } catch (const dnnl::error &e) {
    return ctx.fail("E0405", impl_->op->loc, std::string("oneDNN failed: ") + e.what());
  } catch (const std::bad_alloc &) {
    return ctx.fail("E0404", impl_->op->loc, "out of memory in a convolution");
  }
}

const Operation &ConvPrimitive::op() const { return *impl_->op; }
bool ConvPrimitive::onednn() const { return impl_->ready; }
const std::string &ConvPrimitive::description() const { return impl_->description; }

} // namespace mdl::backend::jit

int32_t mdl_rt_conv(mdl::backend::jit::RuntimeContext *ctx, mdl::backend::jit::ConvPrimitive *conv,
                    void *const *ins, void *const *outs) {
  return conv->run(*ctx, ins, outs);
}
