// Printing tensors the way NumPy prints arrays.
//
//   [[ 1.   2.5 ]        floats: shortest digits that read back as the same
//    [-3.   4.  ]]       value of the tensor's dtype (at most 8 decimals),
//                        integral values as `1.`; like NumPy, the integer
//                        parts are right-aligned and the fractions
//                        left-aligned, and the whole tensor switches to
//                        scientific notation when its magnitudes are below
//                        1e-4, reach 1e8, or span more than 1e3.
// Ints and bools (True / False) are right-aligned to one width per tensor. A rank-3 tensor puts a
// blank line between its matrices. Beyond `threshold` elements every
// dimension longer than 6 shows its first and last 3 entries around `...`.
// `mdl run` prints results with this, so golden tests depend on it: change
// it only together with them.
#include "backend/runtime/Tensor.h"

#include "ir/Half.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace mdl::backend {

using ir::DType;

namespace {

constexpr int64_t kEdgeItems = 3;

// True when `text` reads back as exactly `v` in dtype `t`.
bool readsBack(const std::string &text, double v, DType t) {
  double r = std::strtod(text.c_str(), nullptr);
  switch (t) {
  case DType::F16:
    return ir::floatToHalf(float(r)) == ir::floatToHalf(float(v));
  case DType::BF16:
    return ir::floatToBf16(float(r)) == ir::floatToBf16(float(v));
  case DType::F32:
    return float(r) == float(v);
  default:
    return r == v;
  }
}

std::string formatFloatElement(double v, DType t, bool sci, int fixedPrec = -1) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  auto fmt = sci ? std::chars_format::scientific : std::chars_format::fixed;
  char buf[400];
  std::string s;
  for (int p = fixedPrec < 0 ? 0 : fixedPrec; p <= 8; ++p) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, fmt, p);
    if (fixedPrec >= 0) {
      s.assign(buf, r.ptr);
      break;
    }
    s.assign(buf, r.ptr);
    if (readsBack(s, v, t))
      break;
  }
  if (sci) {
    return s;
  }
  // Eight decimals did not suffice: drop the zeros the rounding left.
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0')
      s.pop_back();
  } else {
    s += '.';
  }
  return s;
}

std::string formatElement(const Tensor &t, int64_t i, bool sci, int prec = -1) {
  DType d = t.dtype();
  if (d == DType::Bool)
    return t.getInt(i) ? "True" : "False";
  if (ir::isInteger(d))
    return std::to_string(t.getInt(i));
  return formatFloatElement(t.getDouble(i), d, sci, prec);
}

class Printer {
public:
  Printer(const Tensor &t, bool summarize)
      : t_(t), shape_(t.type().sizes()), summarize_(summarize),
        strides_(shape_.size(), 1) {
    for (int d = int(shape_.size()) - 2; d >= 0; --d)
      strides_[d] = strides_[d + 1] * shape_[d + 1];
  }

  std::string run() {
    isFloat_ = ir::isFloat(t_.dtype());
    if (shape_.empty()) {
      // A scalar prints like a NumPy scalar: 2.5, 1e-05, 2.5e+20.
      double a = std::fabs(t_.getDouble(0));
      return formatElement(t_, 0, isFloat_ && a != 0 && (a < 1e-4 || a >= 1e16));
    }
    if (isFloat_) {
      scan(0, 0);
      sci_ = maxAbs_ >= 1e8 || (minAbs_ > 0 && (minAbs_ < 1e-4 || maxAbs_ / minAbs_ > 1e3));
    }
    measure(0, 0);
    std::string out;
    emit(0, 0, out);
    return out;
  }

private:
  // The indices of dimension d that are printed; -1 marks the ellipsis.
  std::vector<int64_t> visible(int d) const {
    std::vector<int64_t> v;
    int64_t n = shape_[d];
    if (summarize_ && n > 2 * kEdgeItems) {
      for (int64_t k = 0; k < kEdgeItems; ++k)
        v.push_back(k);
      v.push_back(-1);
      for (int64_t k = n - kEdgeItems; k < n; ++k)
        v.push_back(k);
    } else {
      for (int64_t k = 0; k < n; ++k)
        v.push_back(k);
    }
    return v;
  }

  // Magnitudes of the finite visible elements (NumPy's choice of notation).
  void scan(int d, int64_t base) {
    for (int64_t k : visible(d)) {
      if (k < 0)
        continue;
      int64_t at = base + k * strides_[d];
      if (d + 1 < int(shape_.size())) {
        scan(d + 1, at);
        continue;
      }
      double v = t_.getDouble(at);
      negative_ |= v < 0;
      double a = std::fabs(v);
      if (std::isfinite(a) && a != 0) {
        maxAbs_ = std::max(maxAbs_, a);
        minAbs_ = minAbs_ == 0 ? a : std::min(minAbs_, a);
      }
    }
  }

  void measure(int d, int64_t base) {
    for (int64_t k : visible(d)) {
      if (k < 0)
        continue;
      int64_t at = base + k * strides_[d];
      if (d + 1 < int(shape_.size())) {
        measure(d + 1, at);
        continue;
      }
      std::string s = formatElement(t_, at, sci_);
      if (isFloat_ && sci_) {
        // Scientific notation uses one precision for the whole tensor.
        size_t dot = s.find('.'), e = s.find('e');
        if (e != std::string::npos)
          sciPrec_ = std::max(sciPrec_, dot == std::string::npos ? 0 : int(e - dot - 1));
      }
      width_ = std::max(width_, s.size());
      size_t dot = s.find('.');
      if (isFloat_ && !sci_ && dot != std::string::npos) {
        padLeft_ = std::max(padLeft_, dot);
        padRight_ = std::max(padRight_, s.size() - dot - 1);
      }
    }
    if (isFloat_ && !sci_)
      width_ = std::max(width_, padLeft_ + 1 + padRight_);
  }

  // Left padding of a scientific element (nan/inf and signs line up).
  size_t sciWidth(const std::string &s) const {
    size_t w = size_t(sciPrec_) + 6 + (maxAbs_ >= 1e100 || (minAbs_ > 0 && minAbs_ < 1e-99));
    bool anyNeg = negative_;
    w += anyNeg;
    return s.size() < w ? w - s.size() : 0;
  }

  // Aligns one element: floats on their decimal point, the rest right.
  std::string align(std::string s) const {
    if (isFloat_ && sci_) {
      size_t e = s.find('e');
      if (e != std::string::npos && s.find('.') == std::string::npos)
        s.insert(e, ".");
      return std::string(sciWidth(s), ' ') + s;
    }
    size_t dot = s.find('.');
    if (isFloat_ && !sci_ && dot != std::string::npos)
      return std::string(padLeft_ - dot, ' ') + s +
             std::string(padRight_ - (s.size() - dot - 1), ' ');
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

  void emit(int d, int64_t base, std::string &out) {
    int rank = int(shape_.size());
    out += '[';
    bool first = true;
    for (int64_t k : visible(d)) {
      if (d + 1 == rank) {
        if (!first)
          out += ' ';
        out += k < 0 ? std::string("...")
                     : align(formatElement(t_, base + k, sci_, sci_ ? sciPrec_ : -1));
      } else {
        if (!first) {
          out.append(size_t(rank - d - 1), '\n');
          out.append(size_t(d + 1), ' ');
        }
        if (k < 0)
          out += "...";
        else
          emit(d + 1, base + k * strides_[d], out);
      }
      first = false;
    }
    out += ']';
  }

  const Tensor &t_;
  std::vector<int64_t> shape_;
  bool summarize_;
  std::vector<int64_t> strides_;
  size_t width_ = 0;
  bool isFloat_ = false, sci_ = false;
  double maxAbs_ = 0, minAbs_ = 0;
  size_t padLeft_ = 0, padRight_ = 0;
  int sciPrec_ = 0;
  bool negative_ = false;
};

} // namespace

std::string formatTensor(const Tensor &t, int64_t threshold) {
  if (!t.valid())
    return "<no data>";
  if (!t.type().isStatic())
    return "<tensor of non-static type " + t.type().str() + ">";
  return Printer(t, t.numElements() > threshold).run();
}

} // namespace mdl::backend
