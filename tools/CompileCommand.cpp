// `mdl compile FILE --gpu-arch ARCH -o DIR`: ahead-of-time code for the
// accelerator segments of a program. The program is checked and
// partitioned as `mdl check` does; every segment placed on a device with
// memory of its own (a GPU kind) is compiled by its kind's compile-time
// half (DeviceBackend::compile) for ARCH, and the kind says which files
// stand for the artifact (DeviceBackend::describeArtifact: for hip, the
// code object, PTX or bitcode, and the GPU program). DIR/manifest.json
// lists the functions, their segments (device, source line, files, and the
// kind's description: kernels, steps, inputs, outputs) and the devices.
// A segment that cannot be compiled is an error at its line (E0403); every
// one is tried, so all are reported.
#include "backend/runtime/DeviceBackend.h"
#include "stdlib/DeviceKinds.h"
#include "tools/Compilation.h"
#include "tools/Driver.h"
#include "tools/OutputFiles.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

namespace mdl::tools {

namespace {

using nlohmann::json;

/// A file name made of the characters every file system takes.
std::string fileSafe(const std::string &s) {
  std::string out;
  for (char ch : s)
    out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
  return out;
}

class Compiler {
public:
  Compiler(Compilation &c, const DriverOptions &o) : c_(c), o_(o) {}

  int run() {
    const ir::Module &m = *c_.placed;
    std::string err;
    if (!makeDirs(o_.outDir, err)) {
      c_.diags.error("E0407", fileLoc(o_.outDir), "cannot create the output folder: " + err);
      return 1;
    }
    json manifest;
    manifest["file"] = o_.file;
    manifest["target"] = o_.gpuArch;
    manifest["devices"] = json::array();
    for (const ir::Device &d : m.devices) {
      const stdlib::DeviceKindInfo &k = stdlib::kindOf(d);
      manifest["devices"].push_back(
          {{"name", d.name}, {"kind", d.kind}, {"compiled", compiles(k)}, {"line", d.loc.line}});
    }
    manifest["functions"] = json::array();
    for (const auto &f : m.functions) {
      json fn{{"name", f->name}, {"line", f->loc.line}, {"segments", json::array()}};
      int index = 0;
      bool ok = true;
      ir::walk(*f->body, [&](const ir::Operation &op) {
        if (op.kind == ir::OpKind::Segment && ok)
          ok = segment(m, *f, op, index++, fn["segments"]);
      });
      if (!ok)
        return 1;
      manifest["functions"].push_back(fn);
    }
    if (c_.diags.hasErrors())
      return 1;
    if (!write("manifest.json", manifest.dump(2) + "\n"))
      return 1;
    std::cout << o_.outDir << ": " << written_ << " segment" << (written_ == 1 ? "" : "s")
              << " compiled for " << o_.gpuArch << "\n";
    return 0;
  }

private:
  static bool compiles(const stdlib::DeviceKindInfo &k) {
    return k.memory == stdlib::MemoryModel::Device;
  }
  static ir::Location fileLoc(const std::string &path) {
    ir::Location loc;
    loc.file = ir::internFile(path);
    return loc;
  }

  // Compiles one segment (when its device's kind makes device code);
  // false only when writing failed (compile errors are reported and the
  // other segments still tried).
  bool segment(const ir::Module &m, const ir::Function &f, const ir::Operation &op, int index,
               json &out) {
    const ir::Device &dev = m.devices.at(size_t(op.device));
    const stdlib::DeviceKindInfo &kind = stdlib::kindOf(dev);
    json s{{"index", index},      {"device", dev.name},   {"kind", dev.kind},
           {"line", op.loc.line}, {"column", op.loc.col}, {"compiled", false}};
    backend::DeviceBackend *b = backend::deviceBackend(kind.name);
    if (!compiles(kind) || !b) {
      out.push_back(s);
      return true;
    }
    std::string error;
    std::unique_ptr<backend::Artifact> a = b->compile(op, o_.gpuArch, error);
    if (!a) {
      std::string rest;
      ir::Location at = backend::deviceErrorLocation(error, op.loc, rest);
      c_.diags.error("E0403", at,
                     "device '" + dev.name + "' cannot compile this segment for " + o_.gpuArch +
                         ": " + rest);
      out.push_back(s);
      return true;
    }
    std::vector<std::pair<std::string, std::string>> files;
    std::string description;
    s["compiled"] = true;
    if (b->describeArtifact(*a, files, description)) {
      s["description"] = json::parse(description, nullptr, false);
    } else {
      backend::Artifact &art = *a;
      mdl_artifact v = art.view();
      files.push_back(
          {".artifact", std::string(static_cast<const char *>(v.data), size_t(v.size))});
    }
    std::string base = fileSafe(f.name) + ".s" + std::to_string(index);
    s["files"] = json::array();
    for (auto &[suffix, bytes] : files) {
      std::string name = base + suffix;
      if (!write(name, bytes))
        return false;
      s["files"].push_back(name);
    }
    ++written_;
    out.push_back(s);
    return true;
  }

  bool write(const std::string &name, const std::string &bytes) {
    std::string path = o_.outDir + "/" + name, which;
    if (overwritesInput(path, {o_.file}, which)) {
      c_.diags.error("E0408", fileLoc(path),
                     "refusing to write '" + path + "': it is the input '" + which +
                         "', which would be lost");
      return false;
    }
    std::ofstream os(path, std::ios::binary | std::ios::trunc);
    os.write(bytes.data(), std::streamsize(bytes.size()));
    os.close();
    if (!os) {
      c_.diags.error("E0407", fileLoc(path), "cannot write '" + path + "'");
      return false;
    }
    return true;
  }

  Compilation &c_;
  const DriverOptions &o_;
  int written_ = 0;
};

} // namespace

int compileCommand(const DriverOptions &o) {
  Compilation &c = Compilation::create(o);
  struct Finish {
    Compilation &c;
    ~Finish() { c.finish(); }
  } finish{c};
  // Weights are not read: segments receive them as inputs.
  if (!c.runThrough("partition"))
    return 1;
  int rc = Compiler(c, o).run();
  return rc != 0 || c.diags.hasErrors() ? 1 : 0;
}

} // namespace mdl::tools
