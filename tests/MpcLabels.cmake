# Included by CTest after the tests that gtest_discover_tests found in
# mpc_test (tests/CMakeLists.txt): gives each of them the labels unit and
# mpc, a list that gtest_discover_tests (CMake 3.25) flattens on its way
# into set_tests_properties.
foreach(_mdl_mpc_test IN LISTS mpc_test_TESTS)
  set_tests_properties("${_mdl_mpc_test}" PROPERTIES LABELS "unit;mpc")
endforeach()
