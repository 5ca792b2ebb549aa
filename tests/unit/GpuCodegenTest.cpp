// The GPU code generator (backend/hip/codegen) without a GPU: the hip kind's
// table of operations against the generator's own, programs compiled for
// every target (their code's form, kernels, steps), scratch shared by
// liveness, outputs written in place, halves, index checks and the error
// record, and the refusals. What the kernels
// compute is tested on PoCL (tests/gpuruntime/gpu_programs.py).
#include "backend/hip/GpuOps.h"
#include "backend/hip/GpuProgram.h"
#include "backend/hip/codegen/SegmentCompiler.h"
#include "backend/hip/codegen/SegmentLowering.h"
#include "ir/text/Parser.h"
#include "stdlib/Registry.h"

#include <gtest/gtest.h>

#include <map>

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

// bf16 and f16: fused loops, reductions and products compile for every
// target, computing in f32 between widening loads and rounding stores.
TEST(GpuCodegen, HalvesCompileForEveryTarget) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f16[8, 16] on @gpu, %1: bf16[16, 4] on @gpu) -> (f16[8, 16] on @gpu, bf16[8, 4] on @gpu, bf16[8] on @gpu) {
  %2, %3, %4 = segment %0, %1 : f16[8, 16], bf16[8, 4], bf16[8] on @gpu {
    ^(%5: f16[8, 16] on @gpu, %6: bf16[16, 4] on @gpu):
    %7 = add %5, %5 : f16[8, 16] on @gpu loc(4:11)
    %8 = exp %7 : f16[8, 16] on @gpu loc(4:11)
    %9 = cast %5 {dtype = bf16} : bf16[8, 16] on @gpu loc(5:11)
    %10 = matmul %9, %6 : bf16[8, 4] on @gpu loc(5:11)
    %11 = sum %10 {axis = [1]} : bf16[8] on @gpu loc(6:13)
    yield %8, %10, %11
  }
  return %2, %3, %4
}
)");
  ASSERT_TRUE(m);
  for (const std::string &target : knownGpuTargets()) {
    std::string error;
    auto p = compile(*firstSegment(*m), target, error);
    ASSERT_TRUE(p) << target << ": " << error;
    EXPECT_EQ(p->inputs[0].dtype, MDL_F16);
    EXPECT_EQ(p->outputs[1].dtype, MDL_BF16);
    int gemms = 0;
    for (const GpuStep &s : p->steps)
      if (s.kind == GpuStep::Kind::Gemm) {
        ++gemms;
        // The vendor BLAS gets a bf16 product (f32 accumulation); mdl's
        // kernel keeps its tiles in f32.
        EXPECT_EQ(s.gemm.dtype, MDL_BF16);
        EXPECT_EQ(p->kernels[s.gemm.fallback.kernel].sharedBytes, 2u * 64 * 16 * 4);
      }
    EXPECT_EQ(gemms, 1) << target;
    // Nothing checks indices here: no error record.
    EXPECT_EQ(p->errorOffset, -1);
  }
}

// gather / embedding / dynamic_index: a check kernel before the gather
// writes the first index out of range to the error record, with the CPU
// kernel's message; constant indices in range need no check.
TEST(GpuCodegen, IndexChecksReportThroughTheErrorRecord) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[5, 3] on @gpu, %1: i64[4] on @gpu) -> (f32[4, 3] on @gpu, f32[4, 3] on @gpu, f32[2, 3] on @gpu) {
  %2, %3, %4 = segment %0, %1 : f32[4, 3], f32[4, 3], f32[2, 3] on @gpu {
    ^(%5: f32[5, 3] on @gpu, %6: i64[4] on @gpu):
    %7 = gather %5, %6 {axis = 0} : f32[4, 3] on @gpu loc(8:3)
    %8 = embedding %5, %6 : f32[4, 3] on @gpu loc(9:5)
    %9 = constant {value = dense<i64[2] [4, -5]>} : i64[2] on @gpu
    %10 = gather %5, %9 {axis = 0} : f32[2, 3] on @gpu loc(10:7)
    yield %7, %8, %10
  }
  return %2, %3, %4
}
)");
  ASSERT_TRUE(m);
  std::string error;
  auto p = compile(*firstSegment(*m), "spir64", error);
  ASSERT_TRUE(p) << error;
  ASSERT_GE(p->errorOffset, 0);
  EXPECT_EQ(p->errorOffset % 8, 0);
  EXPECT_LE(uint64_t(p->errorOffset) + sizeof(GpuErrorRecord), p->scratchBytes);
  std::vector<std::string> messages;
  for (size_t i = 0; i < p->steps.size(); ++i) {
    const GpuStep &s = p->steps[i];
    if (s.error.empty())
      continue;
    messages.push_back(std::to_string(s.line) + ": " + s.error);
    // The check names its own step and the record.
    ASSERT_EQ(s.launch.args.size(), 3u);
    EXPECT_EQ(s.launch.args[1].kind, GpuRef::Kind::Scratch);
    EXPECT_EQ(s.launch.args[1].offset, p->errorOffset);
    EXPECT_EQ(s.launch.args[2].kind, GpuRef::Kind::Int64);
    EXPECT_EQ(s.launch.args[2].offset, int64_t(i));
    // The gather it guards comes next.
    ASSERT_LT(i + 1, p->steps.size());
    EXPECT_NE(p->kernels[p->steps[i + 1].launch.kernel].name.find("gather"), std::string::npos);
  }
  EXPECT_EQ(messages,
            (std::vector<std::string>{"8: index {} is out of range for axis 0 with size 5",
                                      "9: embedding id {} is out of range for a table of 5 rows"}));
  GpuErrorRecord record;
  EXPECT_EQ(gpuErrorMessage(*p, record), "");
  record.stepPlusOne = 1;
  record.value = 7;
  EXPECT_EQ(gpuErrorMessage(*p, record), "8:3: index 7 is out of range for axis 0 with size 5");
  // A constant index out of range is checked when the program runs.
  auto bad = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[5, 3] on @gpu) -> (f32[1, 3] on @gpu) {
  %1 = segment %0 : f32[1, 3] on @gpu {
    ^(%2: f32[5, 3] on @gpu):
    %3 = constant {value = dense<i64[1] [5]>} : i64[1] on @gpu
    %4 = gather %2, %3 {axis = 0} : f32[1, 3] on @gpu loc(4:1)
    yield %4
  }
  return %1
}
)");
  ASSERT_TRUE(bad);
  p = compile(*firstSegment(*bad), "sm_90", error);
  ASSERT_TRUE(p) << error;
  EXPECT_GE(p->errorOffset, 0);
  EXPECT_EQ(p->steps[0].error, "index {} is out of range for axis 0 with size 5");
}

// A few long rows are reduced in pieces over many work-groups, then their
// partials; many rows, or rows whose full outputs need the reductions, keep
// one work-group per row.
// A batch beyond CUDA's 65,535 work-groups on the grid's z axis: the
// product's (batch, tile) pairs run in a grid-stride loop on x, capped.
TEST(GpuCodegen, ProductsOfManyBatchesFitTheGrid) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[70000, 2, 3] on @gpu, %1: f32[70000, 3, 2] on @gpu) -> (f32[70000, 2, 2] on @gpu) {
  %2 = segment %0, %1 : f32[70000, 2, 2] on @gpu {
    ^(%3: f32[70000, 2, 3] on @gpu, %4: f32[70000, 3, 2] on @gpu):
    %5 = matmul %3, %4 : f32[70000, 2, 2] on @gpu
    yield %5
  }
  return %2
}
)");
  ASSERT_TRUE(m);
  for (const std::string &target : knownGpuTargets()) {
    std::string error;
    auto p = compile(*firstSegment(*m), target, error);
    ASSERT_TRUE(p) << target << ": " << error;
    int gemms = 0;
    for (const GpuStep &s : p->steps)
      if (s.kind == GpuStep::Kind::Gemm) {
        ++gemms;
        EXPECT_EQ(s.gemm.batch, 70000) << target;
        EXPECT_EQ(s.gemm.fallback.grid[0], 70000u) << target;
        EXPECT_EQ(s.gemm.fallback.grid[1], 1u) << target;
        EXPECT_EQ(s.gemm.fallback.grid[2], 1u) << target;
      }
    EXPECT_EQ(gemms, 1) << target;
  }
}

TEST(GpuCodegen, LongRowsAreReducedInPieces) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[2, 100000] on @gpu, %1: f32[300, 10000] on @gpu, %2: f32[1, 50000] on @gpu) -> (f32[2] on @gpu, f32[300] on @gpu, f32[1, 50000] on @gpu) {
  %3, %4, %5 = segment %0, %1, %2 : f32[2], f32[300], f32[1, 50000] on @gpu {
    ^(%6: f32[2, 100000] on @gpu, %7: f32[300, 10000] on @gpu, %8: f32[1, 50000] on @gpu):
    %9 = mul %6, %6 : f32[2, 100000] on @gpu
    %10 = sum %9 {axis = [1]} : f32[2] on @gpu loc(3:9)
    %11 = sum %7 {axis = [1]} : f32[300] on @gpu loc(4:9)
    %12 = softmax %8 {axis = 1} : f32[1, 50000] on @gpu loc(5:9)
    yield %10, %11, %12
  }
  return %3, %4, %5
}
)");
  ASSERT_TRUE(m);
  for (const std::string &target : knownGpuTargets()) {
    std::string error;
    auto p = compile(*firstSegment(*m), target, error);
    ASSERT_TRUE(p) << target << ": " << error;
    std::vector<std::pair<uint32_t, std::string>> first, second, third;
    for (const GpuStep &s : p->steps) {
      auto entry = std::make_pair(s.launch.grid[0], p->kernels[s.launch.kernel].name);
      (s.line == 3 ? first : s.line == 4 ? second : third).push_back(entry);
    }
    // 100000 elements in pieces of 4096: 25 per row, 50 work-groups, then
    // one per row.
    ASSERT_EQ(first.size(), 2u) << target;
    EXPECT_EQ(first[0].first, 50u);
    EXPECT_NE(first[0].second.find("rows_part"), std::string::npos) << first[0].second;
    EXPECT_EQ(first[1].first, 2u);
    EXPECT_NE(first[1].second.find("rows"), std::string::npos);
    // Both kernels name the partials, in scratch.
    const GpuStep &part = p->steps[0], &rows = p->steps[1];
    ASSERT_EQ(part.launch.args.back().kind, GpuRef::Kind::Scratch);
    EXPECT_EQ(part.launch.args.back().offset, rows.launch.args.back().offset);
    EXPECT_GE(p->scratchBytes, 2u * 25 * 8);
    ASSERT_EQ(second.size(), 1u) << target;
    EXPECT_EQ(second[0].first, 300u);
    EXPECT_EQ(third.size(), 1u) << target; // softmax stores every element
  }
}

// A product followed by a bias and an activation: one Gemm step whose
// fallback kernel computes the fusion from its accumulators (C is never
// stored), with the fusion's own kernel as the epilogue a vendor BLAS
// needs. Where the fusion cannot be an epilogue, two steps as before.
TEST(GpuCodegen, ProductsTakeTheirBiasAndActivationAsAnEpilogue) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[70, 130] on @gpu, %1: f32[130, 90] on @gpu, %2: f32[90] on @gpu) -> (f32[70, 90] on @gpu, f32[70, 90] on @gpu, f32[70, 90] on @gpu, f32[70, 90] on @gpu, f32[70, 90] on @gpu) {
  %3, %4, %5, %6, %7 = segment %0, %1, %2 : f32[70, 90], f32[70, 90], f32[70, 90], f32[70, 90], f32[70, 90] on @gpu {
    ^(%8: f32[70, 130] on @gpu, %9: f32[130, 90] on @gpu, %10: f32[90] on @gpu):
    %11 = matmul %8, %9 : f32[70, 90] on @gpu loc(3:13)
    %12 = add %11, %10 : f32[70, 90] on @gpu loc(3:13)
    %13 = relu %12 : f32[70, 90] on @gpu loc(3:8)
    %14 = matmul %8, %9 : f32[70, 90] on @gpu loc(4:13)
    %15 = matmul %8, %9 : f32[70, 90] on @gpu loc(4:13)
    %16 = add %14, %15 : f32[70, 90] on @gpu loc(4:13)
    %17 = matmul %8, %9 : f32[70, 90] on @gpu loc(5:13)
    %18 = softmax %17 {axis = 1} : f32[70, 90] on @gpu loc(5:5)
    %19 = matmul %8, %9 : f32[70, 90] on @gpu loc(6:13)
    %20 = exp %19 : f32[70, 90] on @gpu loc(6:5)
    yield %13, %16, %18, %20, %19
  }
  return %3, %4, %5, %6, %7
}
)");
  ASSERT_TRUE(m);
  for (const std::string &target : knownGpuTargets()) {
    std::string error;
    auto p = compile(*firstSegment(*m), target, error);
    ASSERT_TRUE(p) << target << ": " << error;
    std::map<uint32_t, std::vector<const GpuStep *>> at;
    for (const GpuStep &s : p->steps)
      at[s.line].push_back(&s);
    // relu(a @ b + bias): one step.
    ASSERT_EQ(at[3].size(), 1u) << target;
    const GpuGemm &g = at[3][0]->gemm;
    EXPECT_EQ(at[3][0]->kind, GpuStep::Kind::Gemm);
    EXPECT_EQ(at[3][0]->what, "matmul f32[70, 130] x f32[130, 90] + fusion of 2 operations");
    ASSERT_TRUE(g.hasEpilogue);
    EXPECT_NE(p->kernels[g.fallback.kernel].name.find("gemm_epilogue"), std::string::npos);
    EXPECT_NE(p->kernels[g.epilogue.kernel].name.find("fusion"), std::string::npos);
    // The fallback takes a, b, c and then the epilogue's arguments, which
    // write output 0 (the fused kernel stores the fusion, not C).
    ASSERT_EQ(g.fallback.args.size(), 3 + g.epilogue.args.size());
    EXPECT_EQ(g.fallback.args.back().kind, GpuRef::Kind::Output);
    EXPECT_EQ(g.epilogue.args.back().kind, GpuRef::Kind::Output);
    EXPECT_EQ(g.c.kind, GpuRef::Kind::Scratch); // the BLAS's C, the epilogue's input
    // p1 + p2: the fusion reads p2, computed after p1, so only p2 takes it.
    ASSERT_EQ(at[4].size(), 2u) << target;
    EXPECT_FALSE(at[4][0]->gemm.hasEpilogue);
    EXPECT_TRUE(at[4][1]->gemm.hasEpilogue);
    // A softmax (reductions) after the product, and a product also yielded:
    // no epilogue.
    for (uint32_t line : {5u, 6u}) {
      int gemms = 0;
      for (const GpuStep *s : at[line]) {
        if (s->kind == GpuStep::Kind::Gemm) {
          ++gemms;
          EXPECT_FALSE(s->gemm.hasEpilogue) << line << ": " << s->what;
        }
      }
      EXPECT_EQ(gemms, 1) << target << ", line " << line;
    }
  }
}

TEST(GpuCodegen, RefusalsAreMessages) {
  auto m = parse(R"(module "t"
device @gpu = hip(ordinal = 0)
func @main(%0: f32[4, 4] on @gpu) -> (f32[4, 4] on @gpu) {
  %1 = segment %0 : f32[4, 4] on @gpu {
    ^(%2: f32[4, 4] on @gpu):
    %3 = dot_general %2, %2 {lhs_batch = [], rhs_batch = [], lhs_contract = [1], rhs_contract = [0]} : f32[4, 4] on @gpu loc(7:3)
    yield %3
  }
  return %1
}
)");
  ASSERT_TRUE(m);
  std::string error;
  EXPECT_FALSE(compile(*firstSegment(*m), "sm_90", error));
  EXPECT_NE(error.find("7:3: "), std::string::npos) << error;
  EXPECT_NE(error.find("no kernel for 'dot_general'"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(compile(*firstSegment(*m), "gfx1100", error));
  EXPECT_NE(error.find("unknown GPU target 'gfx1100'"), std::string::npos) << error;
}

} // namespace
