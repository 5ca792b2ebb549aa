// The HLO importer alone, for bench/hlo_import_bench.py: reads and
// translates FILE.hlo, writes the .mdl and its weight file as `mdl import`
// does, and prints the wall time and the process's peak resident memory.
// It links only the importer, so the peak is the importer's own (the `mdl`
// binary adds the fixed resident size of its statically linked JIT).
//
//   hlo_import_bench FILE.hlo OUT.mdl
//   -> seconds=0.320 peak_rss_kb=3100
#include "frontend/hlo/HloImporter.h"
#include "frontend/hlo/MdlWriter.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/resource.h>

int main(int argc, char **argv) {
  using namespace mdl;
  if (argc != 3) {
    std::fprintf(stderr, "usage: hlo_import_bench FILE.hlo OUT.mdl\n");
    return 2;
  }
  std::string out = argv[2];
  std::string weights = out.substr(0, out.find_last_of('.')) + ".safetensors";
  auto t0 = std::chrono::steady_clock::now();
  ir::DiagnosticEngine diags;
  frontend::hlo::HloImportOptions opts;
  opts.weightsOut = weights;
  opts.progress = false;
  frontend::hlo::HloImportResult r;
  if (!frontend::hlo::importHlo(argv[1], diags, opts, r)) {
    for (const ir::Diagnostic &d : diags.all())
      std::fprintf(stderr, "%s: %s\n", d.code.c_str(), d.message.c_str());
    return 1;
  }
  frontend::hlo::MdlWriteOptions wo;
  wo.names = &r.names;
  wo.weightsPath = weights;
  wo.weightsSpelling = weights.substr(weights.find_last_of('/') + 1);
  wo.weights = [&](std::string &) { return r.weights.get(); };
  std::ostringstream text;
  std::string err;
  if (!frontend::hlo::writeMdl(*r.module, text, wo, err) ||
      (r.weights && !r.weights->finish(err))) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::ofstream(out) << text.str();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("seconds=%.3f peak_rss_kb=%ld\n", secs, ru.ru_maxrss);
  return 0;
}
