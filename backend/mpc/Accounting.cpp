// Printing the per-party accounting tables (Accounting.h).
#include "backend/mpc/Accounting.h"
#include "backend/runtime/FormatBytes.h"

#include <cstdio>

namespace mdl::backend::mpc {

void printStats(std::ostream &os, int party, const OpStatsTable &table) {
  char line[160];
  std::snprintf(line, sizeof line,
                "mpc party %d %-14s %8s %8s %12s %12s %10s\n", party, "",
                "calls", "rounds", "sent", "received", "time ms");
  os << line;
  OpStats total;
  auto row = [&](const std::string &name, const OpStats &s) {
    std::snprintf(line, sizeof line, "  %-24s %8llu %8llu %12s %12s %10.3f\n",
                  name.c_str(), (unsigned long long)s.calls,
                  (unsigned long long)s.rounds,
                  formatBytes(s.bytesSent).c_str(),
                  formatBytes(s.bytesReceived).c_str(), s.seconds * 1e3);
    os << line;
  };
  for (const auto &[name, s] : table) {
    row(name, s);
    total.calls += s.calls;
    total.rounds += s.rounds;
    total.bytesSent += s.bytesSent;
    total.bytesReceived += s.bytesReceived;
    total.seconds += s.seconds;
  }
  row("total", total);
}

void printStats(std::ostream &os, const std::vector<OpStatsTable> &tables) {
  for (size_t i = 0; i < tables.size(); ++i)
    printStats(os, int(i), tables[i]);
}

} // namespace mdl::backend::mpc
