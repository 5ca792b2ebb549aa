// The `mdl` command: parses the command line (CLI11) and dispatches to the
// driver's commands. Usage errors exit with 2, program errors with 1.
#include "tools/Driver.h"

#include <CLI/CLI.hpp>

#include <iostream>

using mdl::tools::DriverOptions;

namespace {

void addCommon(CLI::App *cmd, DriverOptions &o) {
  cmd->add_option("FILE", o.file, "the .mdl program")->required();
  cmd->add_option("--diagnostics", o.diagnostics,
                  "diagnostic format: text (with source lines and carets) or json (one "
                  "object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--entry", o.entry, "the function to run or check (default: main)");
  cmd->add_option("--print-ir-after", o.printIrAfter,
                  "print the IR to stderr after a pass (lower, specialize) or 'all'")
      ->delimiter(',');
  cmd->add_flag("--verify-each", o.verifyEach, "verify the IR after every pass");
  cmd->add_flag("--timings", o.timings, "print the time of each phase to stderr");
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mdl: a dataflow language for models with explicit device placement"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mdl 0.1.0");
  DriverOptions o;

  CLI::App *run = app.add_subcommand("run", "check, compile and run a program's entry function");
  addCommon(run, o);
  run->add_option("--input", o.inputs,
                  "an argument of the entry: NAME=FILE.npy or POSITION=FILE.npy (repeatable)")
      ->check([](const std::string &s) {
        return s.find('=') == std::string::npos || s.front() == '='
                   ? std::string("expected NAME=FILE.npy")
                   : std::string();
      });
  run->add_option("--out", o.outDir, "write result K to DIR/K.npy");
  run->add_option("--backend", o.backend,
                  "execution backend: interp (the reference interpreter; the JIT is not built yet)")
      ->check(CLI::IsMember({"interp"}));
  run->add_option("--repeat", o.repeat,
                  "run the entry N more times after the first and print min/median time per call")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--quiet,-q", o.quiet, "do not print the results");

  CLI::App *check = app.add_subcommand("check", "report all diagnostics of a program");
  addCommon(check, o);

  CLI::App *ir = app.add_subcommand("ir", "print the program's IR (parseable text)");
  addCommon(ir, o);
  ir->add_option("--after", o.after, "print the IR after this pass: lower (default), specialize")
      ->check(CLI::IsMember({"lower", "specialize"}));

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
  if (run->parsed())
    return mdl::tools::withLargeStack(mdl::tools::runCommand, o);
  if (check->parsed())
    return mdl::tools::withLargeStack(mdl::tools::checkCommand, o);
  return mdl::tools::withLargeStack(mdl::tools::irCommand, o);
}
