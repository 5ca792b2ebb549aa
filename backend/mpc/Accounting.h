// Per-party accounting of a rep3 computation: for each kind of operation,
// how often it ran, its communication rounds, the bytes this party sent and
// received, and the wall time spent in it (communication included).
//
// An operation built from others (softmax from max, exp, reciprocal...) is
// counted once, under its own name: only the outermost operation records.
// printStats is what `mdl run --timings` will print for the mpc device.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace mdl::backend::mpc {

/// Totals for one kind of operation on one party.
struct OpStats {
  uint64_t calls = 0;
  uint64_t rounds = 0;
  uint64_t bytesSent = 0;
  uint64_t bytesReceived = 0;
  double seconds = 0;
  double fastestCall = 0; ///< seconds of the fastest call (steady state)
};

/// Operation name -> totals, ordered by name (deterministic output).
using OpStatsTable = std::map<std::string, OpStats>;

/// Prints one party's table: a header line naming the party, one row per
/// operation kind (calls, rounds, bytes sent, bytes received, time in ms)
/// and a total row.
void printStats(std::ostream &os, int party, const OpStatsTable &table);

/// Prints the three parties' tables one after the other.
void printStats(std::ostream &os, const std::vector<OpStatsTable> &tables);

} // namespace mdl::backend::mpc
