// The GPU runtime's pieces that need no device: the address map, opening
// vendor libraries, the row-major to column-major mapping of products for
// the vendor BLAS, and the BLAS libraries' entry points where installed.
#include "backend/hip/runtime/AddressMap.h"
#include "backend/hip/runtime/DynamicLibrary.h"
#include "backend/hip/runtime/VendorBlas.h"
#include "backend/runtime/DeviceInterface.h"

#include <gtest/gtest.h>

namespace {

using namespace mdl::backend::hip;

TEST(GpuAddressMap, ResolvesAddressesInsideAllocations) {
  AddressMap map;
  int a, b;
  map.insert({0x10000, &a}, 4096);
  map.insert({0x20000, &b}, 100);
  auto r = map.resolve(0x10000 + 1000, 96);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->memory.handle, &a);
  EXPECT_EQ(r->offset, 1000u);
  EXPECT_EQ(r->address(), 0x10000u + 1000);
  auto whole = map.resolve(0x20000, 100);
  ASSERT_TRUE(bool(whole));
  EXPECT_EQ(whole->memory.handle, &b);
  EXPECT_EQ(whole->offset, 0u);
  auto empty = map.resolve(0x20000 + 99, 0);
  EXPECT_TRUE(bool(empty));
}

TEST(GpuAddressMap, RefusesRangesOutsideOneAllocation) {
  AddressMap map;
  map.insert({0x10000, nullptr}, 4096);
  map.insert({0x11000, nullptr}, 4096); // right after the first
  auto past = map.resolve(0x10000 + 4000, 200);
  ASSERT_FALSE(bool(past));
  EXPECT_EQ(llvm::toString(past.takeError()),
            "200 bytes at 0x10fa0 run past the end of its 4096-byte allocation "
            "(at offset 4000)");
  for (uint64_t stray : {uint64_t(0), uint64_t(0xffff), uint64_t(0x12000), uint64_t(0x99999)}) {
    auto r = map.resolve(stray, 1);
    ASSERT_FALSE(bool(r));
    EXPECT_NE(llvm::toString(r.takeError()).find("is not memory of this device"),
              std::string::npos);
  }
  EXPECT_TRUE(map.erase(0x10000).has_value());
  EXPECT_FALSE(map.erase(0x10000).has_value());
  auto gone = map.resolve(0x10000, 1);
  EXPECT_FALSE(bool(gone));
  llvm::consumeError(gone.takeError());
  EXPECT_EQ(map.size(), 1u);
}

TEST(GpuDynamicLibrary, SaysWhatWasTried) {
  auto missing = DynamicLibrary::open(nullptr, {"libmdl-no-such-library.so.7", "libnope.so"});
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "libmdl-no-such-library.so.7, libnope.so not found");
  auto libc = DynamicLibrary::open(nullptr, {"libc.so.6"});
  ASSERT_TRUE(bool(libc)) << llvm::toString(libc.takeError());
  EXPECT_EQ(libc->name(), "libc.so.6");
}

// A table of entry points as the GPU APIs and BLAS libraries declare theirs.
struct LibcTable {
  size_t (*strlen)(const char *) = nullptr;
  int (*abs)(int) = nullptr;
  llvm::Error bindAll(const DynamicLibrary &lib) {
    // An entry point under a versioned name that this library lacks: bound
    // under its older name.
    return lib.bindAll({{strlen, "strlen"}, {abs, "mdl_abs_v2", "abs"}});
  }
};

TEST(GpuDynamicLibrary, BindsEveryEntryPointOfATable) {
  LibcTable table;
  auto libc = openAndBind(table, nullptr, {"libmdl-no-such-library.so.7", "libc.so.6"});
  ASSERT_TRUE(bool(libc)) << llvm::toString(libc.takeError());
  EXPECT_EQ(libc->name(), "libc.so.6");
  ASSERT_TRUE(table.strlen && table.abs);
  EXPECT_EQ(table.strlen("four"), 4u);
  EXPECT_EQ(table.abs(-7), 7);

  // The first symbol missing is named (its current name, where it has an
  // older one too), and the whole table is refused.
  int (*fn)(int) = nullptr;
  llvm::Error e = libc->bindAll({{table.abs, "abs"}, {fn, "mdl_no_such_symbol_v2", "mdl_old"}});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "libc.so.6 has no 'mdl_no_such_symbol_v2' (an incompatible version?)");
  e = libc->bindAll({{fn, "mdl_no_such_symbol"}, {table.abs, "abs"}});
  EXPECT_EQ(llvm::toString(std::move(e)),
            "libc.so.6 has no 'mdl_no_such_symbol' (an incompatible version?)");
  EXPECT_EQ(fn, nullptr);

  // openAndBind: a library that does not load, or lacks an entry point.
  LibcTable none;
  auto absent = openAndBind(none, nullptr, {"libmdl-no-such-library.so.7"});
  ASSERT_FALSE(bool(absent));
  EXPECT_EQ(llvm::toString(absent.takeError()), "libmdl-no-such-library.so.7 not found");
  struct Incomplete {
    void (*fn)() = nullptr;
    llvm::Error bindAll(const DynamicLibrary &lib) { return lib.bindAll({{fn, "mdl_nope"}}); }
  } incomplete;
  auto lacking = openAndBind(incomplete, nullptr, {"libc.so.6"});
  ASSERT_FALSE(bool(lacking));
  EXPECT_EQ(llvm::toString(lacking.takeError()),
            "libc.so.6 has no 'mdl_nope' (an incompatible version?)");
}

TEST(GpuVendorBlas, RowMajorProductsAreTransposedColumnMajorCalls) {
  // C (3 x 5) = A (3 x 4) B (4 x 5), row-major, batch 2: the column-major
  // call computes C^T (5 x 3) = B^T (5 x 4) A^T (4 x 3).
  BlasGemm g;
  g.dtype = MDL_F32;
  g.m = 3, g.n = 5, g.k = 4, g.lda = 4, g.ldb = 5, g.ldc = 5;
  g.batch = 2, g.strideA = 12, g.strideB = 20, g.strideC = 15;
  g.a = 0x1000, g.b = 0x2000, g.c = 0x3000;
  ColumnMajorGemm c = columnMajor(g);
  EXPECT_EQ(c.m, 5);
  EXPECT_EQ(c.n, 3);
  EXPECT_EQ(c.k, 4);
  EXPECT_EQ(c.first, 0x2000u);
  EXPECT_EQ(c.second, 0x1000u);
  EXPECT_EQ(c.ldFirst, 5);
  EXPECT_EQ(c.ldSecond, 4);
  EXPECT_EQ(c.strideFirst, 20);
  EXPECT_EQ(c.strideSecond, 12);
  EXPECT_FALSE(c.transFirst);
  EXPECT_FALSE(c.transSecond);
  EXPECT_TRUE(c.fitsInt);

  // Check the mapping numerically with a naive column-major GEMM.
  auto colMajorGemm = [](const ColumnMajorGemm &c, const std::vector<float> &first,
                         const std::vector<float> &second, std::vector<float> &out) {
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        float s = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          float x =
              c.transFirst ? first[size_t(i * c.ldFirst + l)] : first[size_t(l * c.ldFirst + i)];
          float y = c.transSecond ? second[size_t(l * c.ldSecond + j)]
                                  : second[size_t(j * c.ldSecond + l)];
          s += x * y;
        }
        out[size_t(j * c.ldc + i)] = s;
      }
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      BlasGemm h;
      h.m = 3, h.n = 5, h.k = 4;
      h.transA = ta, h.transB = tb;
      h.lda = ta ? 3 : 4; // A^T stored as k x m when transA
      h.ldb = tb ? 4 : 5;
      h.ldc = 5;
      std::vector<float> a(12), b(20), want(15), got(15);
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = float(i) - 5;
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = float(i % 7) * 0.5f;
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 5; ++col)
          for (int l = 0; l < 4; ++l)
            want[size_t(r * 5 + col)] += (ta ? a[size_t(l * 3 + r)] : a[size_t(r * 4 + l)]) *
                                         (tb ? b[size_t(col * 4 + l)] : b[size_t(l * 5 + col)]);
      ColumnMajorGemm m = columnMajor(h);
      EXPECT_EQ(m.transFirst, tb);
      EXPECT_EQ(m.transSecond, ta);
      colMajorGemm(m, b, a, got);
      EXPECT_EQ(got, want) << "transA " << ta << " transB " << tb;
    }

  g.k = int64_t(1) << 31;
  EXPECT_FALSE(columnMajor(g).fitsInt);
}

TEST(GpuVendorBlas, CublasHasEveryEntryPointMdlCalls) {
  auto lib = cublasLibrary();
  if (!lib)
    GTEST_SKIP() << "no cuBLAS on this machine (" << llvm::toString(lib.takeError()) << ")";
  EXPECT_NE(lib->find("libcublas"), std::string::npos) << *lib;
}

TEST(GpuVendorBlas, RocblasHasEveryEntryPointMdlCalls) {
  auto lib = rocblasLibrary();
  if (!lib)
    GTEST_SKIP() << "no rocBLAS on this machine (" << llvm::toString(lib.takeError()) << ")";
  EXPECT_NE(lib->find("librocblas"), std::string::npos) << *lib;
}

} // namespace
