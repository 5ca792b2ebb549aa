// Creation kernels: zeros, ones, full, arange and the counter-based random
// tensors.
//
// random_normal / random_uniform element i depends only on (seed, i), so
// every thread, device and backend produces the same tensor for a seed (the
// formula is in Kernels.h). Values are computed in double and rounded once
// to the result's dtype.
#include "backend/cpu/KernelSupport.h"
#include "stdlib/OpAttrs.h"
#include "stdlib/Registry.h"

#include <cstring>

namespace mdl::backend::cpu {

using ir::OpKind;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double randomUnit(uint64_t seed, uint64_t i) {
  return double(splitmix64(seed * 0x9E3779B97F4A7C15ull + i) >> 11) * 0x1.0p-53;
}

namespace {

constexpr double kPi = 3.141592653589793;

template <typename F> Status fillRandom(Tensor &y, F valueAt) {
  return visitDType(y.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return std::string("random tensors must be floating-point, not ") +
             ir::dtypeName(y.dtype());
    } else {
      T *p = y.data<T>();
      int64_t n = y.numElements();
#pragma omp parallel for if (n >= kParallelCostly && !omp_in_parallel())       \
    schedule(static)
      for (int64_t i = 0; i < n; ++i)
        p[i] = Elem<T>::store(ComputeT<T>(valueAt(uint64_t(i))));
      return std::nullopt;
    }
  });
}

} // namespace

void registerCreationKernels(KernelTable &t) {
  t.add(OpKind::Zeros, MDL_KERNEL {
    std::memset(out[0].raw(), 0, out[0].byteSize());
    return std::nullopt;
  });
  t.add(OpKind::Ones, MDL_KERNEL {
    fillInt(out[0].dtype(), out[0].raw(), out[0].numElements(), 1);
    return std::nullopt;
  });
  t.add(OpKind::Full,
        MDL_KERNEL {
          Tensor &y = out[0];
          int64_t n = y.numElements();
          const ir::Attribute *v = op.attr("value");
          if (v && v->kind() == ir::Attribute::Kind::Int)
            fillInt(y.dtype(), y.raw(), n, v->asInt());
          else
            fillValue(y.dtype(), y.raw(), n, op.floatAttr("value", 0));
          return std::nullopt;
        });
  t.add(OpKind::Arange,
        MDL_KERNEL {
          Tensor &y = out[0];
          int64_t n = y.numElements();
          if (y.dtype() == ir::DType::I64) {
            int64_t *p = y.data<int64_t>();
            for (int64_t i = 0; i < n; ++i)
              p[i] = i;
          } else {
            for (int64_t i = 0; i < n; ++i)
              y.setInt(i, i);
          }
          return std::nullopt;
        });
  t.add(OpKind::RandomUniform,
        MDL_KERNEL {
          auto a = stdlib::attrs::RandomUniform::of(op);
          uint64_t seed = uint64_t(a.seed);
          double lo = a.lo, hi = a.hi;
          return fillRandom(out[0], [=](uint64_t i) {
            return lo + (hi - lo) * randomUnit(seed, i);
          });
        });
  t.add(OpKind::RandomNormal,
        MDL_KERNEL {
          auto a = stdlib::attrs::RandomNormal::of(op);
          uint64_t seed = uint64_t(a.seed);
          double mean = a.mean, std = a.std;
          return fillRandom(out[0], [=](uint64_t i) {
            double r = std::sqrt(-2 * std::log(1 - randomUnit(seed, 2 * i)));
            return mean +
                   std * r * std::cos(2 * kPi * randomUnit(seed, 2 * i + 1));
          });
        });
}

} // namespace mdl::backend::cpu
