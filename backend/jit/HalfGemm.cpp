// Matrix products on bf16 and f16 operands for JIT-compiled code (the
// descriptor codes 2 to 5 of mdl_rt_matmul, Runtime.h): bf16 through
// oneDNN's matmul primitive, which runs on the CPU's bf16 instructions
// (AMX tiles or AVX512-BF16, whichever it finds at run time) and
// accumulates in f32, as the interpreter's kernel does (f32 accumulation,
// one rounding of the result).
//
// 1. The descriptor becomes groups of a batch with uniform strides (batch
//    axes of size 1 dropped, neighbours merged), each matrix's rows and
//    columns given by element strides, transposed operands as they are.
// 2. The work is cut for the worker pool: runs of whole matrices when
//    there are at least as many as threads, else each matrix in blocks of
//    columns (a weight times a few hundred rows: each thread then reads
//    only its part of the weight) or of rows; every piece is one
//    single-threaded primitive call.
// 3. Primitives are made once per shape and layout and kept for the
//    process (a table keyed by both): the first call of a call site pays
//    for oneDNN's kernel generation, later ones look it up.
// 4. oneDNN's fast kernels (brgemm) want each matrix dense, row- or
//    column-major, and the batch dense; a piece whose operands are strided
//    views (the heads of a packed QKV projection) is copied into dense
//    per-thread buffers first when that makes oneDNN pick a faster kernel.
// 5. A constant rhs (one in a global's memory: a weight, passed down to a
//    function or not) is reordered once per run into the blocked layout
//    oneDNN's kernels read (else every call copies it into that layout
//    again: a quarter of a ViT product's time), kept in the run's
//    RuntimeContext.
// 6. f16 (which oneDNN 2.6 cannot multiply on the CPU), and bf16 wherever
//    oneDNN refuses a shape, widen to f32, multiply with dnnl_sgemm and
//    round the result: the interpreter's computation.
// MDL_GEMM_TRACE=1 prints each primitive made, with the kernel oneDNN chose.
#include "backend/jit/Onednn.h"
#include "backend/jit/Runtime.h"
#include "backend/jit/WorkerPool.h"
#include "ir/Half.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mdl::backend::jit {

dnnl::engine &onednnEngine() {
  static dnnl::engine e = [] {
    setenv("DNNL_ITT_TASK_LEVEL", "0", 0);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

dnnl::stream &onednnThreadStream() {
  thread_local dnnl::stream s(onednnEngine());
  return s;
}

namespace {

/// Multiply-adds below which a product stays on one thread: the bf16
/// kernels do about 10x the f32 ones' work per cycle.
constexpr int64_t kHalfParallel = int64_t(1) << 20;
/// Rows below which a matrix is not cut further.
constexpr int64_t kMinRows = 32;
/// Rows below which a product with a weight is cut by columns.
constexpr int64_t kMaxColumnSplitRows = 1024;

/// One operand's matrices: element strides of the batch (0: every batch
/// reads the same matrix), the rows and the columns.
struct Layout {
  int64_t bs = 0, rs = 0, cs = 0;
  bool operator==(const Layout &o) const { return bs == o.bs && rs == o.rs && cs == o.cs; }
};

/// A product of `batch` matrices: C[M, N] = A[M, K] B[K, N].
struct Shape {
  int code = 0, batch = 1;
  int64_t M = 0, N = 0, K = 0;
  Layout a, b, c;
  bool constantB = false;
  bool operator==(const Shape &o) const {
    return code == o.code && batch == o.batch && M == o.M && N == o.N && K == o.K && a == o.a &&
           b == o.b && c == o.c && constantB == o.constantB;
  }
};

struct ShapeHash {
  size_t operator()(const Shape &s) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : {int64_t(s.code), int64_t(s.batch), s.M, s.N, s.K, s.a.bs, s.a.rs, s.a.cs,
                      s.b.bs, s.b.rs, s.b.cs, s.c.bs, s.c.rs, s.c.cs, int64_t(s.constantB)})
      h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h);
  }
};

bool isBf16(int code) { return code == kMatmulBf16 || code == kMatmulBf16F32; }
bool outIsF32(int code) { return code == kMatmulBf16F32 || code == kMatmulF16F32; }
size_t inBytes() { return 2; }
size_t outBytes(int code) { return outIsF32(code) ? 4 : 2; }

/// Dense: each matrix row- or column-major without gaps, batches back to
/// back (or shared).
bool dense(const Layout &l, int64_t rows, int64_t cols) {
  bool rowMajor = l.cs == 1 && (l.rs == cols || rows == 1);
  bool colMajor = l.rs == 1 && (l.cs == rows || cols == 1);
  return (rowMajor || colMajor) && (l.bs == 0 || l.bs == rows * cols);
}

Layout rowMajorLayout(int64_t rows, int64_t cols, bool shared) {
  return {shared ? 0 : rows * cols, cols, 1};
}

/// One operand's descriptor: two-dimensional for a single matrix (oneDNN
/// 2.6's brgemm runs a batch of one 15 to 40% slower than the same
/// two-dimensional product), else with the batch first; a shared operand
/// is one matrix broadcast over the batch.
dnnl::memory::desc memDesc(const Layout &l, int batch, int64_t rows, int64_t cols,
                           dnnl::memory::data_type t) {
  if (batch == 1)
    return dnnl::memory::desc({rows, cols}, t, {l.rs, l.cs});
  return dnnl::memory::desc({l.bs == 0 ? 1 : batch, rows, cols}, t,
                            {l.bs == 0 ? rows * cols : l.bs, l.rs, l.cs});
}

/// The descriptor of an operand whose layout oneDNN chooses.
dnnl::memory::desc anyDesc(bool shared, int batch, int64_t rows, int64_t cols,
                           dnnl::memory::data_type t) {
  if (batch == 1)
    return dnnl::memory::desc({rows, cols}, t, dnnl::memory::format_tag::any);
  return dnnl::memory::desc({shared ? 1 : batch, rows, cols}, t, dnnl::memory::format_tag::any);
}

/// A primitive for one shape, or the reason to take the f32 path instead.
struct Entry {
  bool usable = false;
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, scratch;
  std::string impl;
  /// Set when the operands given are copied into dense buffers first
  /// (then `prim` is made for the dense layouts).
  bool packA = false, packB = false, packC = false;
  /// The rhs is read from its copy in `b`'s (blocked) layout, made once.
  bool blockedB = false;
};

std::mutex tableMutex;
std::unordered_map<Shape, std::unique_ptr<Entry>, ShapeHash> &table() {
  static auto *t = new std::unordered_map<Shape, std::unique_ptr<Entry>, ShapeHash>();
  return *t;
}

bool trace() {
  static const bool on = [] {
    const char *e = std::getenv("MDL_GEMM_TRACE");
    return e && *e && *e != '0';
  }();
  return on;
}

/// Makes the primitive of `s` (with the layouts as given, or the rhs in
/// whatever layout oneDNN prefers when `blockedB`); false when oneDNN has
/// none.
bool makePrimitive(const Shape &s, Entry &e, bool blockedB = false) {
  using dt = dnnl::memory::data_type;
  try {
    e.a = memDesc(s.a, s.batch, s.M, s.K, dt::bf16);
    e.b = blockedB ? anyDesc(s.b.bs == 0, s.batch, s.K, s.N, dt::bf16)
                   : memDesc(s.b, s.batch, s.K, s.N, dt::bf16);
    e.c = memDesc(s.c, s.batch, s.M, s.N, outIsF32(s.code) ? dt::f32 : dt::bf16);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e.a, e.b, e.c), attr, onednnEngine());
    e.impl = pd.impl_info_str();
    e.scratch = pd.scratchpad_desc();
    e.b = pd.weights_desc();
    e.blockedB = blockedB;
    e.prim = dnnl::matmul(pd);
    e.usable = true;
    return true;
  } catch (const dnnl::error &) {
    return false;
  }
}

bool fast(const Entry &e) { return e.usable && e.impl.rfind("brg", 0) == 0; }

/// The way to run `s`, chosen once: oneDNN's fast kernels (brgemm) if some
/// layout gets them, trying in turn the layouts as given, then dense copies
/// of the operands that are strided views; each with a constant rhs in
/// oneDNN's blocked layout first. Else whatever oneDNN offers for the
/// layouts as given, else the f32 path.
const Entry &entryFor(const Shape &s) {
  std::lock_guard<std::mutex> lock(tableMutex);
  std::unique_ptr<Entry> &slot = table()[s];
  if (slot)
    return *slot;
  slot = std::make_unique<Entry>();
  Entry &e = *slot;
  if (!isBf16(s.code))
    return e; // f16: the f32 path
  bool packA = !dense(s.a, s.M, s.K), packB = !dense(s.b, s.K, s.N);
  bool packC = !(s.c.cs == 1 && s.c.rs == s.N && (s.c.bs == s.M * s.N || s.batch == 1));
  for (bool blocked : {true, false}) {
    if (blocked && !s.constantB)
      continue;
    Entry direct;
    if (makePrimitive(s, direct, blocked) && fast(direct)) {
      e = std::move(direct);
      break;
    }
    Shape d = s;
    bool copyB = packB && !blocked;
    if (packA)
      d.a = rowMajorLayout(s.M, s.K, s.a.bs == 0);
    if (copyB)
      d.b = rowMajorLayout(s.K, s.N, s.b.bs == 0);
    if (packC)
      d.c = rowMajorLayout(s.M, s.N, false);
    Entry packed;
    if ((packA || copyB || packC) && makePrimitive(d, packed, blocked) && fast(packed)) {
      packed.packA = packA;
      packed.packB = copyB;
      packed.packC = packC;
      e = std::move(packed);
      break;
    }
  }
  if (!fast(e)) {
    e = Entry();
    makePrimitive(s, e);
  }
  if (trace())
    std::fprintf(stderr,
                 "mdl gemm: %s %d x [%lld x %lld x %lld] a(%lld,%lld,%lld) b(%lld,%lld,%lld) "
                 "c(%lld,%lld,%lld)%s%s%s%s: %s\n",
                 isBf16(s.code) ? "bf16" : "f16", s.batch, (long long)s.M, (long long)s.N,
                 (long long)s.K, (long long)s.a.bs, (long long)s.a.rs, (long long)s.a.cs,
                 (long long)s.b.bs, (long long)s.b.rs, (long long)s.b.cs, (long long)s.c.bs,
                 (long long)s.c.rs, (long long)s.c.cs, e.blockedB ? " blocked-b" : "",
                 e.packA ? " pack-a" : "", e.packB ? " pack-b" : "", e.packC ? " pack-c" : "",
                 e.usable ? e.impl.c_str() : "f32 sgemm");
  return e;
}

/// Per-thread buffers (scratchpads, dense copies, f32 widenings).
struct Buffers {
  std::vector<char> scratch, a, b, c;
  static char *grow(std::vector<char> &v, size_t bytes) {
    if (v.size() < bytes)
      v.resize(bytes);
    return v.data();
  }
};

Buffers &buffers() {
  thread_local Buffers b;
  return b;
}

/// Copies `batch` matrices [rows, cols] of T laid out as `l` into dense
/// row-major ones (or back, when `out`): whole rows when they are
/// contiguous, else along the source's unit-stride axis.
template <typename T>
void repackAs(const char *src, Layout l, char *dst, int batch, int64_t rows, int64_t cols,
              bool out) {
  int nb = l.bs == 0 && !out ? 1 : batch;
  T *d = reinterpret_cast<T *>(dst);
  T *s = reinterpret_cast<T *>(const_cast<char *>(src));
  for (int n = 0; n < nb; ++n) {
    T *strided = s + n * l.bs, *packed = d + int64_t(n) * rows * cols;
    if (l.cs == 1) {
      for (int64_t i = 0; i < rows; ++i) {
        T *a = strided + i * l.rs, *b = packed + i * cols;
        std::memcpy(out ? a : b, out ? b : a, size_t(cols) * sizeof(T));
      }
    } else if (l.rs == 1) {
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i) {
          T &a = strided[i + j * l.cs], &b = packed[i * cols + j];
          out ? a = b : b = a;
        }
    } else {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          T &a = strided[i * l.rs + j * l.cs], &b = packed[i * cols + j];
          out ? a = b : b = a;
        }
    }
  }
}

void repack(const char *src, Layout l, char *dst, int batch, int64_t rows, int64_t cols,
            size_t bytes, bool out) {
  if (bytes == 4)
    repackAs<uint32_t>(src, l, dst, batch, rows, cols, out);
  else
    repackAs<uint16_t>(src, l, dst, batch, rows, cols, out);
}

} // namespace

/// Constant rhs operands reordered into a primitive's weights layout, by
/// address, source layout and target layout: one per weight, per way it is
/// read (a square weight may be read plain and transposed) and per layout
/// oneDNN asks for.
struct PackedOperands {
  struct Item {
    dnnl::memory::desc from, layout;
    dnnl::memory mem;
  };
  std::mutex m;
  std::unordered_map<const void *, std::vector<Item>> items;
};

std::shared_ptr<PackedOperands> makePackedOperands() { return std::make_shared<PackedOperands>(); }

namespace {

/// The blocked copy of the constant rhs at `b` (laid out as `from`) in
/// layout `to`, made on first use.
const void *blockedRhs(RuntimeContext *ctx, const char *b, const dnnl::memory::desc &from,
                       const dnnl::memory::desc &to) {
  if (!ctx->packed)
    return nullptr;
  PackedOperands &p = *ctx->packed;
  std::lock_guard<std::mutex> lock(p.m);
  std::vector<PackedOperands::Item> &v = p.items[b];
  for (const PackedOperands::Item &it : v)
    if (it.from == from && it.layout == to)
      return it.mem.get_data_handle();
  try {
    dnnl::memory src(from, onednnEngine(), const_cast<char *>(b)), dst(to, onednnEngine());
    dnnl::stream &st = onednnThreadStream();
    dnnl::reorder(src, dst).execute(st, src, dst);
    st.wait();
    v.push_back({from, to, dst});
    return dst.get_data_handle();
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

float widen(int code, uint16_t h) { return isBf16(code) ? ir::bf16ToFloat(h) : ir::halfToFloat(h); }

/// The interpreter's computation: operands widened to f32, one sgemm per
/// matrix, the result rounded (or kept, for an f32 result).
void f32Path(const Shape &s, const char *a, const char *b, char *c) {
  Buffers &buf = buffers();
  float *fa = reinterpret_cast<float *>(Buffers::grow(buf.a, size_t(s.M * s.K) * 4));
  float *fb = reinterpret_cast<float *>(Buffers::grow(buf.b, size_t(s.K * s.N) * 4));
  float *fc = reinterpret_cast<float *>(Buffers::grow(buf.c, size_t(s.M * s.N) * 4));
  auto at = [](const char *p, int64_t i) {
    uint16_t h;
    std::memcpy(&h, p + i * 2, 2);
    return h;
  };
  for (int n = 0; n < s.batch; ++n) {
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t k = 0; k < s.K; ++k)
        fa[i * s.K + k] = widen(s.code, at(a, n * s.a.bs + i * s.a.rs + k * s.a.cs));
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t j = 0; j < s.N; ++j)
        fb[k * s.N + j] = widen(s.code, at(b, n * s.b.bs + k * s.b.rs + j * s.b.cs));
    dnnl_sgemm('N', 'N', s.M, s.N, s.K, 1.f, fa, s.K, fb, s.N, 0.f, fc, s.N);
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t j = 0; j < s.N; ++j) {
        float v = fc[i * s.N + j];
        int64_t o = n * s.c.bs + i * s.c.rs + j * s.c.cs;
        if (outIsF32(s.code)) {
          std::memcpy(c + o * 4, &v, 4);
        } else {
          uint16_t h = isBf16(s.code) ? ir::floatToBf16(v) : ir::floatToHalf(v);
          std::memcpy(c + o * 2, &h, 2);
        }
      }
  }
}

/// One piece of work: `s` on these pointers, on the calling thread.
void runPiece(RuntimeContext *ctx, const Shape &s, const char *a, const char *b, char *c) {
  const Entry &e = entryFor(s);
  const char *given = b;
  if (e.usable && e.blockedB) {
    const void *blocked =
        blockedRhs(ctx, b, memDesc(s.b, s.batch, s.K, s.N, dnnl::memory::data_type::bf16), e.b);
    if (!blocked) {
      // No context to keep it in: a product with the rhs as it is.
      Shape plain = s;
      plain.constantB = false;
      runPiece(ctx, plain, a, b, c);
      return;
    }
    b = static_cast<const char *>(blocked);
  }
  if (!e.usable) {
    f32Path(s, a, b, c);
    return;
  }
  Buffers &buf = buffers();
  int nbA = s.a.bs == 0 ? 1 : s.batch, nbB = s.b.bs == 0 ? 1 : s.batch;
  const char *pa = a, *pb = b;
  char *pc = c;
  if (e.packA) {
    char *d = Buffers::grow(buf.a, size_t(nbA * s.M * s.K) * inBytes());
    repack(a, s.a, d, nbA, s.M, s.K, inBytes(), false);
    pa = d;
  }
  if (e.packB && !e.blockedB) {
    char *d = Buffers::grow(buf.b, size_t(nbB * s.K * s.N) * inBytes());
    repack(b, s.b, d, nbB, s.K, s.N, inBytes(), false);
    pb = d;
  }
  if (e.packC)
    pc = Buffers::grow(buf.c, size_t(s.batch * s.M * s.N) * outBytes(s.code));
  try {
    dnnl::engine &eng = onednnEngine();
    dnnl::memory ma(e.a, eng, const_cast<char *>(pa)), mb(e.b, eng, const_cast<char *>(pb)),
        mc(e.c, eng, pc),
        ms(e.scratch, eng, Buffers::grow(buf.scratch, std::max<size_t>(e.scratch.get_size(), 1)));
    e.prim.execute(
        onednnThreadStream(),
        {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}});
  } catch (const dnnl::error &) {
    // Nothing may escape into generated code: the interpreter's way.
    f32Path(s, a, given, c);
    return;
  }
  if (e.packC)
    repack(c, s.c, pc, s.batch, s.M, s.N, outBytes(s.code), true);
}

/// A run of matrices with uniform strides: `count` of them from these
/// element offsets.
struct Group {
  int64_t count, a, b, c;
};

/// The product cut into pieces for the pool.
struct Job {
  RuntimeContext *ctx;
  Shape base; // batch 1; layouts with the uniform batch strides
  std::vector<Group> groups;
  const char *a, *b;
  char *c;
  // Pieces: matrices [first, last) of the groups taken in order (whole
  // matrices), or, when `split` > 1, matrix `t / split`'s block `t % split`
  // of rows (or of columns, in multiples of 64, when `byColumns`).
  int64_t total = 0, parts = 1, split = 1;
  bool byColumns = false;
};

void runRange(const Job &j, int64_t first, int64_t last) {
  size_t ob = outBytes(j.base.code);
  int64_t start = 0;
  for (const Group &g : j.groups) {
    int64_t lo = std::max(first, start), hi = std::min(last, start + g.count);
    if (lo < hi) {
      Shape s = j.base;
      s.batch = int(hi - lo);
      int64_t n = lo - start;
      runPiece(j.ctx, s, j.a + (g.a + n * s.a.bs) * int64_t(inBytes()),
               j.b + (g.b + n * s.b.bs) * int64_t(inBytes()),
               j.c + (g.c + n * s.c.bs) * int64_t(ob));
    }
    start += g.count;
  }
}

void piece(void *p, int64_t t) {
  const Job &j = *static_cast<const Job *>(p);
  if (j.split <= 1) {
    runRange(j, j.total * t / j.parts, j.total * (t + 1) / j.parts);
    return;
  }
  int64_t m = t / j.split, r = t % j.split;
  // Matrix m: find its group.
  int64_t start = 0;
  for (const Group &g : j.groups) {
    if (m < start + g.count) {
      Shape s = j.base;
      int64_t n = m - start;
      int64_t len = j.byColumns ? s.N : s.M, align = j.byColumns ? 64 : 1;
      auto cut = [&](int64_t k) {
        return k == j.split ? len : std::min(len, (len * k / j.split + align - 1) / align * align);
      };
      int64_t lo = cut(r), hi = cut(r + 1);
      if (hi <= lo)
        return;
      const char *a = j.a + (g.a + n * s.a.bs) * int64_t(inBytes());
      const char *b = j.b + (g.b + n * s.b.bs) * int64_t(inBytes());
      char *c = j.c + (g.c + n * s.c.bs) * int64_t(outBytes(s.code));
      if (j.byColumns) {
        s.N = hi - lo;
        b += lo * s.b.cs * int64_t(inBytes());
        c += lo * s.c.cs * int64_t(outBytes(s.code));
      } else {
        s.M = hi - lo;
        a += lo * s.a.rs * int64_t(inBytes());
        c += lo * s.c.rs * int64_t(outBytes(s.code));
      }
      runPiece(j.ctx, s, a, b, c);
      return;
    }
    start += g.count;
  }
}

} // namespace

void halfMatmul(RuntimeContext *ctx, const int64_t *d, const void *a, const void *b, void *c) {
  int64_t rank = d[1];
  bool ta = d[2], tb = d[3];
  Job j;
  j.ctx = ctx;
  Shape &s = j.base;
  s.code = int(d[0]);
  s.constantB = ctx && ctx->packed && ctx->inGlobal(b);
  s.M = d[4], s.N = d[5], s.K = d[6];
  int64_t lda = d[7], ldb = d[8], ldc = d[9];
  s.a = ta ? Layout{0, 1, lda} : Layout{0, lda, 1};
  s.b = tb ? Layout{0, 1, ldb} : Layout{0, ldb, 1};
  s.c = Layout{0, ldc, 1};
  j.a = static_cast<const char *>(a);
  j.b = static_cast<const char *>(b);
  j.c = static_cast<char *>(c);
  const int64_t *batch = d + 10, *as = batch + rank, *bs = as + rank, *cs = bs + rank;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= batch[i];
  if (count == 0 || s.M == 0 || s.N == 0)
    return;
  if (s.K == 0) {
    // An empty contraction: zeros (in either output type, all bits 0).
    size_t ob = outBytes(s.code);
    std::vector<int64_t> idx(size_t(rank), 0);
    for (int64_t n = 0; n < count; ++n) {
      int64_t off = 0;
      for (int64_t i = 0; i < rank; ++i)
        off += idx[size_t(i)] * cs[i];
      for (int64_t i = 0; i < s.M; ++i)
        std::memset(j.c + (off + i * ldc) * int64_t(ob), 0, size_t(s.N) * ob);
      for (int64_t i = rank; i-- > 0;) {
        if (++idx[size_t(i)] < batch[i])
          break;
        idx[size_t(i)] = 0;
      }
    }
    return;
  }
  // Batch axes of size 1 dropped, neighbours with compatible strides
  // merged; the innermost run gives the uniform strides.
  struct Axis {
    int64_t n, a, b, c;
  };
  std::vector<Axis> axes;
  for (int64_t i = 0; i < rank; ++i) {
    if (batch[i] == 1)
      continue;
    Axis x{batch[i], as[i], bs[i], cs[i]};
    if (!axes.empty()) {
      Axis &p = axes.back();
      if (p.a == x.a * x.n && p.b == x.b * x.n && p.c == x.c * x.n) {
        p = {p.n * x.n, x.a, x.b, x.c};
        continue;
      }
    }
    axes.push_back(x);
  }
  Axis inner = axes.empty() ? Axis{1, 0, 0, 0} : axes.back();
  s.a.bs = inner.a, s.b.bs = inner.b, s.c.bs = inner.c;
  int64_t outer = count / inner.n;
  std::vector<int64_t> idx(axes.empty() ? 0 : axes.size() - 1, 0);
  for (int64_t g = 0; g < outer; ++g) {
    Group grp{inner.n, 0, 0, 0};
    for (size_t i = 0; i < idx.size(); ++i) {
      grp.a += idx[i] * axes[i].a;
      grp.b += idx[i] * axes[i].b;
      grp.c += idx[i] * axes[i].c;
    }
    j.groups.push_back(grp);
    for (size_t i = idx.size(); i-- > 0;) {
      if (++idx[i] < axes[i].n)
        break;
      idx[i] = 0;
    }
  }
  j.total = count;
  WorkerPool &pool = WorkerPool::get();
  int threads = pool.size();
  if (count * s.M * s.N * s.K >= kHalfParallel && threads > 1) {
    int64_t each = std::max<int64_t>(threads / count, 1);
    if (count >= threads) {
      j.parts = std::min<int64_t>(count, threads);
    } else if (s.constantB && s.M < kMaxColumnSplitRows && s.N >= 2 * 64 * each) {
      // A weight times few rows (a ViT's 197 tokens): each thread reads its
      // own columns of the weight instead of all of it, and brgemm's row
      // blocks stay whole.
      j.split = std::min<int64_t>(each, s.N / 64);
      j.byColumns = true;
      j.parts = count * j.split;
    } else if (s.M >= 2 * kMinRows) {
      j.split = std::max<int64_t>(std::min<int64_t>(each, s.M / kMinRows), 1);
      j.parts = count * j.split;
    }
  }
  pool.run(j.parts, piece, &j, WorkerPool::Schedule::Static);
}

} // namespace mdl::backend::jit
