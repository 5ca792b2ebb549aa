// The hip kind's operations (see GpuOps.h): the structure every program
// carries, and what the kernel generator (codegen/SegmentLowering.cpp)
// lowers. The generator's unit test (tests/unit/GpuCodegenTest.cpp) checks
// that this table and the generator's own agree, kind by kind.
#include "backend/hip/GpuOps.h"
#include "stdlib/OpKind.h"

namespace mdl::backend::hip {

using ir::OpKind;

bool gpuImplements(OpKind k) {
  switch (k) {
  // Structure: control flow and calls stay on the host, transfers move
  // values between devices; segments and fusions hold what is below.
  case OpKind::Constant: case OpKind::Global: case OpKind::Load: case OpKind::Call:
  case OpKind::If: case OpKind::For: case OpKind::While: case OpKind::Yield:
  case OpKind::Return: case OpKind::Print: case OpKind::Segment: case OpKind::Fusion:
  case OpKind::To: case OpKind::Reveal: case OpKind::Transfer:
  // Element-wise operations (fused loops, ScalarCodegen's semantics).
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Mod:
  case OpKind::Pow: case OpKind::Maximum: case OpKind::Minimum: case OpKind::Eq:
  case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
  case OpKind::And: case OpKind::Or: case OpKind::Not: case OpKind::Neg: case OpKind::Abs:
  case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Gelu:
  case OpKind::Sin: case OpKind::Cos: case OpKind::Floor: case OpKind::Ceil:
  case OpKind::Sign: case OpKind::Clip: case OpKind::Select: case OpKind::Cast:
  // Reductions (row reductions in fused loops; argmax, argmin, prod kernels)
  // and the composites canonicalize turns into them.
  case OpKind::Sum: case OpKind::Mean: case OpKind::ReduceMax: case OpKind::ReduceMin:
  case OpKind::Prod: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Softmax:
  case OpKind::LogSoftmax: case OpKind::Layernorm:
  // Matrix products (Gemm steps, mdl's tiled kernel as the fallback) and
  // direct convolution and pooling kernels.
  case OpKind::Matmul: case OpKind::Conv2d: case OpKind::MaxPool2d: case OpKind::AvgPool2d:
  // Views and data movement.
  case OpKind::Transpose: case OpKind::Reshape: case OpKind::BroadcastTo:
  case OpKind::Concat: case OpKind::Stack: case OpKind::ExpandDims: case OpKind::Squeeze:
  case OpKind::Slice: case OpKind::DynamicIndex: case OpKind::Gather: case OpKind::Pad:
  case OpKind::Embedding:
  // Creation (fills, or values computed when the segment is compiled).
  case OpKind::Zeros: case OpKind::Ones: case OpKind::Full: case OpKind::Arange:
  case OpKind::RandomNormal: case OpKind::RandomUniform:
    return true;
  default:
    return false;
  }
}

} // namespace mdl::backend::hip
