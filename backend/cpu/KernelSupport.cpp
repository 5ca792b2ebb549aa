// Shape arithmetic and element copies shared by the CPU kernels.
#include "backend/cpu/KernelSupport.h"

#include <cstring>

namespace mdl::backend::cpu {

std::vector<int64_t> shapeOf(const ir::TensorType &t) {
  std::vector<int64_t> s;
  s.reserve(t.dims.size());
  for (const ir::Dim &d : t.dims)
    s.push_back(d.size);
  return s;
}

std::vector<int64_t> shapeOf(const Tensor &t) { return shapeOf(t.type()); }

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> own = rowMajorStrides(in);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    s[lead + d] = in[d] == 1 ? 0 : own[d];
  return s;
}

int64_t product(const std::vector<int64_t> &v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < v.size() && i < to; ++i)
    p *= v[i];
  return p;
}

namespace {

// A copy whose innermost dimension reads with a stride (a transpose): walk
// tiles of that dimension and of a dimension the source reads contiguously,
// one cache line wide, through a small buffer, so that reads and writes both
// move whole cache lines (rows a power of two apart would otherwise all
// fall into one cache set and evict each other).
template <typename U>
void tiledCopy(const StridedLoop<2> &loop, int k, U *dst, const U *src) {
  constexpr int64_t kTile = 64 / sizeof(U) < 8 ? 8 : 64 / sizeof(U);
  int r = int(loop.shape.size());
  int64_t K = loop.shape[k], L = loop.shape[r - 1];
  int64_t dK = loop.strides[k][0], sK = loop.strides[k][1];
  int64_t dL = loop.strides[r - 1][0], sL = loop.strides[r - 1][1];
  std::vector<int64_t> oShape;
  std::vector<std::array<int64_t, 2>> oStr;
  for (int d = 0; d < r - 1; ++d)
    if (d != k) {
      oShape.push_back(loop.shape[d]);
      oStr.push_back(loop.strides[d]);
    }
  int64_t outer = product(oShape), blocks = (L + kTile - 1) / kTile;
  bool big = loop.total >= kParallelCheap && !omp_in_parallel();
#pragma omp parallel for if (big) schedule(static)
  for (int64_t w = 0; w < outer * blocks; ++w) {
    int64_t o = w / blocks, l0 = w % blocks * kTile,
            ln = std::min(L - l0, kTile);
    int64_t od = loop.base[0], os = loop.base[1];
    for (size_t d = oShape.size(); d-- > 0;) {
      int64_t i = o % oShape[d];
      o /= oShape[d];
      od += i * oStr[d][0];
      os += i * oStr[d][1];
    }
    U buf[kTile][kTile];
    for (int64_t k0 = 0; k0 < K; k0 += kTile) {
      int64_t kn = std::min(K - k0, kTile);
      for (int64_t l = 0; l < ln; ++l) {
        const U *sp = src + os + (l0 + l) * sL + k0 * sK;
        for (int64_t kk = 0; kk < kn; ++kk)
          buf[kk][l] = sp[kk * sK];
      }
      for (int64_t kk = 0; kk < kn; ++kk) {
        U *dp = dst + od + (k0 + kk) * dK + l0 * dL;
        for (int64_t l = 0; l < ln; ++l)
          dp[l * dL] = buf[kk][l];
      }
    }
  }
}

} // namespace

void stridedCopy(size_t bytes, const std::vector<int64_t> &dims, void *dst,
                 const std::vector<int64_t> &dstStrides, int64_t dstBase,
                 const void *src, const std::vector<int64_t> &srcStrides,
                 int64_t srcBase) {
  StridedLoop<2> loop(dims, {dstStrides, srcStrides}, {dstBase, srcBase});
  int r = int(loop.shape.size());
  int tileDim = -1;
  if (r >= 2 && loop.total >= 4096 && std::abs(loop.strides[r - 1][1]) != 1)
    for (int d = 0; d < r - 1; ++d)
      if (loop.strides[d][1] == 1)
        tileDim = d;
  visitBits(bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    U *d = static_cast<U *>(dst);
    const U *s = static_cast<const U *>(src);
    if (tileDim >= 0) {
      tiledCopy(loop, tileDim, d, s);
      return;
    }
    loop.run(kParallelCheap, [&](std::array<int64_t, 2> off,
                                 std::array<int64_t, 2> st, int64_t n) {
      U *o = d + off[0];
      const U *i = s + off[1];
      if (st[0] == 1 && st[1] == 1)
        std::memcpy(o, i, size_t(n) * sizeof(U));
      else
        for (int64_t j = 0; j < n; ++j)
          o[j * st[0]] = i[j * st[1]];
    });
  });
}

void copyBytes(void *dst, const void *src, size_t bytes) {
  if (dst == src || bytes == 0)
    return;
  constexpr size_t kChunk = size_t(1) << 20;
  if (bytes < 4 * kChunk || omp_in_parallel()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  int64_t chunks = int64_t((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    size_t at = size_t(c) * kChunk;
    std::memcpy(static_cast<char *>(dst) + at,
                static_cast<const char *>(src) + at,
                std::min(kChunk, bytes - at));
  }
}

} // namespace mdl::backend::cpu
