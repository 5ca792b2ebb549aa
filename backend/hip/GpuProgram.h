// A `hip` segment compiled for a GPU: the artifact (format
// "mdl-gpu-program") that the hip kind's compile-time half (codegen/) hands
// its run-time half (runtime/). It carries the kernels' code for one target
// (an AMDGPU code object, PTX text, or spir64 LLVM bitcode for OpenCL) and
// the steps that run the segment on one stream: kernel launches, copies,
// and products that a vendor BLAS may take over. Every size is fixed when
// the segment is compiled (shapes are static after specialization).
//
// Buffers are named by reference (GpuRef): a segment input or output, the
// program's scratch memory (intermediates, allocated once at load), or its
// constant data (copied to the device once at load), each at a byte offset.
// How a runtime passes a buffer to a kernel depends on the target:
//   - HIP and CUDA (amdgcn, nvptx): one pointer parameter, the buffer's
//     device address plus the offset;
//   - OpenCL (spir64): two parameters, the buffer object (cl_mem) and the
//     byte offset as an i64, which the kernel adds itself;
//   - an Int64 reference is one i64 parameter everywhere.
// Errors found by kernels (an index out of range) go to the program's error
// record, 16 bytes of its scratch memory (GpuErrorRecord): a kernel of step
// s that finds one writes the offending value, then s + 1, unless the record
// already holds an error (the first one wins). A runtime reads the record
// when the run's steps are done and reports the step's message (its
// `error`, "{}" replaced by the value) at the step's line.
// The byte form (serialize/parse) is versioned and parse() checks every
// count, index and offset, so a damaged artifact is an error, not a crash.
#pragma once

#include "backend/runtime/DeviceBackend.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdl::backend::hip {

/// The artifact format name (mdl_artifact::format).
inline constexpr const char *kGpuProgramFormat = "mdl-gpu-program";

/// The form of the code a program carries.
enum class GpuCodeFormat : uint8_t {
  AmdgpuCodeObject, // an ELF shared object for HIP's module loader (gfx90a, gfx942, ...)
  Ptx,              // PTX text for the CUDA driver's module loader (sm_80, sm_90)
  Spir64Bitcode,    // LLVM bitcode for OpenCL's clCreateProgramWithBinary (PoCL)
};

/// A buffer (at a byte offset) or a scalar that a step reads or writes.
struct GpuRef {
  enum class Kind : uint8_t {
    Input,    // segment input `index`
    Output,   // segment output `index`
    Scratch,  // the program's scratch memory
    Constant, // the program's constant data
    Int64,    // a scalar kernel argument: `offset` is its value
  };
  Kind kind = Kind::Input;
  uint32_t index = 0;
  int64_t offset = 0;
};

/// A kernel in the program's code.
struct GpuKernel {
  std::string name;                 // its symbol
  uint32_t block[3] = {1, 1, 1};    // threads per work-group, fixed when compiled
  uint32_t sharedBytes = 0;         // work-group memory it declares statically
};

/// One launch: `grid` work-groups of the kernel's block size.
struct GpuLaunch {
  uint32_t kernel = 0; // index into GpuProgram::kernels
  uint32_t grid[3] = {1, 1, 1};
  std::vector<GpuRef> args;
};

/// C[i] = A[i] @ B[i] for i < batch, row-major, elements of `dtype`
/// (mdl_dtype; halves accumulate in f32), A m x k (k x m when transA), B
/// k x n (n x k when transB), leading dimensions and batch strides in
/// elements. A runtime with a vendor BLAS may run it there; otherwise it
/// runs `fallback`, mdl's own kernel for the same product. With an
/// epilogue (element-wise operations of C, a bias and an activation), the
/// fallback computes them too, and a runtime that runs the product on its
/// BLAS launches `epilogue` after it (reading C).
struct GpuGemm {
  int32_t dtype = 0;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  GpuRef a, b, c;
  GpuLaunch fallback;
  bool hasEpilogue = false;
  GpuLaunch epilogue;
};

/// `bytes` bytes from `src` to `dst` within the device.
struct GpuCopy {
  GpuRef dst, src;
  uint64_t bytes = 0;
};

struct GpuStep {
  enum class Kind : uint8_t { Launch, Gemm, Copy };
  Kind kind = Kind::Launch;
  /// The source location of the operation it comes from (0: none): a
  /// runtime's error for this step starts with "LINE:COL: ".
  uint32_t line = 0, column = 0;
  /// What it computes, for --timings and messages ("fusion of 12
  /// operations", "matmul f32[64, 256] x f32[256, 256]").
  std::string what;
  /// Kind::Launch whose kernel may write the error record: the message of
  /// that error, "{}" standing for the recorded value ("index {} is out of
  /// range for axis 0 with size 5"); empty for every other step.
  std::string error;
  GpuLaunch launch; // Kind::Launch
  GpuGemm gemm;     // Kind::Gemm
  GpuCopy copy;     // Kind::Copy
};

/// The error record in scratch memory (GpuProgram::errorOffset), as kernels
/// write it: the failing step's index plus one (0: no error), then the
/// value the step's message names.
struct GpuErrorRecord {
  uint32_t stepPlusOne = 0;
  uint32_t unused = 0;
  int64_t value = 0;
};
static_assert(sizeof(GpuErrorRecord) == 16, "the record's layout is part of the format");

/// The element type (mdl_dtype) and shape of a segment input or output.
struct GpuTensor {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
};

/// The bytes of a tensor (-1 for an element type that does not exist or a
/// size that overflows).
int64_t bytesOf(const GpuTensor &t);

struct GpuProgram {
  std::string target; // "spir64", "gfx90a", "gfx942", "sm_80", "sm_90"
  GpuCodeFormat codeFormat = GpuCodeFormat::Spir64Bitcode;
  std::string code;
  std::vector<GpuKernel> kernels;
  std::vector<GpuTensor> inputs, outputs;
  uint64_t scratchBytes = 0;
  /// The error record's byte offset in scratch memory (8-byte aligned), or
  /// -1 when no step writes one. Zero at load; a runtime reads it at the
  /// end of every run and zeroes it again after an error.
  int64_t errorOffset = -1;
  std::string constants; // bytes, copied to the device at load
  std::vector<GpuStep> steps;

  /// The versioned byte form.
  std::string serialize() const;
  /// Parses what serialize() made; nullopt with `error` for anything else
  /// (another version, truncated or trailing bytes, a reference out of
  /// range: an input, output or kernel that does not exist, an offset
  /// outside scratch or constant memory).
  static std::optional<GpuProgram> parse(const void *data, size_t size, std::string &error);
};

/// The message of the error `record` holds (empty when it holds none): the
/// failing step's "LINE:COL: " and its message with the value, or what is
/// wrong with a record that names no step with a message.
std::string gpuErrorMessage(const GpuProgram &p, const GpuErrorRecord &record);

/// A program as an artifact (it owns its bytes).
class GpuArtifact : public Artifact {
public:
  explicit GpuArtifact(std::string bytes) : bytes_(std::move(bytes)) {}
  mdl_artifact view() const override {
    return {kGpuProgramFormat, bytes_.data(), uint64_t(bytes_.size())};
  }
  const std::string &bytes() const { return bytes_; }

private:
  std::string bytes_;
};

/// The file name suffix of a code format (".hsaco", ".ptx", ".bc").
const char *codeSuffix(GpuCodeFormat f);
/// A program as `mdl compile`'s manifest describes it: target, code file,
/// kernels (name, block, work-group bytes), inputs, outputs, scratch and
/// constant bytes, and steps (kind, line, what, kernel and grid), as a JSON
/// object.
std::string gpuProgramManifest(const GpuProgram &p);

/// The code format a target compiles to, or nullopt for a target mdl does
/// not know.
std::optional<GpuCodeFormat> codeFormatOf(const std::string &target);
/// The targets mdl compiles hip segments for, for messages and --help.
const std::vector<std::string> &knownGpuTargets();
/// Whether `target` is one of them.
bool isKnownGpuTarget(const std::string &target);
/// Those of them that compile to `format` (all, without one), joined with
/// ", ", for messages.
std::string knownGpuTargetList(std::optional<GpuCodeFormat> format = std::nullopt);

} // namespace mdl::backend::hip
