// Opening run-time devices: each kind's runtime, the fallback to the host
// kind, the device map.
#include "backend/runtime/Devices.h"
#include "stdlib/Registry.h"

#include <limits.h>
#include <map>
#include <set>
#include <unistd.h>

namespace mdl::backend {

using namespace ir;

bool parseDeviceMap(const std::vector<std::string> &specs,
                    std::vector<std::pair<std::string, std::string>> &out, std::string &error) {
  for (const std::string &s : specs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      error = "--device-map expects A=B, got '" + s + "'";
      return false;
    }
    out.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return true;
}

namespace {

// The devices a placed module uses: ops, values and function boundaries.
std::set<int> usedDevices(const Module &m) {
  std::set<int> used;
  for (auto &f : m.functions) {
    for (auto &a : f->body->args)
      if (a->device >= 0)
        used.insert(a->device);
    for (int d : f->resultDevices)
      if (d >= 0)
        used.insert(d);
    walk(*f->body, [&](const Operation &op) {
      if (op.device >= 0)
        used.insert(op.device);
    });
  }
  return used;
}

// The first operation placed on device d, for locating diagnostics.
Location firstUse(const Module &m, int d) {
  Location loc;
  for (auto &f : m.functions)
    walk(*f->body, [&](const Operation &op) {
      if (op.device == d && !loc.valid())
        loc = op.loc;
    });
  return loc.valid() ? loc : m.devices[size_t(d)].loc;
}


} // namespace

std::string executableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string p(buf, size_t(n));
  return p.substr(0, p.rfind('/'));
}

std::string libraryPath(const std::string &file) {
  std::string dir = executableDir();
  std::string beside = dir + "/" + file;
  for (const std::string &p : {beside, dir + "/../lib/mdl/" + file})
    if (access(p.c_str(), F_OK) == 0)
      return p;
  return beside;
}

DeviceSet::~DeviceSet() {
  for (auto &r : owned_)
    if (r->iface && r->dev)
      r->iface->close(r->dev);
  owned_.clear();
  runtimes_.clear();
}

namespace {

/// Opens a device of `d`'s declaration on `iface`, with the run's
/// arguments for its kind after the declared ones.
mdl_device *openOn(const mdl_device_interface *iface, const Device &d,
                   const std::vector<RunArg> &runArgs, const char **err) {
  std::vector<mdl_device_arg> args;
  auto add = [&](const std::string &name, const Attribute &value) {
    mdl_device_arg arg{name.c_str(), 0, nullptr};
    if (value.kind() == Attribute::Kind::String)
      arg.string_value = value.asString().c_str();
    else if (value.kind() == Attribute::Kind::Int)
      arg.int_value = value.asInt();
    args.push_back(arg);
  };
  for (const NamedAttr &a : d.args)
    add(a.name, a.value);
  for (const RunArg &a : runArgs)
    add(a.name, a.value);
  return iface->open(args.data(), uint32_t(args.size()), err);
}

std::string declared(const Device &d) {
  std::string s = d.kind + "(";
  for (size_t i = 0; i < d.args.size(); ++i) {
    const Attribute &v = d.args[i].value;
    s += (i ? ", " : "") +
         (v.kind() == Attribute::Kind::String ? "\"" + v.asString() + "\""
                                               : std::to_string(v.asInt()));
  }
  return s + ")";
}

} // namespace

bool DeviceSet::open(const Module &m, const DeviceOptions &opts, DiagnosticEngine &diags) {
  unsigned before = diags.errorCount();
  size_t n = m.devices.size();
  runtimes_.assign(n, nullptr);
  // --device-map: every logical device runs on the runtime of its target.
  std::vector<int> target(n);
  for (size_t i = 0; i < n; ++i)
    target[i] = int(i);
  for (auto &[from, to] : opts.deviceMap) {
    int a = m.findDevice(from), b = m.findDevice(to);
    for (auto [name, idx] : {std::make_pair(from, a), std::make_pair(to, b)})
      if (idx < 0) {
        std::string list;
        for (const Device &d : m.devices)
          list += (list.empty() ? "" : ", ") + d.name;
        diags.error("E0102", {}, "--device-map " + from + "=" + to + ": device '" + name +
                                     "' is not declared")
            .notes.push_back({{}, "declared devices: " + list});
      }
    if (a < 0 || b < 0)
      continue;
    bool secretA = stdlib::isSecret(m.devices[size_t(a)]);
    bool secretB = stdlib::isSecret(m.devices[size_t(b)]);
    if (secretA != secretB) {
      diags.error("E0204", m.devices[size_t(a)].loc,
                  "--device-map " + from + "=" + to +
                      ": a secret-sharing device and a public one cannot stand for each other");
      continue;
    }
    target[size_t(a)] = b;
  }
  if (diags.errorCount() != before)
    return false;

  std::set<int> used = usedDevices(m);
  std::map<std::pair<std::string, std::string>, std::string> fellBack; // (kind, why) -> devices
  std::map<int, std::shared_ptr<DeviceRuntime>> byTarget;
  const stdlib::DeviceKindInfo *hostKind = stdlib::hostDeviceKind();
  DeviceBackend *host = hostKind ? deviceBackend(hostKind->name) : nullptr;
  for (int d : used) {
    int t = target[size_t(d)];
    if (auto it = byTarget.find(t); it != byTarget.end()) {
      runtimes_[size_t(d)] = it->second;
      continue;
    }
    const Device &dev = m.devices[size_t(t)];
    DeviceBackend *backend = deviceBackend(dev.kind);
    auto rt = std::make_shared<DeviceRuntime>();
    const char *err = nullptr;
    RuntimeChoice choice = backend ? backend->runtime() : RuntimeChoice{};
    if (!backend)
      choice.problem = "no backend for device kind '" + dev.kind + "'";
    if (choice.iface) {
      rt->dev = openOn(choice.iface, dev, opts.runArgs, &err);
      if (rt->dev) {
        rt->iface = choice.iface;
        rt->backend = backend;
        rt->description = dev.name + ": " + choice.iface->describe(rt->dev);
      } else {
        // The runtime's reason alone, so that one note covers every device
        // that fell back for it (E0403 names the device itself).
        choice.problem = err ? err : "unknown error";
      }
    }
    if (!rt->dev) {
      if (choice.absent && !(backend && backend->fallsBackToHost())) {
        auto &diag = diags.error("E0406", firstUse(m, d),
                                 "'" + m.devices[size_t(d)].name + "' is a device of kind " + dev.kind +
                                     ", and this build has no runtime for it: " +
                                     choice.problem);
        diag.notes.push_back({m.devices[size_t(d)].loc, "the device is declared here"});
        diag.notes.push_back({{}, "nothing was run, and nothing is ever run in its place; "
                                  "`mdl check` still checks the program"});
        continue;
      }
      if (opts.fallbackError || !backend || !backend->fallsBackToHost() || !host) {
        auto &diag = diags.error("E0403", dev.loc,
                                 "device '" + dev.name + "' (" + declared(dev) +
                                     ") is unavailable: " + choice.problem);
        if (backend && backend->fallsBackToHost())
          diag.notes.push_back({{}, "without --fallback=error, " + dev.kind +
                                        " devices run on the CPU"});
        continue;
      }
      RuntimeChoice hostRuntime = host->runtime();
      Device hostDev;
      hostDev.kind = hostKind->name;
      rt->dev = hostRuntime.iface ? openOn(hostRuntime.iface, hostDev, opts.runArgs, &err) : nullptr;
      rt->iface = hostRuntime.iface;
      rt->backend = host;
      rt->fallback = true;
      rt->description = dev.name + ": " + declared(dev) + " on the CPU (fallback)";
      std::string &names = fellBack[{dev.kind, choice.problem}];
      names += (names.empty() ? "" : ", ") + dev.name;
    }
    if (!rt->dev) {
      diags.error("E0403", dev.loc, "device '" + dev.name + "' could not be opened: " +
                                        std::string(err ? err : "unknown error"));
      continue;
    }
    owned_.push_back(rt);
    byTarget[t] = rt;
    runtimes_[size_t(d)] = rt;
  }
  // One note for all the devices that fell back, grouped by kind and reason; a
  // diagnostic like every other message, so --diagnostics=json has it too.
  for (auto &[kindWhy, list] : fellBack) {
    bool one = list.find(',') == std::string::npos;
    Location loc;
    loc.file = m.devices.empty() ? 0 : m.devices.front().loc.file;
    diags.note("N0803", loc,
               kindWhy.second + "; " + kindWhy.first + " device" + (one ? " " : "s ") + list +
                   " run" + (one ? "s" : "") + " on the CPU (--fallback=error refuses instead)");
  }
  diags.flush(); // before anything runs and prints
  return diags.errorCount() == before;
}

LoadedSegment::~LoadedSegment() {
  if (program_)
    runtime_->iface->unload(runtime_->dev, program_);
}

bool LoadedSegment::load(DeviceRuntime &rt, const Operation &segment, std::string &error) {
  runtime_ = &rt;
  const char *target = rt.iface->target ? rt.iface->target(rt.dev) : nullptr;
  artifact_ = rt.backend->compile(segment, target ? target : "", error);
  if (!artifact_)
    return false;
  mdl_artifact a = artifact_->view();
  program_ = rt.iface->load(rt.dev, &a);
  if (!program_)
    error = rt.iface->last_error(rt.dev);
  return program_ != nullptr;
}

bool LoadedSegment::run(const BufferList &in, const BufferList &out, const Location &loc,
                        DiagnosticEngine &diags) {
  if (runtime_->iface->run(runtime_->dev, program_, in.buffers.data(),
                           uint32_t(in.buffers.size()), out.buffers.data(),
                           uint32_t(out.buffers.size())) == 0)
    return true;
  std::string rest;
  Location at = deviceErrorLocation(runtime_->iface->last_error(runtime_->dev), loc, rest);
  diags.error("E0405", at, rest);
  return false;
}

} // namespace mdl::backend
