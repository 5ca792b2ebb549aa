// The JIT's convolutions through oneDNN (see ConvPrimitive.h).
//
// create(): the operation's dimension labels, strides, padding, kernel
// dilation and feature groups become a oneDNN convolution descriptor whose
// input and output memory descriptors carry the program's strides; the
// epilogue's steps become post-operations up to its trailing relu / clip;
// the primitive is created then (oneDNN generates its code), or the reason
// it cannot be is kept. run(): converts what oneDNN does not take as it is
// (f16 data, non-f32 per-channel operands), reorders a constant kernel the
// first time, copies the residual into the output (the sum post-operation
// adds to what the output holds), executes, applies the activation.
#include "backend/jit/ConvPrimitive.h"
#include "backend/cpu/Kernels.h"
#include "ir/Half.h"
#include "stdlib/ConvEpilogue.h"
#include "stdlib/ConvLabels.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace mdl::backend::jit {

using namespace ir;
using dnnl::memory;
using stdlib::EpilogueKind;

namespace {

/// Elements below which conversions and activations stay on one thread.
constexpr int64_t kParallelElements = int64_t(1) << 16;

dnnl::engine &cpuEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

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

Tensor wrap(const TensorType &t, void *p) {
  return Tensor(t, std::make_shared<Buffer>(p, size_t(t.byteSize()), nullptr));
}

/// dst[i] = float(src[i]) for f16, bf16 or f32 data.
void toFloat(const void *src, DType t, float *dst, int64_t n) {
  const uint16_t *h = static_cast<const uint16_t *>(src);
  if (t == DType::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
#pragma omp parallel for if (n >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    dst[i] = t == DType::BF16 ? bf16ToFloat(h[i]) : halfToFloat(h[i]);
}

/// dst[i] = src[i] rounded to t (f16 or bf16; f32 copies).
void fromFloat(const float *src, DType t, void *dst, int64_t n) {
  uint16_t *h = static_cast<uint16_t *>(dst);
  if (t == DType::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
#pragma omp parallel for if (n >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    h[i] = t == DType::BF16 ? floatToBf16(src[i]) : floatToHalf(src[i]);
}

void copyBytes(void *dst, const void *src, int64_t bytes) {
  int parts = bytes >= (int64_t(1) << 20) ? omp_get_max_threads() : 1;
#pragma omp parallel for if (parts > 1) schedule(static)
  for (int p = 0; p < parts; ++p) {
    int64_t lo = bytes * p / parts, hi = bytes * (p + 1) / parts;
    std::memcpy(static_cast<char *>(dst) + lo, static_cast<const char *>(src) + lo,
                size_t(hi - lo));
  }
}

/// y = clip(y, lo, hi) in place, NaN kept (the reference's comparisons).
template <typename T, typename Load, typename Store>
void clamp(T *y, int64_t n, float lo, float hi, Load load, Store store) {
#pragma omp parallel for if (n >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float v = load(y[i]);
    y[i] = store(v < lo ? lo : (v > hi ? hi : v));
  }
}

} // namespace

struct ConvPrimitive::Impl {
  const Operation *op = nullptr;
  bool constantKernel = false;
  std::string description;
  std::optional<dnnl::convolution_forward> prim;

  DType xType = DType::F32, yType = DType::F32;
  bool viaFloat = false; // f16 data converted to and from f32
  memory::desc src, kernelPlain, kernel, dst;
  std::optional<dnnl::reorder> kernelReorder;
  std::optional<memory> kernelMem; // the reordered constant kernel
  const void *kernelFrom = nullptr;
  std::vector<float> kernelFloat; // a constant f16 kernel in f32

  struct Binary {
    int operand;   // index into the operation's operands
    int64_t count; // 1 or the output features
    memory::desc desc;
    int index; // its position among the post-operations
  };
  std::vector<Binary> binaries;
  int residual = -1; // index into the operands, or -1
  bool activation = false;
  float lo = 0, hi = std::numeric_limits<float>::infinity();
  int64_t xElems = 0, wElems = 0, yElems = 0;

  bool build();
  int32_t runKernel(RuntimeContext &ctx, void *const *ins, void *const *outs);
  int32_t runOnednn(RuntimeContext &ctx, void *const *ins, void *const *outs);
};

namespace {

/// oneDNN dims {a, b, spatial...} of a tensor of `sizes` labeled `l`, with
/// its row-major strides.
void describe(const std::vector<int64_t> &sizes, const stdlib::DimLabels &l, memory::dims &dims,
              memory::dims &strides) {
  std::vector<int64_t> rm(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;)
    rm[i - 1] = rm[i] * sizes[i];
  dims = {sizes[size_t(l.a)], sizes[size_t(l.b)]};
  strides = {rm[size_t(l.a)], rm[size_t(l.b)]};
  for (int64_t s : l.spatial) {
    dims.push_back(sizes[size_t(s)]);
    strides.push_back(rm[size_t(s)]);
  }
}

} // namespace

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

  memory::dims dims, str;
  describe(xt.sizes(), labels->input, dims, str);
  src = memory::desc(dims, dx, str);
  describe(yt.sizes(), labels->output, dims, str);
  dst = memory::desc(dims, dy, str);
  int64_t outFeatures = dims[1];
  // The kernel: {O, I, k...}, or {G, O/G, I, k...} with groups.
  describe(wt.sizes(), labels->kernel, dims, str); // {I, O, k...}
  memory::dims kd = {dims[1], dims[0]}, ks = {str[1], str[0]};
  if (groups > 1) {
    kd = {groups, dims[1] / groups, dims[0]};
    ks = {str[1] * (dims[1] / groups), str[1], str[0]};
  }
  for (size_t i = 2; i < dims.size(); ++i) {
    kd.push_back(dims[i]);
    ks.push_back(str[i]);
  }
  kernelPlain = memory::desc(kd, dx, ks);
  kernel = constantKernel ? memory::desc(kd, dx, memory::format_tag::any) : kernelPlain;
  xElems = xt.numElements();
  wElems = wt.numElements();
  yElems = yt.numElements();

  // The epilogue: post-operations up to its trailing activation.
  dnnl::post_ops post;
  size_t i = 0;
  for (; i < steps->size(); ++i) {
    const stdlib::EpilogueStep &step = (*steps)[i];
    int operand = step.operand + 2;
    if (step.kind == EpilogueKind::Relu || step.kind == EpilogueKind::Clip)
      break;
    if (step.kind == EpilogueKind::Residual) {
      if (residual >= 0)
        return why("two residual additions");
      residual = operand;
      post.append_sum(1.f);
      continue;
    }
    bool scalar =
        stdlib::classifyChannelOperand(o.operands[size_t(operand)]->type, yt,
                                       int(labels->output.b)) == stdlib::ChannelOperand::Scalar;
    // A {1, C, 1...} (or all-ones) f32 vector, row-major.
    memory::dims vd(dims.size(), 1), vs(dims.size(), 1);
    if (!scalar)
      vd[1] = outFeatures;
    for (size_t k = vd.size(); k-- > 1;)
      vs[k - 1] = vs[k] * vd[k];
    Binary b{operand, scalar ? 1 : outFeatures, memory::desc(vd, memory::data_type::f32, vs),
             post.len()};
    binaries.push_back(b);
    post.append_binary(step.kind == EpilogueKind::Add   ? dnnl::algorithm::binary_add
                       : step.kind == EpilogueKind::Sub ? dnnl::algorithm::binary_sub
                                                        : dnnl::algorithm::binary_mul,
                       b.desc);
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
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src, kernel, dst, st, dil,
                                    padL, padR);
  dnnl::convolution_forward::primitive_desc pd(d, attr, cpuEngine());
  std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0)
    return why("oneDNN offers only its reference implementation");
  kernel = pd.weights_desc();
  if (kernel != kernelPlain)
    kernelReorder = dnnl::reorder(memory(kernelPlain, cpuEngine(), DNNL_MEMORY_NONE),
                                  memory(kernel, cpuEngine(), DNNL_MEMORY_NONE));
  prim = dnnl::convolution_forward(pd);
  description = impl + (kernelReorder ? " (kernel reordered once)" : "");
  return true;
}

int32_t ConvPrimitive::Impl::runKernel(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  std::vector<Tensor> in, out;
  for (size_t i = 0; i < op->operands.size(); ++i)
    in.push_back(wrap(op->operands[i]->type, ins[i]));
  out.push_back(wrap(op->results[0]->type, outs[0]));
  cpu::FunctionCaller caller = ctx.call;
  if (auto err = cpu::runKernel(*op, in, out, &caller))
    return ctx.fail("E0405", op->loc, *err);
  return 0;
}

int32_t ConvPrimitive::Impl::runOnednn(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  dnnl::engine &eng = cpuEngine();
  // f16: the data in f32 (the kernel once, when it is constant).
  std::vector<float> xf, yf, wf;
  void *x = ins[0], *w = ins[1], *y = outs[0];
  if (viaFloat) {
    xf.resize(size_t(xElems));
    yf.resize(size_t(yElems));
    toFloat(x, DType::F16, xf.data(), xElems);
    x = xf.data();
    y = yf.data();
    if (!constantKernel || kernelFrom != ins[1]) {
      std::vector<float> &into = constantKernel ? kernelFloat : wf;
      into.resize(size_t(wElems));
      toFloat(w, DType::F16, into.data(), wElems);
    }
    w = constantKernel ? kernelFloat.data() : wf.data();
  }
  memory kernelArg(kernelPlain, eng, w);
  if (kernelReorder) {
    if (!constantKernel || !kernelMem || kernelFrom != ins[1]) {
      if (!kernelMem)
        kernelMem = memory(kernel, eng);
      dnnl::stream s(eng);
      kernelReorder->execute(s, kernelArg, *kernelMem);
      s.wait();
    }
    kernelArg = *kernelMem;
  }
  kernelFrom = ins[1];
  if (residual >= 0) {
    if (viaFloat)
      toFloat(ins[residual], DType::F16, static_cast<float *>(y), yElems);
    else
      copyBytes(y, ins[residual], yElems * int64_t(dtypeSize(yType)));
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(src, eng, x)},
                                          {DNNL_ARG_WEIGHTS, kernelArg},
                                          {DNNL_ARG_DST, memory(dst, eng, y)}};
  std::vector<std::vector<float>> vectors(binaries.size());
  for (size_t k = 0; k < binaries.size(); ++k) {
    const Binary &b = binaries[k];
    void *data = ins[b.operand];
    DType t = op->operands[size_t(b.operand)]->type.dtype;
    if (t != DType::F32) {
      vectors[k].resize(size_t(b.count));
      toFloat(data, t, vectors[k].data(), b.count);
      data = vectors[k].data();
    }
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(b.index) | DNNL_ARG_SRC_1] = memory(b.desc, eng, data);
  }
  dnnl::stream s(eng);
  prim->execute(s, args);
  s.wait();
  if (activation) {
    DType t = viaFloat ? DType::F32 : yType;
    if (t == DType::F32)
      clamp(
          static_cast<float *>(y), yElems, lo, hi, [](float v) { return v; },
          [](float v) { return v; });
    else
      clamp(
          static_cast<uint16_t *>(y), yElems, lo, hi, [](uint16_t v) { return bf16ToFloat(v); },
          [](float v) { return floatToBf16(v); });
  }
  if (viaFloat)
    fromFloat(yf.data(), DType::F16, outs[0], yElems);
  return 0;
}

ConvPrimitive::ConvPrimitive(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConvPrimitive::~ConvPrimitive() = default;

std::unique_ptr<ConvPrimitive> ConvPrimitive::create(const Operation &op, bool constantKernel) {
  // oneDNN marks every call for Intel's tracing tools unless told not to;
  // it reads this once, at its first use.
  setenv("DNNL_ITT_TASK_LEVEL", "0", 0);
  auto impl = std::make_unique<Impl>();
  impl->op = &op;
  impl->constantKernel = constantKernel;
  try {
    if (!impl->build())
      impl->prim.reset();
  } catch (const dnnl::error &e) {
    impl->prim.reset();
    impl->description = std::string("CPU kernel: oneDNN cannot take it (") + e.what() + ")";
  }
  return std::unique_ptr<ConvPrimitive>(new ConvPrimitive(std::move(impl)));
}

int32_t ConvPrimitive::run(RuntimeContext &ctx, void *const *ins, void *const *outs) {
  if (!impl_->prim)
    return impl_->runKernel(ctx, ins, outs);
  try {
    return impl_->runOnednn(ctx, ins, outs);
  } catch (const dnnl::error &e) {
    return ctx.fail("E0405", impl_->op->loc, std::string("oneDNN failed: ") + e.what());
  } catch (const std::bad_alloc &) {
    return ctx.fail("E0404", impl_->op->loc, "out of memory in a convolution");
  }
}

bool ConvPrimitive::onednn() const { return impl_->prim.has_value(); }
const std::string &ConvPrimitive::description() const { return impl_->description; }

} // namespace mdl::backend::jit

int32_t mdl_rt_conv(mdl::backend::jit::RuntimeContext *ctx, mdl::backend::jit::ConvPrimitive *conv,
                    void *const *ins, void *const *outs) {
  return conv->run(*ctx, ins, outs);
}
