// The JIT's claim against the operation table: every kind the table marks
// fusible has an element-wise code generator.
#include "backend/jit/Codegen.h"

#include <gtest/gtest.h>

TEST(JitTables, EveryFusibleKindHasCode) {
  EXPECT_EQ(mdl::backend::jit::elementCodegenProblems(), "");
}
