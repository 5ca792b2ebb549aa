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
