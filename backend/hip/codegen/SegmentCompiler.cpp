// Placeholder until the kernel generator lands.
#include "backend/hip/codegen/SegmentCompiler.h"

namespace mdl::backend::hip {

bool compileSegment(const ir::Operation &, const std::string &target, std::string &,
                    std::string &error) {
  error = "no GPU code generation for '" + target + "' yet";
  return false;
}

} // namespace mdl::backend::hip
