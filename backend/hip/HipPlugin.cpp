// libmdl_hip.so's one export (see HipPlugin.h).
#include "backend/hip/HipPlugin.h"
#include "backend/hip/codegen/SegmentCompiler.h"
#include "backend/hip/runtime/GpuRuntime.h"

extern "C" __attribute__((visibility("default"))) const mdl::backend::hip::HipPlugin *
mdl_hip_plugin() {
  static const mdl::backend::hip::HipPlugin plugin = {
      mdl::backend::hip::kHipPluginVersion, &mdl::backend::hip::compileSegment,
      &mdl::backend::hip::gpuRuntime};
  return &plugin;
}
