// The GPU math library (backend/hip/codegen/GpuMath.cpp) compiled for the
// host with ORC and measured against glibc over many points: the largest
// error in units in the last place (ulp) of each function, float and
// double, must stay within the bounds docs/gpu-codegen.md states, and the
// special values (infinities, NaN, zeros, C99's pow cases) must match
// exactly. The measured maxima are printed (docs/gpu-codegen.md quotes
// them).
#include "backend/hip/codegen/GpuMath.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Support/TargetSelect.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>

namespace {

using namespace mdl::backend::hip;

/// The library's functions, compiled for the host once.
class MathLibrary {
public:
  MathLibrary() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = std::make_unique<llvm::Module>("math", *ctx);
    llvm::Type *f32 = llvm::Type::getFloatTy(*ctx), *f64 = llvm::Type::getDoubleTy(*ctx);
    for (const std::string &name : gpuMathFunctions()) {
      bool isFloat = name.size() > 3 && name.back() == 'f'; // expf, erff (not erf)
      llvm::Type *t = isFloat ? f32 : f64;
      unsigned arity = name.rfind("pow", 0) == 0 ? 2 : 1;
      m->getOrInsertFunction(
          name, llvm::FunctionType::get(t, std::vector<llvm::Type *>(arity, t), false));
    }
    std::string error;
    if (!defineGpuMath(*m, error, llvm::GlobalValue::ExternalLinkage)) {
      problem = error;
      return;
    }
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit) {
      problem = llvm::toString(jit.takeError());
      return;
    }
    jit_ = std::move(*jit);
    m->setDataLayout(jit_->getDataLayout());
    if (auto e = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx)))) {
      problem = llvm::toString(std::move(e));
      return;
    }
    for (const std::string &name : gpuMathFunctions()) {
      auto sym = jit_->lookup("mdl.math." + name);
      if (!sym) {
        problem = llvm::toString(sym.takeError());
        return;
      }
      addr_[name] = sym->getValue();
    }
  }
  template <typename F> F *get(const std::string &name) {
    return reinterpret_cast<F *>(addr_.at(name));
  }
  std::string problem;

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::map<std::string, uint64_t> addr_;
};

MathLibrary &lib() {
  static MathLibrary l;
  return l;
}

// The distance from `got` to the exact value `want` in ulps of `want`'s type.
template <typename T> double ulps(T got, long double want) {
  if (std::isnan(got) && std::isnan(want))
    return 0;
  if (std::isinf(want) || std::isinf(got))
    return (T(want) == got) ? 0 : std::numeric_limits<double>::infinity();
  T w = T(want);
  T ulp = std::nextafter(std::fabs(w), std::numeric_limits<T>::infinity()) - std::fabs(w);
  if (ulp == 0 || !std::isfinite(ulp))
    ulp = std::numeric_limits<T>::denorm_min();
  return double(std::fabs((long double)got - want) / (long double)ulp);
}

struct Case {
  const char *name;
  std::function<long double(long double)> ref;
  double lo, hi;
  double maxUlpF32, maxUlpF64;
};

double measure1(const std::string &name, const std::function<long double(long double)> &ref,
                double lo, double hi, bool isFloat) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(lo, hi);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    double x = u(rng);
    if (isFloat) {
      float xf = float(x);
      float got = lib().get<float(float)>(name + "f")(xf);
      worst = std::max(worst, ulps<float>(got, ref((long double)xf)));
    } else {
      double got = lib().get<double(double)>(name)(x);
      worst = std::max(worst, ulps<double>(got, ref((long double)x)));
    }
  }
  return worst;
}

TEST(GpuMath, WithinBoundsOfTheCLibrary) {
  ASSERT_EQ(lib().problem, "");
  // f32 bounds: the double implementations rounded once; f64 bounds as
  // measured, with a margin (docs/gpu-codegen.md).
  const Case cases[] = {
      {"exp", [](long double x) { return std::exp(x); }, -700, 700, 1, 2},
      {"log", [](long double x) { return std::log(x); }, 1e-300, 1e300, 1, 2},
      {"log", [](long double x) { return std::log(x); }, 0.5, 2.0, 1, 2},
      {"sin", [](long double x) { return std::sin(x); }, -1000, 1000, 1, 2},
      {"cos", [](long double x) { return std::cos(x); }, -1000, 1000, 1, 2},
      {"erf", [](long double x) { return std::erf(x); }, -7, 7, 1, 16},
      {"tanh", [](long double x) { return std::tanh(x); }, -25, 25, 1, 4},
      {"tanh", [](long double x) { return std::tanh(x); }, -0.01, 0.01, 1, 4},
  };
  for (const Case &c : cases) {
    double lo = c.lo, hi = c.hi;
    // Floats overflow exp beyond 88.7 and log's range is narrower.
    double flo = std::string(c.name) == "exp"   ? -100
                 : c.name == std::string("log") ? std::max(lo, 1e-38)
                                                : lo;
    double fhi = std::string(c.name) == "exp"   ? 88
                 : c.name == std::string("log") ? std::min(hi, 1e38)
                                                : hi;
    double f = measure1(c.name, c.ref, flo, fhi, true);
    double d = measure1(c.name, c.ref, lo, hi, false);
    std::printf("%-5s [%g, %g]: f32 %.2f ulp, f64 %.2f ulp\n", c.name, lo, hi, f, d);
    EXPECT_LE(f, c.maxUlpF32) << c.name;
    EXPECT_LE(d, c.maxUlpF64) << c.name;
  }
}

TEST(GpuMath, PowWithinBoundsAndItsSpecialCases) {
  ASSERT_EQ(lib().problem, "");
  auto powf_ = lib().get<float(float, float)>("powf");
  auto pow_ = lib().get<double(double, double)>("pow");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> ux(0.01, 100), uy(-20, 20);
  double wf = 0, wd = 0;
  for (int i = 0; i < 200000; ++i) {
    double x = ux(rng), y = uy(rng);
    float xf = float(x), yf = float(y);
    wf = std::max(wf, ulps<float>(powf_(xf, yf), std::pow((long double)xf, (long double)yf)));
    wd = std::max(wd, ulps<double>(pow_(x, y), std::pow((long double)x, (long double)y)));
  }
  std::printf("pow   x in [0.01, 100], y in [-20, 20]: f32 %.2f ulp, f64 %.2f ulp\n", wf, wd);
  EXPECT_LE(wf, 1);
  EXPECT_LE(wd, 4);
  const double inf = INFINITY, nan = NAN;
  const double specials[] = {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, inf, -inf, nan};
  for (double x : specials)
    for (double y : specials) {
      // Zeros, infinities, NaN and exact powers exactly; others within ulps.
      double want = std::pow(x, y), got = pow_(x, y);
      bool exact = std::isnan(want) || std::isinf(want) || want == 0 || want == std::rint(want);
      if (exact)
        EXPECT_TRUE((std::isnan(want) && std::isnan(got)) ||
                    (want == got && std::signbit(want) == std::signbit(got)))
            << "pow(" << x << ", " << y << ") = " << got << ", expected " << want;
      else
        EXPECT_LE(ulps<double>(got, std::pow((long double)x, (long double)y)), 4)
            << "pow(" << x << ", " << y << ") = " << got << ", expected " << want;
    }
}

TEST(GpuMath, SpecialValues) {
  ASSERT_EQ(lib().problem, "");
  const double inf = INFINITY;
  struct S {
    const char *fn;
    double x;
  } cases[] = {{"exp", inf}, {"exp", -inf}, {"exp", 710},   {"exp", -746},  {"exp", 0},
               {"log", 0},   {"log", -1},   {"log", inf},   {"log", 1},     {"log", 4e-320},
               {"sin", inf}, {"cos", -inf}, {"sin", 0},     {"erf", inf},   {"erf", -inf},
               {"erf", 0},   {"tanh", inf}, {"tanh", -inf}, {"tanh", -0.0}, {"exp", NAN},
               {"log", NAN}, {"sin", NAN},  {"erf", NAN},   {"tanh", NAN}};
  std::map<std::string, double (*)(double)> libm = {{"exp", [](double x) { return std::exp(x); }},
                                                    {"log", [](double x) { return std::log(x); }},
                                                    {"sin", [](double x) { return std::sin(x); }},
                                                    {"cos", [](double x) { return std::cos(x); }},
                                                    {"erf", [](double x) { return std::erf(x); }},
                                                    {"tanh", [](double x) { return std::tanh(x); }}};
  for (const S &c : cases) {
    double want = libm.at(c.fn)(c.x), got = lib().get<double(double)>(c.fn)(c.x);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << c.fn << "(" << c.x << ") = " << got;
    else if (std::isinf(want) || want == 0)
      EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want))
          << c.fn << "(" << c.x << ") = " << got << ", expected " << want;
    else
      EXPECT_NEAR(got, want, std::fabs(want) * 1e-15 + 1e-320) << c.fn << "(" << c.x << ")";
  }
  // The same in f32 (expf, logf, ...): overflow, underflow and log(0) come
  // at other arguments, and 4e-320 is 0 in f32.
  std::map<std::string, float (*)(float)> libmf = {
      {"exp", [](float x) { return std::exp(x); }}, {"log", [](float x) { return std::log(x); }},
      {"sin", [](float x) { return std::sin(x); }}, {"cos", [](float x) { return std::cos(x); }},
      {"erf", [](float x) { return std::erf(x); }}, {"tanh", [](float x) { return std::tanh(x); }}};
  for (const S &c : cases) {
    float x = float(c.x);
    float want = libmf.at(c.fn)(x), got = lib().get<float(float)>(std::string(c.fn) + "f")(x);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << c.fn << "f(" << x << ") = " << got;
    else if (std::isinf(want) || want == 0)
      EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want))
          << c.fn << "f(" << x << ") = " << got << ", expected " << want;
    else
      EXPECT_NEAR(got, want, std::fabs(want) * 2e-7f + 1e-38f) << c.fn << "f(" << x << ")";
  }
}

} // namespace
