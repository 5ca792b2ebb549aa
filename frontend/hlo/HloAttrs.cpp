// Parsers for the HLO attribute values that carry semantics.
#include "frontend/hlo/HloAttrs.h"

#include <charconv>

namespace mdl::frontend::hlo {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' ||
                        s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Splits on a separator at bracket depth 0.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '{' || c == '[' || c == '(')
      ++depth;
    else if (c == '}' || c == ']' || c == ')')
      --depth;
    else if (c == sep && depth == 0) {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  }
  out.push_back(s.substr(from));
  return out;
}

// Strips one pair of enclosing brackets.
std::optional<std::string_view> inside(std::string_view s, char open, char close) {
  s = trim(s);
  if (s.size() < 2 || s.front() != open || s.back() != close)
    return std::nullopt;
  return s.substr(1, s.size() - 2);
}

// `3x3`, `1_1x0_2`: the `x`-separated fields.
std::vector<std::string_view> fields(std::string_view s) { return split(s, 'x'); }

} // namespace

std::optional<int64_t> parseInt(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+')
    s.remove_prefix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty())
    return std::nullopt;
  return v;
}

std::optional<double> parseReal(std::string_view s) {
  s = trim(s);
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty())
    return std::nullopt;
  return v;
}

std::optional<bool> parseBool(std::string_view s) {
  s = trim(s);
  if (s == "true")
    return true;
  if (s == "false")
    return false;
  return std::nullopt;
}

std::optional<IntVec> parseIntList(std::string_view s) {
  auto in = inside(s, '{', '}');
  if (!in)
    return std::nullopt;
  IntVec out;
  if (trim(*in).empty())
    return out;
  for (std::string_view f : split(*in, ',')) {
    auto v = parseInt(f);
    if (!v)
      return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::string parseName(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '%')
    s.remove_prefix(1);
  return std::string(s);
}

std::optional<std::vector<std::string>> parseNameList(std::string_view s) {
  auto in = inside(s, '{', '}');
  if (!in)
    return std::nullopt;
  std::vector<std::string> out;
  if (trim(*in).empty())
    return out;
  for (std::string_view f : split(*in, ',')) {
    std::string n = parseName(f);
    if (n.empty())
      return std::nullopt;
    out.push_back(n);
  }
  return out;
}

std::string unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::optional<HloWindow> parseWindow(std::string_view s) {
  auto in = inside(s, '{', '}');
  if (!in)
    return std::nullopt;
  HloWindow w;
  IntVec reversal;
  for (std::string_view item : split(trim(*in), ' ')) {
    item = trim(item);
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return std::nullopt;
    std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "pad") {
      for (std::string_view f : fields(val)) {
        size_t us = f.find('_', 1); // the first char may be a minus sign
        if (us == std::string_view::npos)
          return std::nullopt;
        auto lo = parseInt(f.substr(0, us)), hi = parseInt(f.substr(us + 1));
        if (!lo || !hi)
          return std::nullopt;
        w.padLo.push_back(*lo);
        w.padHi.push_back(*hi);
      }
      continue;
    }
    IntVec *dst = key == "size"         ? &w.size
                  : key == "stride"     ? &w.stride
                  : key == "lhs_dilate" ? &w.lhsDilate
                  : key == "rhs_dilate" ? &w.rhsDilate
                  : key == "rhs_reversal" ? &reversal
                                        : nullptr;
    if (!dst)
      continue; // unknown window field: ignored
    for (std::string_view f : fields(val)) {
      auto v = parseInt(f);
      if (!v)
        return std::nullopt;
      dst->push_back(*v);
    }
  }
  size_t r = w.size.size();
  auto fill = [&](IntVec &v, int64_t d) {
    if (v.empty())
      v.assign(r, d);
    return v.size() == r;
  };
  if (!fill(w.stride, 1) || !fill(w.padLo, 0) || !fill(w.padHi, 0) || !fill(w.lhsDilate, 1) ||
      !fill(w.rhsDilate, 1))
    return std::nullopt;
  for (int64_t x : reversal)
    w.reversal |= x != 0;
  return w;
}

std::optional<HloPadding> parsePadding(std::string_view s) {
  HloPadding p;
  s = trim(s);
  if (s.empty())
    return p;
  for (std::string_view f : fields(s)) {
    IntVec parts;
    size_t from = 0;
    for (size_t i = 1; i <= f.size(); ++i)
      if (i == f.size() || (f[i] == '_' && i > from)) {
        auto v = parseInt(f.substr(from, i - from));
        if (!v)
          return std::nullopt;
        parts.push_back(*v);
        from = i + 1;
      }
    if (parts.size() != 2 && parts.size() != 3)
      return std::nullopt;
    p.lo.push_back(parts[0]);
    p.hi.push_back(parts[1]);
    p.interior.push_back(parts.size() == 3 ? parts[2] : 0);
  }
  return p;
}

std::optional<HloSlice> parseSlice(std::string_view s) {
  auto in = inside(s, '{', '}');
  if (!in)
    return std::nullopt;
  HloSlice sl;
  if (trim(*in).empty())
    return sl;
  for (std::string_view f : split(*in, ',')) {
    auto dim = inside(f, '[', ']');
    if (!dim)
      return std::nullopt;
    std::vector<std::string_view> parts = split(*dim, ':');
    if (parts.size() != 2 && parts.size() != 3)
      return std::nullopt;
    auto a = parseInt(parts[0]), b = parseInt(parts[1]);
    auto c = parts.size() == 3 ? parseInt(parts[2]) : std::optional<int64_t>(1);
    if (!a || !b || !c)
      return std::nullopt;
    sl.start.push_back(*a);
    sl.limit.push_back(*b);
    sl.stride.push_back(*c);
  }
  return sl;
}

std::optional<int64_t> parseMaximalDevice(std::string_view s) {
  auto in = inside(s, '{', '}');
  if (!in)
    return std::nullopt;
  std::string_view t = trim(*in);
  constexpr std::string_view kPrefix = "maximal device=";
  if (t.substr(0, kPrefix.size()) != kPrefix)
    return std::nullopt;
  return parseInt(t.substr(kPrefix.size()));
}

} // namespace mdl::frontend::hlo
