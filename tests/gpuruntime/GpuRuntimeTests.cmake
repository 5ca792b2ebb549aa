# The hip kind's GPU runtime (backend/hip/runtime), label `gpu`. On OpenCL
# (PoCL on the CPU: tools/quickstart.sh installs pocl-opencl-icd) with two
# devices, so that peer copies between GPUs run; without an OpenCL device
# the tests that need one are reported as skipped, with the reason.
llvm_map_components_to_libnames(MDL_GPU_TEST_LLVM_LIBS core asmparser bitwriter)
add_executable(gpu_runtime_test unit/GpuRuntimeTest.cpp unit/GpuRuntimeUnitTest.cpp
                                unit/GpuTestKernels.cpp)
target_link_libraries(gpu_runtime_test PRIVATE mdl_hip_runtime ${MDL_GPU_TEST_LLVM_LIBS}
                      GTest::gtest_main)
gtest_discover_tests(gpu_runtime_test DISCOVERY_TIMEOUT 60
                     PROPERTIES LABELS gpu ENVIRONMENT "POCL_DEVICES=pthread pthread"
                                SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
