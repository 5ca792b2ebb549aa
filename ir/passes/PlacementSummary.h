// The placement summary `mdl check` prints: per device the operations and
// parameter bytes it holds, the transfers one call of the entry performs
// (from, to, bytes, where), the constants replicated at load time, and the
// size of the partitioned IR. An analysis: it reads the module only.
#pragma once

#include "ir/IR.h"

#include <string>
#include <vector>

namespace mdl::passes {

struct TransferRecord {
  std::string from, to, kind; // kind: transfer, to(), reveal
  std::string bytes;          // "128 B", or "16*B B" with symbolic sizes
  int64_t staticBytes = 0;    // 0 when symbolic
  ir::Location loc;
  std::string context;        // "", "per iteration of the for loop at line 5", ...
};

struct DeviceRecord {
  std::string name, kind;
  int64_t operations = 0;
  int64_t paramBytes = 0;
  std::vector<std::string> params;
};

struct PlacementSummary {
  std::string entry;
  std::vector<DeviceRecord> devices;
  std::vector<TransferRecord> transfers;
  /// "const inv_freq on gpu0, gpu1 (16 B each)"
  std::vector<std::string> replicated;
  size_t irBytes = 0;
};

/// Summarizes a partitioned module for its entry function.
PlacementSummary summarizePlacement(const ir::Module &m, const std::string &entry);

/// Renders the summary as the text `mdl check` prints.
std::string formatPlacementSummary(const PlacementSummary &s);

/// Size in bytes of a type: "128 B", or with symbols "16*B B".
std::string byteString(const ir::TensorType &t);

} // namespace mdl::passes
