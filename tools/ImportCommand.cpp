// `mdl import model.hlo -o model.mdl`: imports XLA HLO text and writes it
// as mdl source plus `model.safetensors` beside it (the large constants,
// streamed while the HLO is read, and every other non-uniform constant).
// Running the written program gives the same results as running the `.hlo`.
#include "tools/Driver.h"

#include "frontend/DiagnosticPrinter.h"
#include "frontend/SourceManager.h"
#include "frontend/hlo/HloImporter.h"
#include "frontend/hlo/MdlWriter.h"
#include "ir/passes/Verify.h"
#include "tools/OutputFiles.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace mdl::tools {

namespace {

std::string stem(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

} // namespace

int importCommand(const DriverOptions &o) {
  frontend::SourceManager sm;
  ir::DiagnosticEngine diags;
  std::unique_ptr<ir::DiagnosticHandler> printer;
  if (o.diagnostics == "json")
    printer = std::make_unique<frontend::JsonDiagnosticPrinter>(std::cerr);
  else
    printer = std::make_unique<frontend::TextDiagnosticPrinter>(std::cerr, sm);
  diags.addHandler(printer.get());
  ir::Location fileLoc;
  fileLoc.file = ir::internFile(o.file);

  std::string weightsName = stem(o.output) + ".safetensors";
  std::string weightsPath = dirOf(o.output) + weightsName;
  std::string dirError;
  if (!makeParentDirs(o.output, dirError)) {
    diags.error("E0407", fileLoc, "cannot create the output's folder: " + dirError);
    diags.flush();
    return 1;
  }
  // Neither the program nor its weight file may replace an input: the HLO
  // text or the values of its elided constants. (Checked once the folders
  // exist, so that every spelling of the output resolves.)
  for (const std::string &out : {o.output, weightsPath}) {
    std::string which;
    if (overwritesInput(out, {o.file, o.elidedWeights}, which)) {
      auto &d = diags.error("E0408", fileLoc,
                            "refusing to write '" + out + "': it is the input '" + which +
                                "', which would be lost");
      d.notes.push_back({{}, out == o.output ? "choose another output with -o"
                                             : "the weights are written beside the output, as " +
                                                   weightsName + ": choose another -o"});
      diags.flush();
      return 1;
    }
  }
  frontend::hlo::HloImportOptions ho;
  ho.weightsOut = weightsPath;
  ho.elidedWeights = o.elidedWeights;
  ho.fillElidedZeros = o.fillElided == "zeros";
  frontend::hlo::HloImportResult r;
  auto discard = [&] {
    if (r.weights) {
      std::string ignored;
      r.weights->finish(ignored);
      std::remove(weightsPath.c_str());
    }
  };
  if (!frontend::hlo::importHlo(o.file, diags, ho, r)) {
    discard();
    diags.flush();
    return 1;
  }
  std::vector<std::string> problems = passes::verifyModule(*r.module);
  if (!problems.empty()) {
    auto &d = diags.error("E0900", fileLoc, "internal error: the imported IR is malformed "
                                            "(please report this with the HLO file)");
    for (size_t i = 0; i < problems.size() && i < 20; ++i)
      d.notes.push_back({{}, problems[i]});
    discard();
    diags.flush();
    return 1;
  }

  frontend::hlo::MdlWriteOptions wo;
  wo.names = &r.names;
  wo.weightsPath = weightsPath;
  wo.weightsSpelling = weightsName;
  wo.banner = "imported from " + o.file + " by mdl import";
  wo.weights = [&](std::string &err) -> frontend::hlo::WeightWriter * {
    if (!r.weights) {
      auto w = std::make_unique<frontend::hlo::WeightWriter>();
      if (!w->open(weightsPath, err))
        return nullptr;
      r.weights = std::move(w);
    }
    return r.weights.get();
  };
  std::ostringstream text;
  std::string err;
  if (!frontend::hlo::writeMdl(*r.module, text, wo, err)) {
    diags.error("E0601", fileLoc, "cannot write the module as mdl source: " + err);
    discard();
    diags.flush();
    return 1;
  }
  std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
  out << text.str();
  out.close();
  if (!out) {
    diags.error("E0407", fileLoc, "cannot write '" + o.output + "'");
    discard();
    diags.flush();
    return 1;
  }
  size_t tensors = 0;
  uint64_t bytes = 0;
  if (r.weights) {
    tensors = r.weights->count();
    bytes = r.weights->dataBytes();
    if (!r.weights->finish(err)) {
      diags.error("E0407", fileLoc, "cannot write the weight file: " + err);
      diags.flush();
      return 1;
    }
  }
  diags.flush();
  std::cerr << "wrote " << o.output << " (" << r.module->functions.size() << " functions)";
  if (tensors)
    std::cerr << " and " << weightsPath << " (" << tensors << " tensors, " << bytes << " bytes)";
  std::cerr << "\n";
  return diags.hasErrors() ? 1 : 0;
}

} // namespace mdl::tools
