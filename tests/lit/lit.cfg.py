# lit configuration for mdl's golden tests: a test is a .mdl (or .hlo, .test)
# file with RUN: lines; outputs are checked with FileCheck.
import os
import lit.formats

config.name = "mdl"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mdl", ".hlo", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.mdl_bin), "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.mdl_bin, config.llvm_tools, config.environment.get("PATH", "/usr/bin:/bin")])
config.substitutions.append(("%conformance", config.conformance_dir))
config.substitutions.append(("%shared", config.shared_dir))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%repo", config.repo_root))

import os as _os
_plugin = _os.environ.get("MDL_TEST_PLUGIN") or _os.path.join(
    _os.path.dirname(config.mdl_bin), "tests", "libmdl_test_device_plugin.so")
config.substitutions.append(("%testplugin", _plugin))

# CUDA's PTX assembler, where installed (/usr/local/cuda is not part of a
# Debian set-up): tests that need it are reported UNSUPPORTED without it.
import shutil as _shutil
_ptxas = _shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                    if _os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
