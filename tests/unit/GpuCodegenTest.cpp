// The GPU code generator (backend/hip/codegen) without a GPU: the hip kind's
// table of operations against the generator's own, programs compiled for
// every target (their code's form, kernels, steps), scratch shared by
// liveness, outputs written in place, and the refusals. What the kernels
// compute is tested on PoCL (tests/gpu/pocl_programs.py).
#include "backend/hip/GpuOps.h"
#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/SegmentCompiler.h"
#include "backend/hip/codegen/SegmentLowering.h"
#include "ir/text/Parser.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

namespace {

using namespace mdl;
using namespace mdl::backend::hip;

std::unique_ptr<ir::Module> parse(const std::string &text) {
  std::string error;
  auto m = ir::parseModule(text, error);
  EXPECT_TRUE(m) << error;
  return m;
}

const ir::Operation *firstSegment(const ir::Module &m) {
  for (auto &op : m.functions[0]->body->ops)
    if (op->kind == ir::OpKind::Segment)
      return op.get();
  return nullptr;
}

std::optional<GpuProgram> compile(const ir::Operation &seg, const std::string &target,
                                  std::string &error) {
  std::string bytes;
  if (!compileSegment(seg, target, bytes, error))
    return std::nullopt;
  return GpuProgram::parse(bytes.data(), bytes.size(), error);
}

const char *kMatmulSoftmax = R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[8, 16] on @gpu, %1: f32[16, 4] on @gpu) -> (f32[8, 4] on @gpu, f32[16, 8] on @gpu) {
  %2, %3 = segment %0, %1 : f32[8, 4], f32[16, 8] on @gpu {
    ^(%4: f32[8, 16] on @gpu, %5: f32[16, 4] on @gpu):
    %6 = matmul %4, %5 : f32[8, 4] on @gpu loc(3:19)
    %7 = constant {value = dense<f32 1.0>} : f32 on @gpu loc(3:27)
    %8 = add %6, %7 : f32[8, 4] on @gpu loc(3:19)
    %9 = softmax %8 {axis = 1} : f32[8, 4] on @gpu loc(3:11)
    %10 = transpose %4 {perm = [1, 0]} : f32[16, 8] on @gpu loc(4:11)
    %11 = exp %10 : f32[16, 8] on @gpu loc(4:11)
    yield %9, %11
  }
  return %2, %3
}
)";

TEST(GpuOps, TheKindsTableIsWhatTheGeneratorLowers) {
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    auto k = ir::OpKind(i);
    bool structure = stdlib::isOrchestration(k) || stdlib::isTransfer(k) ||
                     k == ir::OpKind::Global || k == ir::OpKind::Load;
    if (structure)
      EXPECT_TRUE(gpuImplements(k)) << ir::opName(k);
    else
      EXPECT_EQ(gpuImplements(k), generatorLowers(k)) << ir::opName(k);
  }
  // What the hip kind refuses (E0303 at check time).
  EXPECT_TRUE(gpuImplements(ir::OpKind::Conv2d));
  EXPECT_FALSE(gpuImplements(ir::OpKind::Convolution));
  EXPECT_FALSE(gpuImplements(ir::OpKind::DotGeneral));
  EXPECT_TRUE(gpuImplements(ir::OpKind::Matmul));
  EXPECT_TRUE(gpuImplements(ir::OpKind::Softmax));
}

TEST(GpuCodegen, CompilesForEveryTarget) {
  auto m = parse(kMatmulSoftmax);
  ASSERT_TRUE(m);
  const ir::Operation *seg = firstSegment(*m);
  ASSERT_TRUE(seg);
  for (const std::string &target : knownGpuTargets()) {
    std::string error;
    auto p = compile(*seg, target, error);
    ASSERT_TRUE(p) << target << ": " << error;
    EXPECT_EQ(p->target, target);
    EXPECT_EQ(p->codeFormat, *codeFormatOf(target));
    ASSERT_GE(p->code.size(), 4u) << target;
    switch (p->codeFormat) {
    case GpuCodeFormat::AmdgpuCodeObject:
      EXPECT_EQ(p->code.substr(0, 4), "\x7f"
                                      "ELF")
          << target;
      break;
    case GpuCodeFormat::Ptx:
      EXPECT_NE(p->code.find(".entry mdl_k"), std::string::npos) << target;
      break;
    case GpuCodeFormat::Spir64Bitcode:
      EXPECT_EQ(p->code.substr(0, 4), "BC\xc0\xde") << target;
      break;
    }
    // The product is a Gemm step with mdl's kernel as the fallback; the
    // softmax rows and the exponential are kernels of their own.
    int gemms = 0, launches = 0;
    for (const GpuStep &s : p->steps) {
      if (s.kind == GpuStep::Kind::Gemm) {
        ++gemms;
        EXPECT_EQ(s.gemm.m, 8);
        EXPECT_EQ(s.gemm.n, 4);
        EXPECT_EQ(s.gemm.k, 16);
        EXPECT_NE(p->kernels[s.gemm.fallback.kernel].name.find("gemm"), std::string::npos);
        EXPECT_GT(p->kernels[s.gemm.fallback.kernel].sharedBytes, 0u);
        EXPECT_EQ(s.line, 3u);
      }
      if (s.kind == GpuStep::Kind::Launch)
        ++launches;
    }
    EXPECT_EQ(gemms, 1) << target;
    EXPECT_GE(launches, 2) << target;
    ASSERT_EQ(p->inputs.size(), 2u);
    ASSERT_EQ(p->outputs.size(), 2u);
    EXPECT_EQ(p->outputs[1].shape, (std::vector<int64_t>{16, 8}));
    // A reduction kernel declares work-group memory for its tree.
    bool rows = false;
    for (const GpuKernel &k : p->kernels)
      rows |= k.name.find("rows") != std::string::npos && k.sharedBytes > 0;
    EXPECT_TRUE(rows) << target;
  }
}

TEST(GpuCodegen, OutputsInPlaceAndScratchSharedByLiveness) {
  // Four intermediates in a chain of products: each lives two steps, so
  // they share scratch; the last product writes the output itself.
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[64, 64] on @gpu) -> (f32[64, 64] on @gpu) {
  %1 = segment %0 : f32[64, 64] on @gpu {
    ^(%2: f32[64, 64] on @gpu):
    %3 = matmul %2, %2 : f32[64, 64] on @gpu
    %4 = matmul %3, %2 : f32[64, 64] on @gpu
    %5 = matmul %4, %2 : f32[64, 64] on @gpu
    %6 = matmul %5, %2 : f32[64, 64] on @gpu
    %7 = matmul %6, %2 : f32[64, 64] on @gpu
    yield %7
  }
  return %1
}
)");
  ASSERT_TRUE(m);
  std::string error;
  auto p = compile(*firstSegment(*m), "spir64", error);
  ASSERT_TRUE(p) << error;
  ASSERT_EQ(p->steps.size(), 5u);
  const uint64_t bytes = 64 * 64 * 4;
  EXPECT_EQ(p->scratchBytes, 2 * bytes); // two slots alternate
  EXPECT_EQ(p->steps.back().gemm.c.kind, GpuRef::Kind::Output);
  for (const GpuStep &s : p->steps)
    EXPECT_EQ(s.kind, GpuStep::Kind::Gemm);
}

TEST(GpuCodegen, YieldedInputsAndTransposesAreCopied) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[3, 5] on @gpu) -> (f32[3, 5] on @gpu, f32[5, 3] on @gpu) {
  %1, %2 = segment %0 : f32[3, 5], f32[5, 3] on @gpu {
    ^(%3: f32[3, 5] on @gpu):
    %4 = transpose %3 {perm = [1, 0]} : f32[5, 3] on @gpu
    yield %3, %4
  }
  return %1, %2
}
)");
  ASSERT_TRUE(m);
  std::string error;
  auto p = compile(*firstSegment(*m), "gfx90a", error);
  ASSERT_TRUE(p) << error;
  ASSERT_EQ(p->steps.size(), 2u);
  EXPECT_EQ(p->steps[0].kind, GpuStep::Kind::Copy);
  EXPECT_EQ(p->steps[0].copy.src.kind, GpuRef::Kind::Input);
  EXPECT_EQ(p->steps[0].copy.bytes, 60u);
  EXPECT_EQ(p->steps[1].kind, GpuStep::Kind::Launch); // a strided copy kernel
  EXPECT_EQ(p->scratchBytes, 0u);
}

TEST(GpuCodegen, RefusalsAreMessages) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f16[4] on @gpu) -> (f16[4] on @gpu) {
  %1 = segment %0 : f16[4] on @gpu {
    ^(%2: f16[4] on @gpu):
    %3 = add %2, %2 : f16[4] on @gpu loc(7:3)
    yield %3
  }
  return %1
}
)");
  ASSERT_TRUE(m);
  std::string error;
  EXPECT_FALSE(compile(*firstSegment(*m), "sm_90", error));
  EXPECT_NE(error.find("7:3: "), std::string::npos) << error;
  EXPECT_NE(error.find("f16"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(compile(*firstSegment(*m), "gfx1100", error));
  EXPECT_NE(error.find("unknown GPU target 'gfx1100'"), std::string::npos) << error;
}

} // namespace
