// The device-kind registry (see DeviceKinds.h).
#include "stdlib/DeviceKinds.h"

#include <algorithm>
#include <cassert>
#include <deque>

namespace mdl::stdlib {

namespace {
// A deque: descriptors never move once registered (callers keep pointers).
std::deque<DeviceKindInfo> &kinds() {
  static std::deque<DeviceKindInfo> k;
  return k;
}
} // namespace

bool registerDeviceKind(DeviceKindInfo info) {
  if (findDeviceKind(info.name))
    return false;
  kinds().push_back(std::move(info));
  return true;
}

const DeviceKindInfo *findDeviceKind(const std::string &name) {
  for (const DeviceKindInfo &k : kinds())
    if (k.name == name)
      return &k;
  return nullptr;
}

const DeviceKindInfo &kindOf(const ir::Device &d) {
  const DeviceKindInfo *k = findDeviceKind(d.kind);
  assert(k && "a device of a kind that is not registered");
  return *k;
}

std::vector<std::string> deviceKindNames() {
  std::vector<std::string> names;
  for (const DeviceKindInfo &k : kinds())
    names.push_back(k.name);
  return names;
}

const DeviceKindInfo *hostDeviceKind() {
  for (const DeviceKindInfo &k : kinds())
    if (k.memory == MemoryModel::Host)
      return &k;
  return nullptr;
}

const DeviceKindInfo *acceleratorDeviceKind() {
  for (const DeviceKindInfo &k : kinds())
    if (k.memory == MemoryModel::Device && !k.ordinalArg.empty())
      return &k;
  return nullptr;
}

std::vector<std::string> supportedCallNames(const DeviceKindInfo &kind) {
  std::vector<std::string> names;
  for (const std::string &n : callableNames())
    if (kind.supports && kind.supports(lookupCallable(n)->kind))
      names.push_back(n);
  return names;
}

bool jitPreparesSegments(const ir::Module &m, int d) {
  if (d < 0 || size_t(d) >= m.devices.size())
    return true;
  const DeviceKindInfo *k = findDeviceKind(m.devices[size_t(d)].kind);
  return !k || k->jitPreparesSegments;
}

DeviceKindInfo ordinalDeviceKind(const std::string &name, const std::string &summary) {
  DeviceKindInfo k;
  k.name = name;
  k.summary = summary;
  k.args = {ParamSpec{"ordinal", ParamKind::Int, std::nullopt, true}};
  k.memory = MemoryModel::Device;
  k.ordinalArg = "ordinal";
  k.checkArg = [](const std::string &arg, const ir::Attribute &v) {
    return arg == "ordinal" && v.asInt() < 0 ? std::string("ordinals start at 0") : std::string();
  };
  return k;
}

} // namespace mdl::stdlib
