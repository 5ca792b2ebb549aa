// The IR text form: print(parse(print(m))) == print(m) for every
// conformance program, before and after specialization; the verifier
// accepts what lowering produces and rejects malformed IR.
#include "TestSupport.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"
#include "ir/passes/Specialize.h"
#include "ir/passes/Verify.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <algorithm>

using namespace mdl;

namespace {

std::vector<std::string> conformancePrograms() {
  std::vector<std::string> out;
  std::string dir = std::string(MDL_CONFORMANCE_DIR) + "/run";
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.substr(n.size() - 4) == ".mdl")
        out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expectRoundTrip(const ir::Module &m, const std::string &what) {
  std::string first = ir::printModule(m);
  std::string err;
  auto parsed = ir::parseModule(first, err);
  ASSERT_TRUE(parsed) << what << ": " << err << "\n" << first;
  EXPECT_EQ(ir::printModule(*parsed), first) << what;
  EXPECT_TRUE(passes::verifyModule(*parsed).empty()) << what;
}

} // namespace

TEST(IrRoundTrip, EveryConformanceProgram) {
  std::vector<std::string> files = conformancePrograms();
  ASSERT_GE(files.size(), 20u) << "conformance suite not found at " << MDL_CONFORMANCE_DIR;
  for (const std::string &f : files) {
    auto c = test::compileFile(f);
    ASSERT_TRUE(c->module) << f << ": " << (c->codes().empty() ? "" : c->codes()[0]);
    auto problems = passes::verifyModule(*c->module);
    EXPECT_TRUE(problems.empty()) << f << ": " << (problems.empty() ? "" : problems[0]);
    expectRoundTrip(*c->module, f);
    auto spec = passes::specialize(*c->module, {}, c->diags);
    ASSERT_TRUE(spec) << f;
    expectRoundTrip(*spec, f + " (specialized)");
  }
}

TEST(IrParser, ReportsPositions) {
  std::string err;
  EXPECT_FALSE(ir::parseModule("func @f() -> () {\n  %0 = bogus : f32\n}\n", err));
  EXPECT_EQ(err.substr(0, 4), "2:8:");
  EXPECT_FALSE(ir::parseModule("func @f() -> () {\n  return %3\n}\n", err));
  EXPECT_NE(err.find("undefined value %3"), std::string::npos);
}

TEST(IrVerifier, RejectsTypeErrors) {
  std::string err;
  auto m = ir::parseModule(
      "func @f(%0: f32[2], %1: f32[3]) -> (f32[2]) {\n"
      "  %2 = add %0, %1 : f32[2]\n"
      "  return %2\n"
      "}\n",
      err);
  ASSERT_TRUE(m) << err;
  auto problems = passes::verifyModule(*m);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("not broadcastable"), std::string::npos) << problems[0];
  auto m2 = ir::parseModule("func @f(%0: f32[2]) -> (f32[3]) {\n  return %0\n}\n", err);
  ASSERT_TRUE(m2) << err;
  EXPECT_FALSE(passes::verifyModule(*m2).empty());
}

TEST(IrPrinter, DenseAndAttributesRoundTrip) {
  std::string text =
      "func @f() -> (f32[2], i64, bool[2]) {\n"
      "  %0 = constant {value = dense<f32[2] [1.5, -inf]>} : f32[2]\n"
      "  %1 = constant {value = dense<i64 -7>} : i64\n"
      "  %2 = constant {value = dense<bool[2] [true, false]>} : bool[2]\n"
      "  return %0, %1, %2\n"
      "}\n";
  std::string err;
  auto m = ir::parseModule(text, err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(ir::printModule(*m), text);
}
