"""lit configuration of onnxc's FileCheck tests (`lit -v tests/lit`).

lit runs RUN lines in its internal shell with a scrubbed environment, so the tools are found
through the running interpreter's bin directory, not the caller's PATH.
"""

import os
import sys

import lit.formats

config.name = "onnxc"  # noqa: F821 - `config` is injected by lit
config.test_format = lit.formats.ShTest()  # internal shell; ShTest(True) raises in lit 23
config.suffixes = [".mlir", ".onnxtxt", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]  # Inputs/ holds files that RUN lines read
config.test_source_root = os.path.dirname(__file__)

bin_dir = os.path.dirname(sys.executable)  # onnxc-opt, onnxc and filecheck live here
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", "")])

for var in os.environ:  # lit scrubs the environment; keep onnxc's own knobs
    if var.startswith("ONNXC_"):
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", sys.executable))
# print -> generic print -> parse -> custom print must reproduce the CHECK lines
config.substitutions.append((
    "ONNXC_ROUNDTRIP",
    "onnxc-opt %s --print-op-generic --split-input-file | onnxc-opt --split-input-file"
    " | filecheck %s",
))
# the same round trip, checked in the generic form (for GENERIC CHECK prefixes)
config.substitutions.append((
    "ONNXC_GENERIC_ROUNDTRIP",
    "onnxc-opt %s --print-op-generic --split-input-file | onnxc-opt --split-input-file"
    " --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC",
))

supported, _reason = lit_config.maxIndividualTestTimeIsSupported  # noqa: F821
if supported:  # needs psutil; without it lit would refuse the whole suite
    config.maxIndividualTestTime = 60
