// Unit tests for the HLO text reader: every syntax variant of the corpus in
// small form, literal parsing into bytes and into the weight file, and
// malformed inputs reported with line and column (never a crash).
#include "frontend/hlo/HloReader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

using namespace mdl::frontend::hlo;

namespace {

struct Parsed {
  HloModule m;
  std::optional<HloSyntaxError> err;
};

Parsed parse(const std::string &text, WeightWriter *w = nullptr, size_t inlineLimit = 1024) {
  HloReadOptions o;
  o.inlineLimit = inlineLimit;
  if (w)
    o.weights = [w](std::string &) { return w; };
  Parsed p;
  p.err = readHloText(text.data(), text.data() + text.size(), o, p.m);
  return p;
}

const HloInstruction &inst(const HloModule &m, const std::string &name) {
  for (const HloComputation &c : m.computations)
    for (const HloInstruction &i : c.instructions)
      if (i.name == name)
        return i;
  static HloInstruction none;
  ADD_FAILURE() << "no instruction " << name;
  return none;
}

template <typename T> std::vector<T> bytesAs(const HloLiteral &l) {
  std::vector<T> v(l.bytes.size() / sizeof(T));
  std::memcpy(v.data(), l.bytes.data(), l.bytes.size());
  return v;
}

TEST(HloReaderTest, ModuleWithEntryRootAndSignatures) {
  Parsed p = parse(R"(HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0), metadata={op_name="x" source_file="a.py" source_line=3}
  ROOT %y = f32[2]{0} add(%x, %x)
}
)");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_EQ(p.m.name, "m");
  ASSERT_EQ(p.m.computations.size(), 2u);
  EXPECT_EQ(p.m.entry, 1);
  const HloComputation &e = p.m.computations[1];
  EXPECT_EQ(e.name, "main");
  EXPECT_EQ(e.rootInstruction().name, "y");
  EXPECT_EQ(inst(p.m, "x").parameterNumber, 0);
  EXPECT_EQ(inst(p.m, "y").operands.size(), 2u);
  EXPECT_EQ(inst(p.m, "y").pos.line, 11u);
  EXPECT_EQ(inst(p.m, "y").pos.col, 8u);
}

TEST(HloReaderTest, NoHeaderNoEntryNoRoot) {
  Parsed p = parse("c {\n  p = (s32[]) parameter(0)\n  t = s32[] get-tuple-element(p), index=0\n}\n"
                   "main {\n  a = s32[] constant(1)\n  b = s32[] add(a,\n    a)\n}");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_EQ(p.m.entry, 1);
  EXPECT_EQ(p.m.computations[1].rootInstruction().name, "b");
}

TEST(HloReaderTest, OldTrailingColonTablesAndComments) {
  Parsed p = parse(R"(/* block comment
   over lines */ HloModule convolution.167:
// a line comment
FileNames
1 "a.py"
2 "<embedded \'x\'>"
FunctionNames
1 "f"
FileLocations
1 {file_name_id=1 function_name_id=1 line=6}
StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY e {
  a = (f32[], /*index=1*/(s32[], pred[]), ()) parameter(0) // trailing
  ROOT b = f32[] get-tuple-element(a), index=0, metadata={stack_frame_id=1}
} // e
)");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_EQ(p.m.name, "convolution.167");
  const HloShape &s = inst(p.m, "a").shape;
  ASSERT_TRUE(s.isTuple);
  ASSERT_EQ(s.elements.size(), 3u);
  EXPECT_TRUE(s.elements[1].isTuple);
  EXPECT_TRUE(s.elements[2].isTuple);
  EXPECT_EQ(s.leafCount(), 3u);
}

TEST(HloReaderTest, ShapesLayoutsAndDynamicDims) {
  Parsed p = parse(R"(ENTRY e {
  a = f32[<=4194304]{0:T(1024)} parameter(0), sharding={maximal device=0}
  b = f32[?,784]{1,0:T(8,128)(2,1)S(1)} parameter(1)
  c = f32[2,4]{0,1} parameter(2)
  ROOT d = f32[2,4] copy(f32[2,4]{0,1} %c)
})");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_TRUE(inst(p.m, "a").shape.dynamic);
  EXPECT_TRUE(inst(p.m, "b").shape.dynamic);
  EXPECT_FALSE(inst(p.m, "c").shape.dynamic);
  EXPECT_EQ(inst(p.m, "d").operands[0].name, "c");
}

TEST(HloReaderTest, AttributeStyles) {
  Parsed p = parse(R"(ENTRY e {
  x = f32[4] parameter(0), sharding={{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, {replicated}}
  a = f32[4] all-reduce(x), replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}, to_apply=add
  b = f32[4] all-reduce(x), replica_groups=[1,512]<=[512], channel_id=1, use_global_device_ids=true
  c = f32[4] custom-call(x), custom_call_target="te", backend_config={attn_heads = 128 : i64, dropout = 0.000000e+00 : f64}, literal=s32[] 1
  d = f32[4] fusion(x), kind=kCustom, calls=f, backend_config={
      fusion_backend_config:{kind:"__triton", tiles:[{sizes:[64,32]}]}
    }
  ROOT r = f32[4] custom-call(x), custom_call_target="foo", output_to_operand_aliasing={{0}: (0, {})}, frontend_attributes={_xla="true"}, backend_config="{\"a\": 1}", origin={{"a"}}
})");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_EQ(inst(p.m, "a").attr("replica_groups")->value, "mesh['axis_0'=2,'axis_1'=2] {'axis_1'}");
  EXPECT_EQ(inst(p.m, "a").attr("to_apply")->value, "add");
  EXPECT_EQ(inst(p.m, "b").attr("replica_groups")->value, "[1,512]<=[512]");
  EXPECT_EQ(inst(p.m, "c").attr("literal")->value, "s32[] 1");
  EXPECT_NE(inst(p.m, "d").attr("backend_config"), nullptr);
  EXPECT_EQ(inst(p.m, "d").attr("calls")->value, "f");
  EXPECT_EQ(inst(p.m, "r").attr("origin")->value, "{{\"a\"}}");
}

TEST(HloReaderTest, ComputationAttributesAfterTheBrace) {
  Parsed p = parse("%t (p: f32[1]) -> f32[1] {\n  %p = f32[1]{0} parameter(0)\n"
                   "  ROOT %r = f32[1] custom-call(f32[1]{0} %p),\n    custom_call_target=\"foo\"\n"
                   " }, execution_thread=\"mythread\"\n");
  ASSERT_FALSE(p.err) << p.err->message;
}

TEST(HloReaderTest, LiteralsOfEveryElementSpelling) {
  Parsed p = parse(R"(ENTRY e {
  a = f32[] constant(-inf)
  b = bf16[] constant(nan)
  c = f32[2,2]{1,0} constant({ { 1.5, -2 }, { 3e-1, inf } })
  d = pred[2,2] constant({{true, 0}, {1, false}})
  e = s32[3] constant({-1, 2147483647, 0})
  f = u32[1] constant({4294967295})
  g = u64[1] constant({18446744073709551615})
  h = f64[] constant(0.1)
  i = bf16[0]{0} constant({})
  j = f16[2] constant({1, -65504})
  k = f32[3] constant({...})
  l = f32[2] constant(f32[2] {7, 8})
  ROOT m = f32[] constant(-nan(0x7fc00000))
})");
  ASSERT_FALSE(p.err) << p.err->message;
  EXPECT_TRUE(std::isinf(bytesAs<float>(inst(p.m, "a").literal)[0]));
  EXPECT_EQ(bytesAs<uint16_t>(inst(p.m, "b").literal)[0] & 0x7f80, 0x7f80);
  EXPECT_EQ(bytesAs<float>(inst(p.m, "c").literal),
            (std::vector<float>{1.5f, -2.f, 0.3f, INFINITY}));
  EXPECT_EQ(inst(p.m, "d").literal.bytes, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(bytesAs<int32_t>(inst(p.m, "e").literal), (std::vector<int32_t>{-1, 2147483647, 0}));
  EXPECT_EQ(bytesAs<uint32_t>(inst(p.m, "f").literal)[0], 4294967295u);
  EXPECT_EQ(bytesAs<uint64_t>(inst(p.m, "g").literal)[0], 18446744073709551615ull);
  EXPECT_EQ(bytesAs<double>(inst(p.m, "h").literal)[0], 0.1);
  EXPECT_TRUE(inst(p.m, "i").literal.bytes.empty());
  EXPECT_EQ(bytesAs<uint16_t>(inst(p.m, "j").literal)[1], 0xfbffu);
  EXPECT_EQ(inst(p.m, "k").literal.kind, HloLiteral::Kind::Elided);
  EXPECT_EQ(bytesAs<float>(inst(p.m, "l").literal), (std::vector<float>{7, 8}));
  EXPECT_TRUE(std::isnan(bytesAs<float>(inst(p.m, "m").literal)[0]));
}

TEST(HloReaderTest, LargeLiteralsStreamIntoTheWeightFile) {
  std::string path = ::testing::TempDir() + "/hlo_reader_weights.safetensors";
  WeightWriter w;
  std::string err;
  ASSERT_TRUE(w.open(path, err)) << err;
  std::string text = "ENTRY e {\n  ROOT c = f32[300] constant({";
  for (int i = 0; i < 300; ++i)
    text += (i ? ", " : "") + std::to_string(i) + ".5";
  text += "})\n}\n";
  Parsed p = parse(text, &w);
  ASSERT_FALSE(p.err) << p.err->message;
  const HloLiteral &l = inst(p.m, "c").literal;
  EXPECT_EQ(l.kind, HloLiteral::Kind::Weight);
  EXPECT_EQ(l.key, "c");
  ASSERT_TRUE(w.finish(err)) << err;
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char *>(&n), 8);
  std::string header(n, ' ');
  in.read(header.data(), std::streamsize(n));
  EXPECT_NE(header.find("\"c\":{\"dtype\":\"F32\",\"shape\":[300],\"data_offsets\":[0,1200]}"),
            std::string::npos);
  std::vector<float> data(300);
  in.read(reinterpret_cast<char *>(data.data()), 1200);
  EXPECT_EQ(data[299], 299.5f);
  std::remove(path.c_str());
}

struct Bad {
  const char *text;
  uint32_t line, col;
  const char *message;
};

TEST(HloReaderTest, MalformedTextIsReportedAtLineAndColumn) {
  const Bad cases[] = {
      {"", 1, 1, "no HLO computation"},
      {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0\n}", 4, 1, "expected ')'"},
      {"ENTRY e {\n  a = f32[2 parameter(0)\n}", 2, 13, "expected ']'"},
      {"ENTRY e {\n  a = f32[2] constant({1, 2, 3})\n}", 2, 30, "more than the 2 elements"},
      {"ENTRY e {\n  a = f32[2] constant({1, x})\n}", 2, 27, "f32 literal"},
      {"ENTRY e {\n  a = f32[] add(b, c), dims={1, 2\n}", 1, 7, "not closed"},
      {"ENTRY e {\n  a = f32[] add(b, c), dims={1, 2)\n}", 2, 34, "unbalanced ')'"},
      {"ENTRY e {\n  a = f32[] add(b,\n", 3, 1, "operand name"},
      {"ENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}", 3, 8,
       "second ROOT"},
      {"ENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] parameter(1)\n}", 3, 3, "defined twice"},
      {"ENTRY e {\n  a = f32[] parameter(0) /* open\n}", 2, 26, "unterminated block comment"},
      {"ENTRY e {\n  a = f32[-1] parameter(0)\n}", 2, 11, "negative"},
      {"e {\n  a = q!!", 2, 7, "expected '[' after element type 'q'"},
  };
  for (const Bad &b : cases) {
    Parsed p = parse(b.text);
    ASSERT_TRUE(p.err) << b.text;
    EXPECT_EQ(p.err->pos.line, b.line) << b.text << ": " << p.err->message;
    EXPECT_EQ(p.err->pos.col, b.col) << b.text << ": " << p.err->message;
    EXPECT_NE(p.err->message.find(b.message), std::string::npos)
        << b.text << ": " << p.err->message;
  }
}

TEST(HloReaderTest, DeepNestingIsBoundedNotACrash) {
  std::string deep = "ENTRY e {\n  a = ";
  for (int i = 0; i < 100000; ++i)
    deep += "(";
  deep += "f32[]";
  Parsed p = parse(deep);
  ASSERT_TRUE(p.err);
  EXPECT_NE(p.err->message.find("nested"), std::string::npos) << p.err->message;
  std::string braces = "ENTRY e {\n  a = f32[1] constant(";
  for (int i = 0; i < 100000; ++i)
    braces += "{";
  p = parse(braces);
  ASSERT_TRUE(p.err);
  std::string attr = "ENTRY e {\n  a = f32[1] parameter(0), x=";
  for (int i = 0; i < 100000; ++i)
    attr += "[";
  p = parse(attr);
  ASSERT_TRUE(p.err);
}

} // namespace
