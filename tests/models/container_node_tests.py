"""onnx's node tests with sequence or optional graph inputs or outputs through
onnxc.backend (a small filter of the suite tests/models/node_suite.py runs whole):

    python tests/models/container_node_tests.py            # prints each outcome
"""

from __future__ import annotations

import re
import sys

from tests.models.string_node_tests import outcomes

CONTAINER_TESTS = re.compile(
    r"^test_(identity_sequence|if_seq|loop13_seq|loop16_seq_none|sequence_\w+"
    r"|split_to_sequence_\w+|optional_\w+|identity_opt|if_opt)_cpu$")

if __name__ == "__main__":
    for name, outcome in outcomes(CONTAINER_TESTS).items():
        print(f"{name}: {outcome}")
    sys.exit(0)
