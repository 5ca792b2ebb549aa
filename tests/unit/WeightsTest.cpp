// Unit tests for weight files: safetensors and .npy round trips, files
// written the way NumPy writes them, and every kind of malformed file
// giving a precise error rather than a crash.
#include "backend/runtime/Weights.h"

#include "ir/Half.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace mdl::backend;
using mdl::ir::DType;
using mdl::ir::TensorType;

namespace {

class WeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "mdl_weights_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    for (const std::string &f : files_)
      std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string path(const std::string &name) {
    files_.push_back(dir_ + "/" + name);
    return files_.back();
  }
  std::string writeBytes(const std::string &name, const std::string &bytes) {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), std::streamsize(bytes.size()));
    return p;
  }
  static std::string readBytes(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  std::string dir_;
  std::vector<std::string> files_;
};

Tensor sample(DType t, const std::vector<int64_t> &shape, int salt = 0) {
  Tensor x = Tensor::empty(TensorType::of(t, shape));
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.setDouble(i, t == DType::Bool ? double((i + salt) % 2)
                                    : double((i * 7 + salt) % 23) -
                                          (t == DType::U8 ? 0 : 11));
  return x;
}

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.type() == b.type() &&
         std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0;
}

// The message of an error, "success" for none.
std::string errorOf(llvm::Error e) {
  if (!e)
    return "success";
  return llvm::toString(std::move(e));
}
template <typename T> std::string errorOf(llvm::Expected<T> e) {
  if (e)
    return "<no error>";
  return llvm::toString(e.takeError());
}
template <typename T> bool succeeds(llvm::Expected<T> e) {
  if (e)
    return true;
  llvm::consumeError(e.takeError());
  return false;
}

// A safetensors file from a header text and data bytes.
std::string safetensorsBytes(const std::string &header,
                             const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = char(uint8_t(n >> (8 * i)));
  return out + header + data;
}

// A .npy file as NumPy's writer lays it out: magic, version, header length,
// the dict padded with spaces to a multiple of 64, a newline.
std::string npyBytes(const std::string &dict, const std::string &data,
                     int major = 1, size_t align = 64) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % align)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    out += char(uint8_t(header.size() >> (8 * i)));
  return out + header + data;
}

template <typename T> std::string rawBytes(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(T));
}

// --- Round trips ------------------------------------------------------------

TEST_F(WeightsTest, SafetensorsRoundTripEveryDType) {
  std::vector<std::pair<std::string, Tensor>> ts;
  for (int k = 0; k < mdl::ir::kNumDTypes; ++k)
    ts.emplace_back(std::string("t_") + mdl::ir::dtypeName(DType(k)),
                    sample(DType(k), {3, 5}, k));
  ts.emplace_back("scalar", sample(DType::F32, {}));
  ts.emplace_back("empty", sample(DType::I64, {0, 4}));
  ts.emplace_back("odd", sample(DType::U8, {7})); // leaves later data unaligned
  ts.emplace_back("after_odd", sample(DType::F64, {2, 2}));
  std::string p = path("all.safetensors");
  ASSERT_EQ(errorOf(writeSafetensors(p, ts)), "success");
  std::string bytes = readBytes(p);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  for (const auto &[key, t] : ts) {
    auto got = loadWeight(p, key, &t.type());
    ASSERT_TRUE(bool(got)) << errorOf(got.takeError());
    EXPECT_TRUE(sameBytes(*got, t)) << key;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got->raw()) %
                  mdl::ir::dtypeSize(t.dtype()),
              0u);
    auto ty = weightType(p, key);
    ASSERT_TRUE(bool(ty));
    EXPECT_EQ(*ty, t.type());
  }
}

TEST_F(WeightsTest, NpyRoundTripEveryDType) {
  for (int k = 0; k < mdl::ir::kNumDTypes; ++k) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {6}, {2, 3, 4}}) {
      Tensor t = sample(DType(k), shape, k);
      std::string p = path("a" + std::to_string(k) + "_" +
                           std::to_string(shape.size()) + ".npy");
      ASSERT_EQ(errorOf(writeNpy(p, t)), "success");
      std::string bytes = readBytes(p);
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      uint16_t hlen = uint16_t(uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8);
      EXPECT_EQ((10 + hlen) % 64, 0);
      EXPECT_EQ(bytes[9 + hlen], '\n');
      auto got = readNpy(p);
      ASSERT_TRUE(bool(got)) << errorOf(got.takeError());
      EXPECT_TRUE(sameBytes(*got, t)) << mdl::ir::dtypeName(DType(k));
      auto viaLoad = loadWeight(p, "", &t.type());
      ASSERT_TRUE(bool(viaLoad)) << errorOf(viaLoad.takeError());
      EXPECT_EQ(*weightType(p, ""), t.type());
    }
  }
}

TEST_F(WeightsTest, NpyHeaderText) {
  std::string p = path("h.npy");
  ASSERT_EQ(errorOf(writeNpy(p, sample(DType::F32, {3}))), "success");
  EXPECT_NE(readBytes(p).find(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  ASSERT_EQ(errorOf(writeNpy(p, sample(DType::F16, {2, 1}))), "success");
  EXPECT_NE(readBytes(p).find("'descr': '<f2'"), std::string::npos);
  EXPECT_NE(readBytes(p).find("'shape': (2, 1)"), std::string::npos);
  ASSERT_EQ(errorOf(writeNpy(p, sample(DType::BF16, {}))), "success");
  EXPECT_NE(readBytes(p).find("'descr': '<V2'"), std::string::npos);
  EXPECT_NE(readBytes(p).find("'shape': ()"), std::string::npos);
}

TEST_F(WeightsTest, ReadsNpyAsNumPyWritesIt) {
  std::vector<double> v = {1.5, -2, 3.25, 4, 5, 6.125};
  std::string p = writeBytes(
      "np.npy",
      npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
               rawBytes(v)));
  auto t = readNpy(p);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(t->type(), TensorType::of(DType::F64, {2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(t->getDouble(i), v[i]);

  // Version 2.0 (4-byte header length), i4, and a Python 2 style shape.
  std::vector<int32_t> w = {1, -2, 3};
  p = writeBytes(
      "v2.npy",
      npyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3L,), }",
               rawBytes(w), 2));
  t = readNpy(p);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(t->type(), TensorType::of(DType::I32, {3}));
  EXPECT_EQ(t->getInt(1), -2);

  // Old NumPy padded to 16 bytes: the data is not 8-byte aligned, so it is
  // copied into an aligned buffer.
  std::string bytes =
      npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }",
               rawBytes(v), 1, 4);
  ASSERT_NE((bytes.size() - 48) % 8, 0u);
  p = writeBytes("odd.npy", bytes);
  t = readNpy(p);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % 8, 0u);
  EXPECT_EQ(t->getDouble(2), 3.25);

  // A Fortran-order 1-D array has the same bytes as a C-order one.
  p = writeBytes(
      "f1.npy",
      npyBytes("{'descr': '|b1', 'fortran_order': True, 'shape': (2,), }",
               std::string("\x01\x00", 2)));
  t = readNpy(p);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(t->getInt(0), 1);
}

TEST_F(WeightsTest, NoTwoGigabyteLimit) {
  // A sparse file: a 3 GiB tensor, then a small one whose offsets are past
  // 2^31 and 2^32.
  const uint64_t big = uint64_t(3) << 30;
  std::string header =
      "{\"pad\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(big) +
      "],\"data_offsets\":[0," + std::to_string(big) +
      "]},\"tail\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[" +
      std::to_string(big) + "," + std::to_string(big + 16) + "]}}";
  while ((8 + header.size()) % 8)
    header += ' ';
  std::string p = writeBytes("big.safetensors", safetensorsBytes(header, ""));
  uint64_t start = 8 + header.size();
  int fd = ::open(p.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t(start + big + 16)), 0);
  float tail[4] = {1.5f, -2.f, 3.f, 4.25f};
  ASSERT_EQ(::pwrite(fd, tail, 16, off_t(start + big)), 16);
  ::close(fd);
  auto t = loadWeight(p, "tail", nullptr);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(t->getDouble(0), 1.5);
  EXPECT_EQ(t->getDouble(3), 4.25);
  auto ty = weightType(p, "pad");
  ASSERT_TRUE(bool(ty));
  EXPECT_EQ(ty->dims[0].size, int64_t(big));
}

TEST_F(WeightsTest, UnalignedSafetensorsDataIsCopied) {
  // Header length 10: data starts at 18, so an f32 there is misaligned.
  std::vector<float> v = {1, 2, 3};
  std::string json =
      "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
  std::string p =
      writeBytes("u.safetensors", safetensorsBytes(json + "  ", rawBytes(v)));
  auto t = loadWeight(p, "x", nullptr);
  ASSERT_TRUE(bool(t)) << errorOf(t.takeError());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % 4, 0u);
  EXPECT_EQ(t->getDouble(2), 3.0);
}

TEST_F(WeightsTest, BoolBytesAreNormalized) {
  std::string json =
      "{\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}";
  std::string p = writeBytes(
      "b.safetensors", safetensorsBytes(json, std::string("\x00\x02\x01", 3)));
  auto t = loadWeight(p, "b", nullptr);
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(t->data<uint8_t>()[0], 0);
  EXPECT_EQ(t->data<uint8_t>()[1], 1);
  EXPECT_EQ(t->data<uint8_t>()[2], 1);
}

// --- Messages ---------------------------------------------------------------

class WeightsMessages : public WeightsTest {
protected:
  void SetUp() override {
    WeightsTest::SetUp();
    file_ = path("mlp_weights.safetensors");
    std::vector<std::pair<std::string, Tensor>> ts = {
        {"w1", sample(DType::F32, {8, 16})},
        {"b1", sample(DType::F32, {16})},
        {"w2", sample(DType::F32, {16, 4})},
        {"b2", sample(DType::F32, {4})}};
    ASSERT_EQ(errorOf(writeSafetensors(file_, ts)), "success");
  }
  std::string file_;
};

TEST_F(WeightsMessages, ShapeMismatch) {
  TensorType want = TensorType::of(DType::F32, {8, 32});
  EXPECT_EQ(
      errorOf(loadWeight(file_, "w1", &want)),
      file_ + ": key 'w1' is f32[8, 16], but the declaration says f32[8, 32]");
}

TEST_F(WeightsMessages, DTypeMismatch) {
  TensorType want = TensorType::of(DType::F16, {8, 16});
  EXPECT_EQ(
      errorOf(loadWeight(file_, "w1", &want)),
      file_ + ": key 'w1' is f32[8, 16], but the declaration says f16[8, 16]");
}

TEST_F(WeightsMessages, SymbolicDeclarationMatchesAnySize) {
  TensorType want(DType::F32,
                  {mdl::ir::Dim::symbol("N"), mdl::ir::Dim::of(16)});
  EXPECT_TRUE(succeeds(loadWeight(file_, "w1", &want)));
}

TEST_F(WeightsMessages, MissingKeyListsKeys) {
  EXPECT_EQ(errorOf(loadWeight(file_, "w9", nullptr)),
            file_ + ": no key 'w9' (keys: b1, b2, w1, w2)");
  EXPECT_EQ(errorOf(weightType(file_, "w9")),
            file_ + ": no key 'w9' (keys: b1, b2, w1, w2)");
}

TEST_F(WeightsMessages, KeyUseByFormat) {
  EXPECT_EQ(errorOf(loadWeight(file_, "", nullptr)),
            file_ + ": a safetensors file needs a key: load(\"" + file_ +
                "\", \"KEY\") (keys: b1, b2, w1, w2)");
  std::string npy = path("x.npy");
  ASSERT_EQ(errorOf(writeNpy(npy, sample(DType::F32, {2}))), "success");
  EXPECT_EQ(errorOf(loadWeight(npy, "w1", nullptr)),
            npy + ": a .npy file holds one array and takes no key (got 'w1')");
  TensorType want = TensorType::of(DType::F32, {3});
  EXPECT_EQ(errorOf(loadWeight(npy, "", &want)),
            npy + ": the array is f32[2], but the declaration says f32[3]");
}

TEST_F(WeightsMessages, MissingFile) {
  EXPECT_EQ(errorOf(loadWeight("x.safetensors", "w", nullptr)),
            "x.safetensors: cannot open: No such file or directory");
  EXPECT_EQ(errorOf(readNpy("nope/model.npy")),
            "nope/model.npy: cannot open: No such file or directory");
  EXPECT_EQ(errorOf(readNpy(dir_)), dir_ + ": cannot open: is a directory");
}

TEST_F(WeightsMessages, WriteErrors) {
  EXPECT_EQ(
      errorOf(writeNpy(dir_ + "/no/such/dir/a.npy", sample(DType::F32, {1}))),
      dir_ + "/no/such/dir/a.npy: cannot create: No such file or directory");
  std::string p = path("dup.safetensors");
  EXPECT_EQ(errorOf(writeSafetensors(p, {{"a", sample(DType::F32, {1})},
                                         {"a", sample(DType::F32, {1})}})),
            p + ": key 'a' appears twice");
  EXPECT_EQ(errorOf(writeNpy(p, Tensor())), p + ": no data to write");
}

// --- Malformed files --------------------------------------------------------

TEST_F(WeightsTest, MalformedSafetensors) {
  auto check = [&](const std::string &bytes, const std::string &expectPart) {
    std::string p = writeBytes("bad.safetensors", bytes);
    std::string msg = errorOf(loadWeight(p, "x", nullptr));
    EXPECT_NE(msg.find(expectPart), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
    std::string msg2 = errorOf(weightType(p, "x"));
    EXPECT_NE(msg2, "<no error>");
  };
  std::string f32x2(8, '\0');
  check("", "too short");
  check("abc", "too short");
  check(std::string(8, '\xff'),
        "header length 18446744073709551615 exceeds the file size (8 bytes)");
  check(safetensorsBytes("{\"x\":", ""), "header is not valid JSON");
  check(safetensorsBytes("[1, 2]", ""), "header is not a JSON object");
  check(safetensorsBytes("{\"x\": 3}", ""), "key 'x' is not an object");
  check(
      safetensorsBytes("{\"x\":{\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2),
      "key 'x' has no string 'dtype'");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
            f32x2),
        "key 'x' has dtype I16, which mdl does not support (supported: BOOL, "
        "I8, U8, I32, I64, "
        "F16, BF16, F32, F64)");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
            f32x2),
        "malformed shape");
  check(
      safetensorsBytes(
          "{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}",
          f32x2),
      "malformed shape");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
            f32x2),
        "malformed data_offsets");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
            f32x2),
        "malformed data_offsets");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}",
            f32x2),
        "data_offsets [0, 16] lie outside the data section (8 bytes)");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
            f32x2),
        "key 'x' is f32[3] (12 bytes), but its data_offsets span 8 bytes");
  check(safetensorsBytes(
            "{\"x\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
            "\"data_offsets\":[0,8]}}",
            f32x2),
        "too large to address");
  check(safetensorsBytes(
            "{\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            f32x2),
        "no key 'x' (keys: y)");
  check(safetensorsBytes("{\"__metadata__\":{\"a\":\"b\"}}", ""),
        "no key 'x' (the file holds no tensors)");
}

TEST_F(WeightsTest, MalformedNpy) {
  auto check = [&](const std::string &bytes, const std::string &expectPart) {
    std::string p = writeBytes("bad.npy", bytes);
    std::string msg = errorOf(readNpy(p));
    EXPECT_NE(msg.find(expectPart), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  };
  std::string d8(8, '\0');
  check("", "not a .npy file (bad magic)");
  check("PK\x03\x04 this is a zip file", "not a .npy file (bad magic)");
  check(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                 d8, 4),
        "unsupported .npy format version 4.0");
  check(std::string("\x93NUMPY\x01\x00\xff\xff{}", 12),
        "truncated .npy header");
  check(
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", d8),
      "malformed .npy header");
  check(npyBytes("{'descr': '<f4', 'shape': (2,), }", d8),
        "no 'fortran_order' entry");
  check(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                 d8 + d8),
        "Fortran-order arrays are not supported");
  check(
      npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", d8),
      "big-endian data ('>f4') is not supported");
  check(
      npyBytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", d8),
      "dtype '<u2' is not supported (supported: <f2 <f4 <f8 |b1 |i1 |u1 <i4 "
      "<i8, and <V2 for bf16)");
  check(
      npyBytes(
          "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
          d8),
      "structured dtypes are not supported");
  check(
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", d8),
      "truncated data: f32[3] needs 12 bytes, the file has 8 after its header");
  check(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': "
                 "(4294967296, 4294967296), }",
                 d8),
        "too large to address");
  check(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': "
                 "(99999999999999999999,), }",
                 d8),
        "malformed .npy header");
  check(npyBytes(std::string(200, '('), d8), "malformed .npy header");
}

// Every prefix of a valid file must fail cleanly (or, for the full file,
// succeed); so must random garbage.
TEST_F(WeightsTest, TruncatedAndGarbageFilesNeverCrash) {
  std::string st = path("full.safetensors"), np = path("full.npy");
  ASSERT_EQ(errorOf(writeSafetensors(st, {{"x", sample(DType::F32, {2, 3})},
                                          {"y", sample(DType::I8, {5})}})),
            "success");
  ASSERT_EQ(errorOf(writeNpy(np, sample(DType::F64, {3, 2}))), "success");
  std::string stBytes = readBytes(st), npBytes = readBytes(np);
  for (size_t n = 0; n < stBytes.size(); ++n) {
    std::string p = writeBytes("cut.safetensors", stBytes.substr(0, n));
    EXPECT_FALSE(succeeds(loadWeight(p, "y", nullptr))) << "prefix " << n;
    succeeds(
        loadWeight(p, "x", nullptr)); // may hold, if x's bytes are all there
  }
  for (size_t n = 0; n < npBytes.size(); ++n) {
    std::string p = writeBytes("cut.npy", npBytes.substr(0, n));
    EXPECT_FALSE(succeeds(readNpy(p))) << "prefix " << n;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string g(size_t(rng() % 300), '\0');
    for (char &c : g)
      c = char(rng());
    if (trial % 3 == 1) // plausible length field, garbage JSON
      g = safetensorsBytes(g, "");
    if (trial % 3 == 2) // right magic, garbage header
      g = std::string("\x93NUMPY\x01\x00", 8) + char(g.size() & 0xff) + '\0' +
          g;
    std::string p1 = writeBytes("g.safetensors", g),
                p2 = writeBytes("g.npy", g);
    EXPECT_FALSE(succeeds(loadWeight(p1, "x", nullptr)));
    EXPECT_FALSE(succeeds(readNpy(p2)));
  }
}

} // namespace
