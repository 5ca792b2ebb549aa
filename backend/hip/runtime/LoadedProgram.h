// A GPU program (GpuProgram.h, the artifact the hip kind's generator makes)
// loaded on one device, and running it. Loading validates the program
// beyond what parse() checks (its target is the device's, copies and
// products stay inside their buffers, blocks and work-group memory fit the
// device), loads its code, resolves every kernel, allocates its scratch
// memory and uploads its constants, once. Running checks the buffers it is
// given against the program's inputs and outputs and enqueues the steps on
// the device's stream: kernel launches, products (on the vendor BLAS when
// it takes them, else mdl's own kernel) and copies. It returns without
// waiting, except for a program with an error record (kernels that check
// indices): its run waits for its steps and reads the record. An error
// names the step's source line ("LINE:COL: ").
#pragma once

#include "backend/hip/GpuProgram.h"
#include "backend/hip/runtime/DeviceState.h"

namespace mdl::backend::hip {

class LoadedProgram {
public:
  /// Loads the bytes of a GpuProgram on `device`.
  static llvm::Expected<std::unique_ptr<LoadedProgram>> load(DeviceState &device, const void *data,
                                                             size_t size);
  /// Waits for the program's work, then frees its memory and code.
  ~LoadedProgram();

  /// Enqueues one run on buffers of the program's input and output types.
  llvm::Error run(const mdl_buffer *inputs, uint32_t nInputs, const mdl_buffer *outputs,
                  uint32_t nOutputs);

  const GpuProgram &program() const { return program_; }

private:
  explicit LoadedProgram(DeviceState &device) : device_(device) {}
  llvm::Error prepare();
  llvm::Error runStep(const GpuStep &step, size_t index);
  /// Zeroes the error record (enqueued); nothing without one.
  llvm::Error clearErrorRecord();
  /// Waits, reads the error record and reports the error it holds.
  llvm::Error checkErrorRecord();
  llvm::Error launch(const GpuLaunch &l, int tag);
  DeviceRef ref(const GpuRef &r) const;

  DeviceState &device_;
  GpuProgram program_;
  std::unique_ptr<GpuModule> module_;
  std::vector<void *> kernels_;      // by GpuProgram::kernels index
  std::vector<int> tags_;            // each step's statistics row
  std::vector<int> epilogueTags_;    // a Gemm step's epilogue's row (-1: none)
  std::vector<int> blasTags_;        // a Gemm step's BLAS row (-1: not made yet)
  DeviceMemory scratch_, constants_; // address 0 when empty
  // The current run's buffers.
  std::vector<DeviceRef> inputs_, outputs_;
};

} // namespace mdl::backend::hip
