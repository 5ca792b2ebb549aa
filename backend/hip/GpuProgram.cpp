// The byte form of a GPU program (see GpuProgram.h): a magic and version,
// then every field in order, integers little-endian, strings and lists
// prefixed by their length. parse() reads through one bounds-checked
// reader and validates every reference, so a damaged or foreign artifact
// becomes an error message.
#include "backend/hip/GpuProgram.h"

#include "ir/Type.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

namespace mdl::backend::hip {

int64_t bytesOf(const GpuTensor &t) {
  if (t.dtype < MDL_BOOL || t.dtype > MDL_F64)
    return -1;
  int64_t n = int64_t(ir::dtypeSize(dtypeOfAbi(t.dtype)));
  for (int64_t d : t.shape) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 62) / d))
      return -1;
    n *= d;
  }
  return n;
}

namespace {

constexpr char kMagic[8] = {'M', 'D', 'L', 'G', 'P', 'U', '\0', '\x01'};
// 2: the error record (GpuProgram::errorOffset, GpuStep::error), Gemm
// epilogues and the checksum.
constexpr uint32_t kVersion = 2;
// The checksum (after the version) covers every byte after it: damaged code
// is refused here rather than handed to a driver's compiler (PoCL's LLVM 15
// crashes on some damaged bitcode).
constexpr size_t kHeaderBytes = sizeof kMagic + sizeof(uint32_t) + sizeof(uint64_t);

/// FNV-1a, 64 bits.
uint64_t checksum(const char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= uint8_t(p[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}
// Bounds that no program comes near; they keep a damaged count from
// asking for gigabytes before the bytes run out.
constexpr uint64_t kMaxCount = uint64_t(1) << 24;

class Writer {
public:
  void raw(const void *p, size_t n) { out.append(static_cast<const char *>(p), n); }
  template <typename T> void num(T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T)); // little-endian hosts only (x86-64, arm64)
    raw(b, sizeof(T));
  }
  void str(const std::string &s) {
    num<uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  void ref(const GpuRef &r) {
    num<uint8_t>(uint8_t(r.kind));
    num<uint32_t>(r.index);
    num<int64_t>(r.offset);
  }
  void launch(const GpuLaunch &l) {
    num<uint32_t>(l.kernel);
    for (uint32_t g : l.grid)
      num<uint32_t>(g);
    num<uint64_t>(l.args.size());
    for (const GpuRef &r : l.args)
      ref(r);
  }
  void tensor(const GpuTensor &t) {
    num<int32_t>(t.dtype);
    num<uint64_t>(t.shape.size());
    for (int64_t d : t.shape)
      num<int64_t>(d);
  }
  std::string out;
};

class Reader {
public:
  Reader(const void *data, size_t size) : p_(static_cast<const char *>(data)), n_(size) {}
  bool raw(void *dst, size_t n) {
    if (!ok_ || n > n_ - at_)
      return fail("truncated");
    std::memcpy(dst, p_ + at_, n);
    at_ += n;
    return true;
  }
  template <typename T> T num() {
    T v{};
    raw(&v, sizeof(T));
    return v;
  }
  uint64_t count() {
    uint64_t c = num<uint64_t>();
    if (ok_ && (c > kMaxCount || c > n_ - at_))
      fail("a count of " + std::to_string(c) + " is out of range");
    return ok_ ? c : 0;
  }
  std::string str() {
    uint64_t len = num<uint64_t>();
    if (ok_ && len > n_ - at_) {
      fail("a string of " + std::to_string(len) + " bytes is longer than what remains");
      return {};
    }
    std::string s(ok_ ? size_t(len) : 0, '\0');
    if (!s.empty())
      raw(s.data(), s.size());
    return s;
  }
  GpuRef ref() {
    GpuRef r;
    uint8_t k = num<uint8_t>();
    if (k > uint8_t(GpuRef::Kind::Int64))
      fail("unknown reference kind " + std::to_string(k));
    r.kind = GpuRef::Kind(k);
    r.index = num<uint32_t>();
    r.offset = num<int64_t>();
    return r;
  }
  GpuLaunch launch() {
    GpuLaunch l;
    l.kernel = num<uint32_t>();
    for (uint32_t &g : l.grid)
      g = num<uint32_t>();
    uint64_t n = count();
    for (uint64_t i = 0; ok_ && i < n; ++i)
      l.args.push_back(ref());
    return l;
  }
  GpuTensor tensor() {
    GpuTensor t;
    t.dtype = num<int32_t>();
    uint64_t rank = count();
    for (uint64_t i = 0; ok_ && i < rank; ++i)
      t.shape.push_back(num<int64_t>());
    return t;
  }
  bool fail(const std::string &why) {
    if (ok_)
      error_ = why;
    ok_ = false;
    return false;
  }
  bool ok() const { return ok_; }
  bool atEnd() const { return at_ == n_; }
  const std::string &error() const { return error_; }

private:
  const char *p_;
  size_t n_, at_ = 0;
  bool ok_ = true;
  std::string error_;
};

// Every reference of `p` names something that exists, inside its memory.
bool validate(const GpuProgram &p, std::string &error) {
  auto checkRef = [&](const GpuRef &r, const std::string &where) {
    auto bad = [&](const std::string &why) {
      error = where + ": " + why;
      return false;
    };
    switch (r.kind) {
    case GpuRef::Kind::Input:
      if (r.index >= p.inputs.size())
        return bad("input " + std::to_string(r.index) + " does not exist");
      if (r.offset < 0 || r.offset > bytesOf(p.inputs[r.index]))
        return bad("offset " + std::to_string(r.offset) + " is outside input " +
                   std::to_string(r.index));
      break;
    case GpuRef::Kind::Output:
      if (r.index >= p.outputs.size())
        return bad("output " + std::to_string(r.index) + " does not exist");
      if (r.offset < 0 || r.offset > bytesOf(p.outputs[r.index]))
        return bad("offset " + std::to_string(r.offset) + " is outside output " +
                   std::to_string(r.index));
      break;
    case GpuRef::Kind::Scratch:
      if (r.offset < 0 || uint64_t(r.offset) > p.scratchBytes)
        return bad("scratch offset " + std::to_string(r.offset) + " is outside " +
                   std::to_string(p.scratchBytes) + " bytes");
      break;
    case GpuRef::Kind::Constant:
      if (r.offset < 0 || uint64_t(r.offset) > p.constants.size())
        return bad("constant offset " + std::to_string(r.offset) + " is outside " +
                   std::to_string(p.constants.size()) + " bytes");
      break;
    case GpuRef::Kind::Int64:
      return true;
    }
    return true;
  };
  auto checkLaunch = [&](const GpuLaunch &l, const std::string &where) {
    if (l.kernel >= p.kernels.size()) {
      error = where + ": kernel " + std::to_string(l.kernel) + " does not exist";
      return false;
    }
    for (uint32_t g : l.grid)
      if (g == 0) {
        error = where + ": an empty grid";
        return false;
      }
    for (const GpuRef &r : l.args)
      if (!checkRef(r, where))
        return false;
    return true;
  };
  for (const auto *list : {&p.inputs, &p.outputs})
    for (const GpuTensor &t : *list)
      if (bytesOf(t) < 0) {
        error = "an input or output of unknown type or impossible size";
        return false;
      }
  for (const GpuKernel &k : p.kernels)
    if (k.name.empty() || k.block[0] == 0 || k.block[1] == 0 || k.block[2] == 0) {
      error = "kernel '" + k.name + "' has no name or an empty block";
      return false;
    }
  if (p.errorOffset != -1 &&
      (p.errorOffset < 0 || p.errorOffset % 8 != 0 || uint64_t(p.errorOffset) > p.scratchBytes ||
       p.scratchBytes - uint64_t(p.errorOffset) < sizeof(GpuErrorRecord))) {
    error = "the error record at scratch offset " + std::to_string(p.errorOffset) +
            " is not inside " + std::to_string(p.scratchBytes) +
            " bytes of scratch (or not aligned)";
    return false;
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const GpuStep &s = p.steps[i];
    std::string where = "step " + std::to_string(i);
    if (!s.error.empty() && (s.kind != GpuStep::Kind::Launch || p.errorOffset < 0)) {
      error = where + ": an error message on a step that cannot report one";
      return false;
    }
    bool ok = true;
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      ok = checkLaunch(s.launch, where);
      break;
    case GpuStep::Kind::Gemm:
      ok = checkRef(s.gemm.a, where) && checkRef(s.gemm.b, where) && checkRef(s.gemm.c, where) &&
           checkLaunch(s.gemm.fallback, where) &&
           (!s.gemm.hasEpilogue || checkLaunch(s.gemm.epilogue, where));
      break;
    case GpuStep::Kind::Copy:
      ok = checkRef(s.copy.dst, where) && checkRef(s.copy.src, where);
      break;
    }
    if (!ok)
      return false;
  }
  return true;
}

} // namespace

std::string GpuProgram::serialize() const {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.num<uint32_t>(kVersion);
  w.num<uint64_t>(0); // the checksum, below
  w.str(target);
  w.num<uint8_t>(uint8_t(codeFormat));
  w.str(code);
  w.num<uint64_t>(kernels.size());
  for (const GpuKernel &k : kernels) {
    w.str(k.name);
    for (uint32_t b : k.block)
      w.num<uint32_t>(b);
    w.num<uint32_t>(k.sharedBytes);
  }
  w.num<uint64_t>(inputs.size());
  for (const GpuTensor &t : inputs)
    w.tensor(t);
  w.num<uint64_t>(outputs.size());
  for (const GpuTensor &t : outputs)
    w.tensor(t);
  w.num<uint64_t>(scratchBytes);
  w.num<int64_t>(errorOffset);
  w.str(constants);
  w.num<uint64_t>(steps.size());
  for (const GpuStep &s : steps) {
    w.num<uint8_t>(uint8_t(s.kind));
    w.num<uint32_t>(s.line);
    w.num<uint32_t>(s.column);
    w.str(s.what);
    w.str(s.error);
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      w.launch(s.launch);
      break;
    case GpuStep::Kind::Gemm: {
      const GpuGemm &g = s.gemm;
      w.num<int32_t>(g.dtype);
      w.num<uint8_t>(g.transA);
      w.num<uint8_t>(g.transB);
      for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.strideA, g.strideB, g.strideC})
        w.num<int64_t>(v);
      w.ref(g.a);
      w.ref(g.b);
      w.ref(g.c);
      w.launch(g.fallback);
      w.num<uint8_t>(g.hasEpilogue);
      if (g.hasEpilogue)
        w.launch(g.epilogue);
      break;
    }
    case GpuStep::Kind::Copy:
      w.ref(s.copy.dst);
      w.ref(s.copy.src);
      w.num<uint64_t>(s.copy.bytes);
      break;
    }
  }
  uint64_t sum = checksum(w.out.data() + kHeaderBytes, w.out.size() - kHeaderBytes);
  std::memcpy(w.out.data() + kHeaderBytes - sizeof sum, &sum, sizeof sum);
  return std::move(w.out);
}

std::optional<GpuProgram> GpuProgram::parse(const void *data, size_t size, std::string &error) {
  Reader r(data, size);
  char magic[sizeof kMagic];
  if (!r.raw(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    error = "not an mdl GPU program";
    return std::nullopt;
  }
  uint32_t version = r.num<uint32_t>();
  if (r.ok() && version != kVersion) {
    error = "a GPU program of version " + std::to_string(version) + " (this mdl reads version " +
            std::to_string(kVersion) + ")";
    return std::nullopt;
  }
  uint64_t sum = r.num<uint64_t>();
  if (r.ok() &&
      sum != checksum(static_cast<const char *>(data) + kHeaderBytes, size - kHeaderBytes)) {
    error = "damaged GPU program: its checksum does not match its bytes";
    return std::nullopt;
  }
  GpuProgram p;
  p.target = r.str();
  uint8_t format = r.num<uint8_t>();
  if (format > uint8_t(GpuCodeFormat::Spir64Bitcode))
    r.fail("unknown code format " + std::to_string(format));
  p.codeFormat = GpuCodeFormat(format);
  p.code = r.str();
  uint64_t nk = r.count();
  for (uint64_t i = 0; r.ok() && i < nk; ++i) {
    GpuKernel k;
    k.name = r.str();
    for (uint32_t &b : k.block)
      b = r.num<uint32_t>();
    k.sharedBytes = r.num<uint32_t>();
    p.kernels.push_back(std::move(k));
  }
  uint64_t ni = r.count();
  for (uint64_t i = 0; r.ok() && i < ni; ++i)
    p.inputs.push_back(r.tensor());
  uint64_t no = r.count();
  for (uint64_t i = 0; r.ok() && i < no; ++i)
    p.outputs.push_back(r.tensor());
  p.scratchBytes = r.num<uint64_t>();
  p.errorOffset = r.num<int64_t>();
  p.constants = r.str();
  uint64_t ns = r.count();
  for (uint64_t i = 0; r.ok() && i < ns; ++i) {
    GpuStep s;
    uint8_t kind = r.num<uint8_t>();
    if (kind > uint8_t(GpuStep::Kind::Copy)) {
      r.fail("unknown step kind " + std::to_string(kind));
      break;
    }
    s.kind = GpuStep::Kind(kind);
    s.line = r.num<uint32_t>();
    s.column = r.num<uint32_t>();
    s.what = r.str();
    s.error = r.str();
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      s.launch = r.launch();
      break;
    case GpuStep::Kind::Gemm: {
      GpuGemm &g = s.gemm;
      g.dtype = r.num<int32_t>();
      g.transA = r.num<uint8_t>() != 0;
      g.transB = r.num<uint8_t>() != 0;
      for (int64_t *v : {&g.m, &g.n, &g.k, &g.lda, &g.ldb, &g.ldc, &g.batch, &g.strideA,
                         &g.strideB, &g.strideC})
        *v = r.num<int64_t>();
      g.a = r.ref();
      g.b = r.ref();
      g.c = r.ref();
      g.fallback = r.launch();
      g.hasEpilogue = r.num<uint8_t>() != 0;
      if (g.hasEpilogue)
        g.epilogue = r.launch();
      break;
    }
    case GpuStep::Kind::Copy:
      s.copy.dst = r.ref();
      s.copy.src = r.ref();
      s.copy.bytes = r.num<uint64_t>();
      break;
    }
    p.steps.push_back(std::move(s));
  }
  if (r.ok() && !r.atEnd())
    r.fail("trailing bytes after the program");
  if (!r.ok()) {
    error = "damaged GPU program: " + r.error();
    return std::nullopt;
  }
  if (!validate(p, error)) {
    error = "damaged GPU program: " + error;
    return std::nullopt;
  }
  return p;
}

std::string gpuErrorMessage(const GpuProgram &p, const GpuErrorRecord &record) {
  if (record.stepPlusOne == 0)
    return "";
  uint64_t step = uint64_t(record.stepPlusOne) - 1;
  if (step >= p.steps.size() || p.steps[step].error.empty())
    return "the GPU program's error record names step " + std::to_string(step) +
           ", which reports no error (a damaged program?)";
  const GpuStep &s = p.steps[step];
  std::string msg = s.error;
  size_t at = msg.find("{}");
  if (at != std::string::npos)
    msg.replace(at, 2, std::to_string(record.value));
  if (s.line)
    msg = std::to_string(s.line) + ":" + std::to_string(s.column) + ": " + msg;
  return msg;
}

const char *codeSuffix(GpuCodeFormat f) {
  switch (f) {
  case GpuCodeFormat::AmdgpuCodeObject:
    return ".hsaco";
  case GpuCodeFormat::Ptx:
    return ".ptx";
  case GpuCodeFormat::Spir64Bitcode:
    return ".bc";
  }
  return ".bin";
}

std::string gpuProgramManifest(const GpuProgram &p) {
  using nlohmann::json;
  auto tensor = [](const GpuTensor &t) {
    return json{{"dtype", ir::dtypeName(dtypeOfAbi(t.dtype))}, {"shape", t.shape}};
  };
  json j;
  j["target"] = p.target;
  j["code_bytes"] = p.code.size();
  j["scratch_bytes"] = p.scratchBytes;
  j["constant_bytes"] = p.constants.size();
  if (p.errorOffset >= 0)
    j["error_record"] = p.errorOffset;
  j["inputs"] = json::array();
  for (const GpuTensor &t : p.inputs)
    j["inputs"].push_back(tensor(t));
  j["outputs"] = json::array();
  for (const GpuTensor &t : p.outputs)
    j["outputs"].push_back(tensor(t));
  j["kernels"] = json::array();
  for (const GpuKernel &k : p.kernels)
    j["kernels"].push_back({{"name", k.name},
                            {"block", {k.block[0], k.block[1], k.block[2]}},
                            {"shared_bytes", k.sharedBytes}});
  auto launch = [&](const GpuLaunch &l) {
    return json{{"kernel", p.kernels[l.kernel].name}, {"grid", {l.grid[0], l.grid[1], l.grid[2]}}};
  };
  j["steps"] = json::array();
  for (const GpuStep &s : p.steps) {
    json e{{"line", s.line}, {"column", s.column}, {"what", s.what}};
    if (!s.error.empty())
      e["error"] = s.error;
    switch (s.kind) {
    case GpuStep::Kind::Launch:
      e["kind"] = "launch";
      e["launch"] = launch(s.launch);
      break;
    case GpuStep::Kind::Gemm:
      e["kind"] = "gemm";
      e["gemm"] = {{"m", s.gemm.m}, {"n", s.gemm.n}, {"k", s.gemm.k}, {"batch", s.gemm.batch},
                   {"trans_a", s.gemm.transA}, {"trans_b", s.gemm.transB}};
      e["fallback"] = launch(s.gemm.fallback);
      if (s.gemm.hasEpilogue)
        e["epilogue"] = launch(s.gemm.epilogue);
      break;
    case GpuStep::Kind::Copy:
      e["kind"] = "copy";
      e["bytes"] = s.copy.bytes;
      break;
    }
    j["steps"].push_back(e);
  }
  return j.dump();
}

std::optional<GpuCodeFormat> codeFormatOf(const std::string &target) {
  if (target == "spir64")
    return GpuCodeFormat::Spir64Bitcode;
  if (target.rfind("gfx", 0) == 0 && target.size() > 3)
    return GpuCodeFormat::AmdgpuCodeObject;
  if (target.rfind("sm_", 0) == 0 && target.size() > 3)
    return GpuCodeFormat::Ptx;
  return std::nullopt;
}

const std::vector<std::string> &knownGpuTargets() {
  static const std::vector<std::string> targets = {"gfx90a", "gfx942", "sm_80", "sm_90", "spir64"};
  return targets;
}

bool isKnownGpuTarget(const std::string &target) {
  const std::vector<std::string> &known = knownGpuTargets();
  return std::find(known.begin(), known.end(), target) != known.end();
}

std::string knownGpuTargetList(std::optional<GpuCodeFormat> format) {
  std::string list;
  for (const std::string &t : knownGpuTargets())
    if (!format || codeFormatOf(t) == format)
      list += (list.empty() ? "" : ", ") + t;
  return list;
}

} // namespace mdl::backend::hip
