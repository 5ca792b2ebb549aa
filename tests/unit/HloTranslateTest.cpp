// Unit tests for the HLO-to-IR translation: which mdl operations each HLO
// construct becomes, tuples and control flow, constants (inline, in the
// weight file, elided), placement hints, and the diagnostics (every
// unsupported construct listed once, malformed HLO at its line). Every
// module that imports must pass the IR verifier.
#include "frontend/hlo/HloImporter.h"
#include "stdlib/Registry.h"
#include "ir/passes/Verify.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

using namespace mdl;
using namespace mdl::frontend::hlo;

namespace {

struct Imported {
  std::unique_ptr<ir::Module> m;
  std::vector<ir::Diagnostic> diags;
  std::map<std::string, int> kinds; // op spelling -> count
  bool has(const std::string &k) const { return kinds.count(k) > 0; }
};

Imported import(const std::string &text, HloImportOptions opts = {}) {
  ir::DiagnosticEngine diags;
  HloImportResult r;
  if (opts.weightsOut.empty())
    opts.weightsOut = ::testing::TempDir() + "/hlo_translate_test.safetensors";
  opts.progress = false;
  bool ok = importHloText(text.data(), text.size(), "t.hlo", diags, opts, r);
  diags.flush();
  Imported out;
  out.diags = diags.all();
  if (r.weights) {
    std::string err;
    r.weights->finish(err);
  }
  if (ok) {
    out.m = std::move(r.module);
    std::vector<std::string> problems = passes::verifyModule(*out.m);
    for (const std::string &p : problems)
      ADD_FAILURE() << "verifier: " << p;
    for (auto &f : out.m->functions)
      ir::walk(*f->body, [&](const ir::Operation &op) { ++out.kinds[ir::opName(op.kind)]; });
  }
  return out;
}

std::vector<std::string> codes(const Imported &i) {
  std::vector<std::string> c;
  for (const ir::Diagnostic &d : i.diags)
    c.push_back(d.code + ":" + std::to_string(d.loc.line) + ":" + d.message);
  return c;
}

TEST(HloTranslateTest, ElementwiseOpsMapToMdlOps) {
  Imported i = import(R"(ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = s32[4] parameter(2)
  u = u32[4] parameter(3)
  p = pred[4] parameter(4)
  x1 = f32[4] add(a, b)
  x2 = f32[4] divide(a, b)
  x3 = s32[4] divide(s, s)
  x4 = s32[4] remainder(s, s)
  x5 = pred[4] compare(a, b), direction=LT
  x6 = pred[4] compare(a, b), direction=LT, type=TOTALORDER
  x7 = pred[4] compare(u, u), direction=GT
  x8 = pred[4] xor(p, p)
  x9 = u32[4] shift-right-logical(u, u)
  x10 = f32[4] convert(u)
  x11 = f32[4] clamp(a, b, a)
  x12 = f32[4] select(p, a, b)
  x13 = f32[4] exponential-minus-one(a)
  x14 = s32[4] bitcast-convert(a)
  ROOT t = (f32[4], pred[4]) tuple(x1, x5)
})");
  ASSERT_TRUE(i.m) << ::testing::PrintToString(codes(i));
  for (const char *k : {"add", "div", "div_trunc", "rem", "lt", "compare", "ne",
                        "shift_right_logical", "convert", "clip", "select", "expm1",
                        "bitcast_convert", "return"})
    EXPECT_TRUE(i.has(k)) << k;
  EXPECT_EQ(i.kinds["compare"], 2); // total order, and unsigned
  ir::Function *f = i.m->findFunction("main");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->resultTypes.size(), 2u);
  EXPECT_EQ(f->argNames, (std::vector<std::string>{"a", "b", "s", "u", "p"}));
}

TEST(HloTranslateTest, ShapeOpsAndBroadcasts) {
  Imported i = import(R"(ENTRY e {
  a = f32[3] parameter(0)
  b = f32[2,3] broadcast(a), dimensions={1}
  c = f32[3,2] broadcast(a), dimensions={0}
  d = f32[3,2] transpose(b), dimensions={1,0}
  r = f32[3] reverse(a), dimensions={0}
  s = f32[1,2] slice(b), slice={[1:2], [0:3:2]}
  io = s32[2,3] iota(), iota_dimension=1
  z = f32[] constant(0)
  p = f32[4,5] pad(b, z), padding=1_1x0_2
  q = f32[2,7] pad(b, z), padding=0_0x-1_1_2
  ROOT t = (f32[2,3], f32[3,2]) tuple(b, c)
})");
  ASSERT_TRUE(i.m) << ::testing::PrintToString(codes(i));
  for (const char *k : {"broadcast_to", "reshape", "transpose", "slice", "iota", "pad",
                        "pad_general"})
    EXPECT_TRUE(i.has(k)) << k;
}

TEST(HloTranslateTest, ReducersAreRecognizedOrBecomeFunctions) {
  Imported i = import(R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(b, a)
}
odd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT r = f32[] add(m, b)
}
ENTRY e {
  x = f32[4,5] parameter(0)
  z = f32[] constant(0)
  r1 = f32[4] reduce(x, z), dimensions={1}, to_apply=add
  ROOT r2 = f32[5] reduce(x, z), dimensions={0}, to_apply=odd
})");
  ASSERT_TRUE(i.m) << ::testing::PrintToString(codes(i));
  EXPECT_EQ(i.kinds["reduce"], 2);
  EXPECT_TRUE(i.m->findFunction("odd"));  // a function for the generic reducer
  EXPECT_FALSE(i.m->findFunction("add")); // recognized: no function
}

TEST(HloTranslateTest, ControlFlowAndTuples) {
  Imported i = import(R"(cond {
  p = (s32[], (f32[2], f32[])) parameter(0)
  k = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(k, n), direction=LT
}
body {
  p = (s32[], (f32[2], f32[])) parameter(0)
  k = s32[] get-tuple-element(p), index=0
  in = (f32[2], f32[]) get-tuple-element(p), index=1
  one = s32[] constant(1)
  k1 = s32[] add(k, one)
  ROOT t = (s32[], (f32[2], f32[])) tuple(k1, in)
}
b0 {
  ROOT c = f32[] constant(1)
}
b1 {
  ROOT c = f32[] constant(2)
}
b2 {
  ROOT c = f32[] constant(3)
}
ENTRY e {
  x = f32[2] parameter(0)
  y = f32[] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  inner = (f32[2], f32[]) tuple(x, y)
  init = (s32[], (f32[2], f32[])) tuple(z, inner)
  w = (s32[], (f32[2], f32[])) while(init), condition=cond, body=body
  e = () tuple()
  c = f32[] conditional(i, e, e, e), branch_computations={b0, b1, b2}
  ROOT out = (s32[], f32[]) tuple(z, c)
})");
  ASSERT_TRUE(i.m) << ::testing::PrintToString(codes(i));
  EXPECT_EQ(i.kinds["while"], 1);
  EXPECT_EQ(i.kinds["if"], 2); // three branches: two nested ifs
  EXPECT_EQ(i.kinds["eq"], 2);
}

TEST(HloTranslateTest, ConstantsInlineInTheWeightFileOrElided) {
  std::string big = "ENTRY e {\n  big = f32[400] constant({";
  for (int k = 0; k < 400; ++k)
    big += (k ? ", " : "") + std::to_string(k);
  big += "})\n  small = f32[2] constant({1, 2})\n  el = f32[3] constant({...})\n"
         "  ROOT t = (f32[400], f32[2], f32[3]) tuple(big, small, el)\n}\n";
  Imported rejected = import(big);
  ASSERT_FALSE(rejected.m);
  ASSERT_EQ(rejected.diags.size(), 1u);
  EXPECT_EQ(rejected.diags[0].code, "E0601");
  EXPECT_NE(rejected.diags[0].message.find("'el'"), std::string::npos);

  HloImportOptions zeros;
  zeros.fillElidedZeros = true;
  Imported filled = import(big, zeros);
  ASSERT_TRUE(filled.m);
  ASSERT_EQ(filled.diags.size(), 1u);
  EXPECT_EQ(filled.diags[0].code, "W0702");
  EXPECT_TRUE(filled.has("zeros"));
  EXPECT_TRUE(filled.has("constant"));
  ASSERT_EQ(filled.m->globals.size(), 1u); // the 1600-byte constant
  EXPECT_EQ(filled.m->globals[0].init->ops[0]->kind, ir::OpKind::Load);
  EXPECT_EQ(filled.m->globals[0].init->ops[0]->stringAttr("key"), "big");

  HloImportOptions given;
  given.elidedWeights = "/some/values.safetensors";
  Imported loaded = import(big, given);
  ASSERT_TRUE(loaded.m);
  ASSERT_EQ(loaded.m->globals.size(), 2u);
  EXPECT_EQ(loaded.m->globals[1].init->ops[0]->stringAttr("file"), "/some/values.safetensors");
  EXPECT_EQ(loaded.m->globals[1].init->ops[0]->stringAttr("key"), "el");
}

TEST(HloTranslateTest, MaximalShardingPlacesOnHipDevices) {
  Imported i = import(R"(ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] add(a, a), sharding={maximal device=1}
  c = f32[2] multiply(b, b), sharding={devices=[2]0,1}
  ROOT d = f32[2] negate(c)
})");
  ASSERT_TRUE(i.m);
  ASSERT_EQ(i.m->devices.size(), 2u);
  EXPECT_EQ(i.m->devices[0].name, "host");
  EXPECT_EQ(i.m->devices[1].name, "gpu1");
  EXPECT_EQ(i.m->devices[1].kind, "hip");
  int placed = 0;
  ir::walk(*i.m->findFunction("main")->body, [&](const ir::Operation &op) {
    if (op.device == 1) {
      EXPECT_EQ(op.kind, ir::OpKind::Add);
      EXPECT_EQ(op.placement, ir::PlacementKind::Explicit);
      ++placed;
    }
  });
  EXPECT_EQ(placed, 1);
}

TEST(HloTranslateTest, EveryUnsupportedConstructIsListedOnce) {
  Imported i = import(R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
unreached {
  ROOT t = token[] after-all()
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  z = f32[4] custom-call(y), custom_call_target="lapack_x"
  w = s16[4] convert(z)
  ok = f32[4] custom-call(x), custom_call_target="Sharding"
  ROOT r = f32[4] sine(ok)
})");
  ASSERT_FALSE(i.m);
  std::vector<std::string> c = codes(i);
  ASSERT_EQ(c.size(), 4u) << ::testing::PrintToString(c);
  EXPECT_NE(c[0].find("E0601:11:unsupported HLO construct 'all-reduce'"), std::string::npos);
  EXPECT_NE(c[1].find("E0601:12:unsupported HLO construct 'custom-call:lapack_x'"),
            std::string::npos);
  EXPECT_NE(c[2].find("E0601:13:unsupported HLO construct 'type:s16'"), std::string::npos);
  EXPECT_NE(c[3].find("E0601:7:unsupported HLO construct 'after-all'"), std::string::npos);
}

TEST(HloTranslateTest, MalformedHloIsE0602AtTheInstruction) {
  Imported i = import("ENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[5] add(a, a)\n"
                      "  c = f32[4] multiply(a, a)\n  ROOT d = f32[3] dot(a, c)\n}\n");
  ASSERT_FALSE(i.m);
  std::vector<std::string> c = codes(i);
  ASSERT_EQ(c.size(), 2u) << ::testing::PrintToString(c);
  EXPECT_EQ(c[0].substr(0, 8), "E0602:3:");
  EXPECT_EQ(c[1].substr(0, 8), "E0602:5:");
  Imported j = import("ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT c = f32[4] multiply(a, q)\n}\n");
  ASSERT_FALSE(j.m);
  ASSERT_EQ(j.diags.size(), 1u);
  EXPECT_EQ(j.diags[0].loc.line, 3u);
  EXPECT_EQ(j.diags[0].loc.col, 31u);
  EXPECT_NE(j.diags[0].message.find("unknown operand 'q'"), std::string::npos);
}

TEST(HloTranslateTest, CallsKeepTheirFunctionsAndFusionsAreInlined) {
  Imported i = import(R"(f {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
}
g {
  p = f32[2] parameter(0)
  ROOT a = f32[2] abs(p)
}
ENTRY main.7 {
  x = f32[2] parameter(0)
  c = f32[2] call(x), to_apply=f
  ROOT u = f32[2] fusion(c), kind=kLoop, calls=g
})");
  ASSERT_TRUE(i.m);
  EXPECT_TRUE(i.m->findFunction("main"));
  EXPECT_TRUE(i.m->findFunction("f"));
  EXPECT_FALSE(i.m->findFunction("g"));
  EXPECT_EQ(i.kinds["call"], 1);
  EXPECT_EQ(i.kinds["abs"], 1);
}

} // namespace
