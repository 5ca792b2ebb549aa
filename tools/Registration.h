// The explicit registration of mdl's device kinds, from main: the kinds
// built in (one line each), then the kinds added from outside by shared
// libraries (--device-plugin FILE, $MDL_DEVICE_PLUGINS).
#pragma once

#include <string>
#include <vector>

namespace mdl::tools {

/// Registers the built-in kinds and loads `plugins` (paths of shared
/// libraries exporting mdl_register_device_kinds). False with `error` when
/// a plugin cannot be loaded or refuses.
bool registerDeviceKinds(const std::vector<std::string> &plugins, std::string &error);

} // namespace mdl::tools
