// The `mdl` command: parses the command line (CLI11) and dispatches to the
// driver's commands. Usage errors exit with 2, program errors with 1.
#include "backend/hip/GpuProgram.h"
#include "tools/Driver.h"
#include "tools/Registration.h"

#include <CLI/CLI.hpp>
#include <llvm/Config/llvm-config.h>

#include <cstdlib>
#include <iostream>
#include <malloc.h>

using mdl::tools::DriverOptions;

namespace {

/// The names of the pipeline's steps, as --print-ir-after and --after
/// accept them.
std::string passList() {
  std::string list;
  for (const std::string &p : mdl::tools::passNames())
    list += (list.empty() ? "" : ", ") + p;
  return list;
}

/// Refuses an empty value (`--out ''`): it names no file.
CLI::Validator nonEmpty() {
  return CLI::Validator(
      [](const std::string &s) { return s.empty() ? std::string("must not be empty") : std::string(); },
      "NONEMPTY");
}

/// Refuses a NAME=VALUE option whose NAME was already given (--input,
/// --device-map): the second would silently win.
CLI::Validator uniqueKeys(std::shared_ptr<std::vector<std::string>> seen, std::string what) {
  return CLI::Validator(
      [seen, what](const std::string &s) {
        std::string key = s.substr(0, s.find('='));
        for (const std::string &k : *seen)
          if (k == key)
            return what + " '" + key + "' is given twice";
        seen->push_back(key);
        return std::string();
      },
      "");
}

void addCommon(CLI::App *cmd, DriverOptions &o) {
  cmd->add_option("FILE", o.file, "the program: .mdl source, or .hlo (XLA HLO text)")->required();
  cmd->add_option("--diagnostics", o.diagnostics,
                  "diagnostic format: text (with source lines and carets) or json (one "
                  "object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--entry", o.entry, "the function to run or check (default: main)");
  std::vector<std::string> steps = mdl::tools::passNames();
  steps.push_back("all");
  cmd->add_option("--print-ir-after", o.printIrAfter,
                  "print the IR to stderr after a pass (" + passList() + ") or 'all'")
      ->delimiter(',')
      ->check(CLI::IsMember(steps));
  cmd->add_flag("--verify-each", o.verifyEach, "verify the IR after every pass");
  cmd->add_flag("--strict-placement", o.strictPlacement,
                "make implicit transfers of placed values an error (E0302): only to() moves data");
  cmd->add_flag("--explain", o.explain,
                "report every inserted transfer (N0801) and replicated constant (N0802)");
  cmd->add_flag("--timings", o.timings, "print the time of each phase to stderr");
}

/// The options of commands that run programs (run, repl): the backend,
/// the JIT's cache and optimization level, and how devices are opened.
void addExecution(CLI::App *cmd, DriverOptions &o) {
  cmd->add_option("--backend", o.backend,
                  "execution backend: jit (native code through LLVM, the default) or interp "
                  "(the reference interpreter)")
      ->check(CLI::IsMember({"jit", "interp"}));
  cmd->add_option("--cache-dir", o.cacheDir,
                  "keep compiled functions in DIR and reuse them in later runs (jit)");
  cmd->add_option("--opt-level", o.optLevel, "LLVM optimization level of the JIT, 0 to 3")
      ->check(CLI::Range(0, 3));
  cmd->add_option("--fallback", o.fallback,
                  "when a hip device's GPU is unavailable: cpu (run it on the CPU, with a "
                  "notice; the default) or error (E0403)")
      ->check(CLI::IsMember({"cpu", "error"}));
  cmd->add_option("--gpu-runtime", o.gpuRuntime,
                  "how hip devices reach their GPU: auto (HIP for AMD, else the CUDA driver for "
                  "NVIDIA; the default), hip, cuda, or opencl (any OpenCL device, e.g. PoCL on "
                  "the CPU)")
      ->check(CLI::IsMember({"auto", "hip", "cuda", "opencl"}));
  cmd->add_option("--device-map", o.deviceMap,
                  "run declared device A on device B's runtime: A=B (repeatable), e.g. an "
                  "8-GPU program on fewer GPUs")
      ->check(uniqueKeys(std::make_shared<std::vector<std::string>>(), "the device"));
}

} // namespace

int main(int argc, char **argv) {
  // The compiler runs on a second thread (for its large stack); one malloc
  // arena keeps its many small allocations on the fast main heap instead of
  // a thread arena grown page range by page range.
  mallopt(M_ARENA_MAX, 1);
  CLI::App app{"mdl: a dataflow language for models with explicit device placement"};
  app.require_subcommand(1);
  std::vector<std::string> plugins;
  app.add_option("--device-plugin", plugins,
                 "load device kinds from a shared library (repeatable; also "
                 "$MDL_DEVICE_PLUGINS, colon-separated)");
  app.fallthrough();
  app.set_version_flag("--version", "mdl " MDL_VERSION " (built with LLVM " LLVM_VERSION_STRING ")");
  DriverOptions o;

  CLI::App *run = app.add_subcommand("run", "check, compile and run a program's entry function");
  addCommon(run, o);
  run->add_option("--input", o.inputs,
                  "an argument of the entry: NAME=FILE.npy or POSITION=FILE.npy (repeatable; "
                  ".npz archives of one array too)")
      ->check([](const std::string &s) {
        size_t eq = s.find('=');
        return eq == std::string::npos || eq == 0 || eq + 1 == s.size()
                   ? std::string("expected NAME=FILE.npy")
                   : std::string();
      })
      ->check(uniqueKeys(std::make_shared<std::vector<std::string>>(), "the input"));
  run->add_option("--out", o.outDir, "write result K to DIR/K.npy (DIR is created)")
      ->check(nonEmpty());
  addExecution(run, o);
  run->add_option("--repeat", o.repeat,
                  "run the entry N more times after the first and print min/median time per call")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--quiet,-q", o.quiet, "do not print the results");

  run->add_option("--mpc-party", o.mpcParty,
                  "run this process as party I (0, 1 or 2) of the program's mpc device, with "
                  "the other two as processes elsewhere (needs --mpc-peers and --mpc-tls); "
                  "without it the three parties are threads of this process")
      ->check(CLI::Range(0, 2));
  run->add_option("--mpc-peers", o.mpcPeers,
                  "the three parties' addresses, H0:P0,H1:P1,H2:P2 (this party listens on its own)")
      ->check(nonEmpty());
  run->add_option("--mpc-tls", o.mpcTls,
                  "directory with ca.pem, partyI.pem and partyI.key (TLS 1.3, both ends "
                  "checked; `mdl mpc-certs DIR` makes test ones)")
      ->check(CLI::ExistingDirectory);
  run->add_option("--mpc-timeout", o.mpcTimeout,
                  "seconds to wait for the other parties: to connect, and at every exchange "
                  "(default 30)")
      ->check(CLI::Range(0.1, 86400.0));
  run->add_option("--mpc-test-seed", o.mpcTestSeed,
                  "TESTING ONLY: derive the parties' shared randomness from this seed instead "
                  "of the OS's entropy, so that runs repeat exactly (the same in every party)")
      ->check(CLI::NonNegativeNumber);
  for (const char *needed : {"--mpc-peers", "--mpc-tls"}) {
    run->get_option("--mpc-party")->needs(run->get_option(needed));
    run->get_option(needed)->needs(run->get_option("--mpc-party"));
  }

  CLI::App *check = app.add_subcommand("check", "report all diagnostics of a program");
  addCommon(check, o);

  CLI::App *ir = app.add_subcommand("ir", "print the program's IR (parseable text)");
  addCommon(ir, o);
  ir->add_option("--after", o.after,
                 "print the IR after this pass: " + passList() +
                     " (default: lower; canonicalize and fuse prepare for the JIT)")
      ->check(CLI::IsMember(mdl::tools::passNames()));

  CLI::App *graph = app.add_subcommand(
      "graph", "draw the partitioned graph: one cluster per device, transfers highlighted");
  addCommon(graph, o);
  graph->add_option("-o,--output", o.output,
                    "the picture to write: .svg, .png (through Graphviz's dot) or .dot "
                    "(folders are created)")
      ->required()
      ->check([](const std::string &s) {
        for (const char *ext : {".svg", ".png", ".dot"})
          if (s.size() > 4 && s.compare(s.size() - 4, 4, ext) == 0)
            return std::string();
        return std::string("the output must end in .svg, .png or .dot");
      });

  CLI::App *compile = app.add_subcommand(
      "compile", "compile the GPU segments of a program ahead of time: code objects (.hsaco), "
                 "PTX or SPIR bitcode, the GPU programs, and manifest.json");
  addCommon(compile, o);
  compile->add_option("--gpu-arch", o.gpuArch, "the GPU to compile for")
      ->required()
      ->check(CLI::IsMember(mdl::backend::hip::knownGpuTargets()));
  compile->add_option("-o,--output", o.outDir,
                      "the folder to write into (created; nothing in it may be an input)")
      ->required()
      ->check(nonEmpty());

  CLI::App *certs = app.add_subcommand(
      "mpc-certs", "make a test certificate authority and certificates for the three parties "
                   "of an mpc device (for trying --mpc-party; not for production)");
  certs->add_option("DIR", o.output, "the directory to write ca.pem, partyI.pem, partyI.key into "
                                     "(created if missing)")
      ->required()
      ->check(nonEmpty());
  certs->add_flag("--force", o.force, "replace certificates already in DIR");

  CLI::App *imp = app.add_subcommand(
      "import", "convert XLA HLO text to an mdl program and a safetensors weight file");
  imp->add_option("FILE", o.file, "the .hlo file")->required();
  imp->add_option("-o,--output", o.output,
                  "the .mdl file to write (weights go beside it, as NAME.safetensors; folders "
                  "are created; never one of the inputs)")
      ->required()
      ->check(nonEmpty());
  imp->add_option("--weights", o.elidedWeights,
                  "a safetensors file with values for elided constants, keyed by instruction name");
  imp->add_option("--fill-elided", o.fillElided,
                  "fill elided constants instead: 'zeros' (with a warning)")
      ->check(CLI::IsMember({"zeros"}));
  imp->add_option("--diagnostics", o.diagnostics, "diagnostic format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  CLI::App *repl = app.add_subcommand(
      "repl", "an interactive session: definitions persist, and each expression is compiled "
              "(incrementally, on the JIT) and run as it is entered");
  repl->add_option("FILE", o.file, "a program whose definitions are loaded first");
  repl->add_option("--diagnostics", o.diagnostics,
                   "diagnostic format: text (with source lines and carets) or json (one "
                   "object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  addExecution(repl, o);
  repl->add_flag("--strict-placement", o.strictPlacement,
                 "make implicit transfers of placed values an error (E0302)");
  repl->add_flag("--timings", o.timings,
                 "after each evaluation, print the time of each phase and the functions "
                 "compiled and taken from the compile cache");
  repl->footer("\nOn a terminal, lines are edited (history in ~/.mdl_history); other input is "
               "read statement by statement, without prompts.\n\n" +
               mdl::tools::replHelp());
  for (CLI::App *c : {run, check, ir, compile}) {
    c->add_option("--weights", o.elidedWeights,
                  "(.hlo input) values for elided constants, keyed by instruction name");
    c->add_option("--fill-elided", o.fillElided,
                  "(.hlo input) fill elided constants: 'zeros' (with a warning)")
        ->check(CLI::IsMember({"zeros"}));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
    return 2;
  }
  // Device kinds are registered here, explicitly, before anything is read.
  if (const char *env = std::getenv("MDL_DEVICE_PLUGINS"))
    for (std::string rest = env; !rest.empty();) {
      size_t colon = rest.find(':');
      if (!rest.substr(0, colon).empty())
        plugins.push_back(rest.substr(0, colon));
      rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
    }
  std::string pluginError;
  if (!mdl::tools::registerDeviceKinds(plugins, pluginError)) {
    std::cerr << "error: " << pluginError << "\n";
    return 2;
  }
  if (run->parsed())
    return mdl::tools::withLargeStack(mdl::tools::runCommand, o);
  if (check->parsed())
    return mdl::tools::withLargeStack(mdl::tools::checkCommand, o);
  if (graph->parsed())
    return mdl::tools::withLargeStack(mdl::tools::graphCommand, o);
  if (certs->parsed())
    return mdl::tools::mpcCertsCommand(o);
  if (compile->parsed())
    return mdl::tools::withLargeStack(mdl::tools::compileCommand, o);
  if (imp->parsed())
    return mdl::tools::withLargeStack(mdl::tools::importCommand, o);
  if (repl->parsed())
    return mdl::tools::withLargeStack(mdl::tools::replCommand, o);
  return mdl::tools::withLargeStack(mdl::tools::irCommand, o);
}
