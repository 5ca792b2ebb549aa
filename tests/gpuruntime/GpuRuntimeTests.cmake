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

# Every conformance program and example with hip devices, and the
# generator's coverage programs, on GPU code through OpenCL (PoCL gives
# eight devices), on both backends: expected results (or the CPU's, for the
# others), and kernels launched on every hip device
# (tests/gpuruntime/gpu_programs.py).
set(MDL_GPU_ENV "POCL_DEVICES=pthread pthread pthread pthread pthread pthread pthread pthread")
file(GLOB MDL_GPU_CASES "${MDL_CONFORMANCE_DIR}/run/*.mdl")
file(GLOB MDL_GPU_EXAMPLES "${CMAKE_SOURCE_DIR}/examples/*.mdl")
# The generator's coverage programs (tests/gpu/programs), through the runtime.
file(GLOB MDL_GPU_PROGRAMS "${CMAKE_SOURCE_DIR}/tests/gpu/programs/*.mdl")
foreach(program ${MDL_GPU_CASES} ${MDL_GPU_EXAMPLES} ${MDL_GPU_PROGRAMS})
  file(READ ${program} source)
  if(NOT source MATCHES "=[ \t]*hip[ \t]*\\(")
    continue()
  endif()
  get_filename_component(name ${program} NAME_WE)
  if(program IN_LIST MDL_GPU_CASES)
    set(kind case)
    set(test gpu.conformance.${name})
  elseif(program IN_LIST MDL_GPU_PROGRAMS)
    set(kind example)
    set(test gpu.program.${name})
  else()
    set(kind example)
    set(test gpu.example.${name})
  endif()
  foreach(backend interp jit)
    add_test(NAME ${test}.${backend}
             COMMAND ${MDL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpuruntime/gpu_programs.py
                     --mdl $<TARGET_FILE:mdl> --backend ${backend} --${kind} ${program})
    set_tests_properties(${test}.${backend} PROPERTIES LABELS gpu ENVIRONMENT "${MDL_GPU_ENV}"
                         FAIL_REGULAR_EXPRESSION "FAIL:" SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endforeach()

# The random differential programs, computed on a hip device on OpenCL
# through the runtime, against the interpreter on the CPU.
add_test(NAME gpu.random_programs
         COMMAND ${MDL_PYTHON} ${CMAKE_SOURCE_DIR}/tests/jit/random_programs.py
                 --mdl $<TARGET_FILE:mdl> --count 60 --seed 1 --place hip --gpu-runtime opencl)
set_tests_properties(gpu.random_programs PROPERTIES LABELS gpu ENVIRONMENT "POCL_DEVICES=pthread"
                     FAIL_REGULAR_EXPRESSION "FAIL:" SKIP_RETURN_CODE 77 TIMEOUT 1800)

# The same generator with bf16 and f16 values (--dtype): halves computed in
# f32 between widening loads and rounding stores on the GPU, within a few
# units of the half's last place of the interpreter's per-operation
# rounding on the CPU.
add_test(NAME gpu.random_programs_bf16
         COMMAND ${MDL_PYTHON} ${CMAKE_SOURCE_DIR}/tests/jit/random_programs.py
                 --mdl $<TARGET_FILE:mdl> --count 30 --seed 1 --dtype bf16 --place hip
                 --gpu-runtime opencl)
add_test(NAME gpu.random_programs_f16
         COMMAND ${MDL_PYTHON} ${CMAKE_SOURCE_DIR}/tests/jit/random_programs.py
                 --mdl $<TARGET_FILE:mdl> --count 20 --seed 101 --dtype f16 --place hip
                 --gpu-runtime opencl)
set_tests_properties(gpu.random_programs_bf16 gpu.random_programs_f16 PROPERTIES LABELS gpu
                     ENVIRONMENT "POCL_DEVICES=pthread" FAIL_REGULAR_EXPRESSION "FAIL:"
                     SKIP_RETURN_CODE 77 TIMEOUT 1800)

# gather, embedding and dynamic_index with indices out of range on PoCL, on
# both backends: E0405 at the operation with the CPU kernel's message, the
# first failing index and operation (the program's error record).
add_test(NAME gpu.index_errors
         COMMAND ${MDL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpuruntime/index_errors.py
                 --mdl $<TARGET_FILE:mdl>)
set_tests_properties(gpu.index_errors PROPERTIES LABELS gpu ENVIRONMENT "POCL_DEVICES=pthread"
                     FAIL_REGULAR_EXPRESSION "FAIL:" SKIP_RETURN_CODE 77 TIMEOUT 900)

# hip devices where the GPU, its driver or its API is missing: reasons,
# E0403 or the CPU with N0803, never a crash (runs on every machine).
add_test(NAME gpu.absent_gpus
         COMMAND ${MDL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpuruntime/absent_gpus.py
                 --mdl $<TARGET_FILE:mdl> --program ${CMAKE_SOURCE_DIR}/examples/pipeline.mdl)
set_tests_properties(gpu.absent_gpus PROPERTIES LABELS gpu FAIL_REGULAR_EXPRESSION "FAIL:")

# mdl repl with --gpu-runtime: values computed on the device, on both backends.
add_test(NAME gpu.repl
         COMMAND ${MDL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpuruntime/repl_gpu.py
                 --mdl $<TARGET_FILE:mdl>)
set_tests_properties(gpu.repl PROPERTIES LABELS "gpu;repl" ENVIRONMENT "POCL_DEVICES=pthread"
                     FAIL_REGULAR_EXPRESSION "FAIL:" SKIP_RETURN_CODE 77)

# The same conformance programs on a real GPU (--gpu-runtime=auto: HIP,
# else CUDA): skipped, saying why, on machines without one.
foreach(program ${MDL_GPU_CASES})
  file(READ ${program} source)
  if(NOT source MATCHES "=[ \t]*hip[ \t]*\\(")
    continue()
  endif()
  get_filename_component(name ${program} NAME_WE)
  add_test(NAME gpu.hardware.${name}
           COMMAND ${MDL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpuruntime/gpu_programs.py
                   --mdl $<TARGET_FILE:mdl> --backend jit --gpu-runtime auto --case ${program})
  set_tests_properties(gpu.hardware.${name} PROPERTIES LABELS gpu FAIL_REGULAR_EXPRESSION "FAIL:"
                       SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

# The HIP and CUDA devices on a stand-in driver (gpuruntime/MockGpu*.cpp:
# HIP, the CUDA driver, rocBLAS, hipBLAS and cuBLAS over two GPUs in host
# memory), which the test points the runtime at through MDL_AMDHIP_LIBRARY
# and the other overrides: every call, its arguments and what closing gives
# back, without a GPU (runs on every machine).
add_library(mdl_mock_gpu_driver SHARED gpuruntime/MockGpuDriver.cpp gpuruntime/MockGpuBlas.cpp)
set_target_properties(mdl_mock_gpu_driver PROPERTIES CXX_VISIBILITY_PRESET hidden)
add_executable(gpu_driver_test unit/GpuDriverTest.cpp)
target_link_libraries(gpu_driver_test PRIVATE mdl_hip_runtime ${CMAKE_DL_LIBS} GTest::gtest_main)
target_compile_definitions(gpu_driver_test
                           PRIVATE MDL_MOCK_GPU_DRIVER="$<TARGET_FILE:mdl_mock_gpu_driver>")
add_dependencies(gpu_driver_test mdl_mock_gpu_driver)
gtest_discover_tests(gpu_driver_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS gpu
                     SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
