// Placeholder until the HLO importer lands.
#include "tools/Driver.h"

#include <iostream>

namespace mdl::tools {

int importCommand(const DriverOptions &o) {
  std::cerr << o.file << ": error[E0601]: HLO import is not available in this build yet\n";
  return 1;
}

} // namespace mdl::tools
