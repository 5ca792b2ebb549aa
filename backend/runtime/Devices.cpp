// Opening run-time devices: the HIP plugin loader, the CPU fallback, the
// device map.
#include "backend/runtime/Devices.h"

#include <dlfcn.h>
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
  if (pluginHandle_)
    dlclose(pluginHandle_);
}

bool DeviceSet::open(const Module &m, const DeviceOptions &opts, const mdl_device_interface *cpu,
                     DiagnosticEngine &diags) {
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
    bool mpcA = m.devices[size_t(a)].kind == DeviceKind::Mpc;
    bool mpcB = m.devices[size_t(b)].kind == DeviceKind::Mpc;
    if (mpcA != mpcB) {
      diags.error("E0204", m.devices[size_t(a)].loc,
                  "--device-map " + from + "=" + to +
                      ": an mpc device and a non-mpc device cannot stand for each other");
      continue;
    }
    target[size_t(a)] = b;
  }
  if (diags.errorCount() != before)
    return false;

  std::set<int> used = usedDevices(m);
  std::vector<std::pair<std::string, std::string>> fellBack; // device, why
  std::string pluginProblem;
  const mdl_device_interface *hip = nullptr;
  bool triedPlugin = false;
  std::map<int, std::shared_ptr<DeviceRuntime>> byTarget;
  for (int d : used) {
    int t = target[size_t(d)];
    if (auto it = byTarget.find(t); it != byTarget.end()) {
      runtimes_[size_t(d)] = it->second;
      continue;
    }
    const Device &dev = m.devices[size_t(t)];
    auto rt = std::make_shared<DeviceRuntime>();
    const char *err = nullptr;
    switch (dev.kind) {
    case DeviceKind::Cpu:
      rt->iface = cpu;
      rt->dev = cpu->open(0, int(dev.intArg("threads", 0)), &err);
      rt->description = dev.name + ": " + cpu->describe(rt->dev);
      break;
    case DeviceKind::Hip: {
      if (!triedPlugin) {
        triedPlugin = true;
        std::string path = opts.hipPlugin;
        if (path.empty())
          if (const char *env = std::getenv("MDL_HIP_PLUGIN"))
            path = env;
        if (path.empty())
          path = libraryPath("libmdl_hip.so");
        pluginHandle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!pluginHandle_) {
          const char *e = dlerror();
          pluginProblem = "no HIP runtime plugin (" + std::string(e ? e : path) + ")";
        } else {
          auto fn = reinterpret_cast<mdl_device_plugin_fn>(
              dlsym(pluginHandle_, MDL_DEVICE_PLUGIN_SYMBOL));
          hip = fn ? fn() : nullptr;
          if (!hip || hip->abi_version != MDL_DEVICE_ABI_VERSION) {
            pluginProblem = path + " is not an mdl device plugin of ABI version " +
                            std::to_string(MDL_DEVICE_ABI_VERSION);
            hip = nullptr;
          }
        }
      }
      int ordinal = int(dev.intArg("ordinal", 0));
      if (hip) {
        rt->dev = hip->open(ordinal, 0, &err);
        if (rt->dev) {
          rt->iface = hip;
          rt->description = dev.name + ": " + hip->describe(rt->dev);
          break;
        }
      }
      std::string why = hip ? "GPU " + std::to_string(ordinal) + " is not available (" +
                                  std::string(err ? err : "unknown error") + ")"
                            : pluginProblem;
      if (opts.fallbackError) {
        auto &diag = diags.error("E0403", dev.loc,
                                 "device '" + dev.name + "' (hip(" + std::to_string(ordinal) +
                                     ")) is unavailable: " + why);
        diag.notes.push_back({{}, "without --fallback=error, hip devices run on the CPU"});
        continue;
      }
      rt->iface = cpu;
      rt->dev = cpu->open(0, 0, &err);
      rt->fallback = true;
      rt->description = dev.name + ": hip(" + std::to_string(ordinal) + ") on the CPU (fallback)";
      fellBack.push_back({dev.name, why});
      break;
    }
    case DeviceKind::Mpc: {
      auto &diag = diags.error("E0406", firstUse(m, d),
                               "'" + m.devices[size_t(d)].name +
                                   "' is an mpc device, and this build has no MPC runtime: "
                                   "secret-shared execution is not available");
      diag.notes.push_back({m.devices[size_t(d)].loc, "the mpc device is declared here"});
      diag.notes.push_back({{}, "nothing was run, and nothing is ever run in plaintext in its "
                                "place; `mdl check` still checks the program"});
      continue;
    }
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
  // One note for all the devices that fell back, grouped by reason; a
  // diagnostic like every other message, so --diagnostics=json has it too.
  std::map<std::string, std::string> byReason;
  for (auto &[name, why] : fellBack)
    byReason[why] += (byReason[why].empty() ? "" : ", ") + name;
  for (auto &[why, list] : byReason) {
    bool one = list.find(',') == std::string::npos;
    Location loc;
    loc.file = m.devices.empty() ? 0 : m.devices.front().loc.file;
    diags.note("N0803", loc,
               why + "; hip device" + (one ? " " : "s ") + list + " run" + (one ? "s" : "") +
                   " on the CPU (--fallback=error refuses instead)");
  }
  diags.flush(); // before anything runs and prints
  return diags.errorCount() == before;
}

} // namespace mdl::backend
