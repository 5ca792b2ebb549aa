// Source locations carried by every IR operation and every diagnostic.
//
// A location names a file through a small process-wide table of file names,
// so an operation costs 16 bytes of location whatever the path length. Both
// `.mdl` and `.hlo` sources register here; the IR printer writes the name.
#pragma once

#include <cstdint>
#include <string>

namespace mdl::ir {

/// A point in a source file with the length of the range that starts there.
/// line and col are 1-based; line 0 means "no location".
struct Location {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t len = 0;

  bool valid() const { return line != 0; }
  /// `file.mdl:3:7`
  std::string str() const;
};

/// Registers a file name (idempotent) and returns its id.
uint32_t internFile(const std::string &name);
/// The name registered under an id.
const std::string &fileName(uint32_t id);

} // namespace mdl::ir
