"""Every lit case of the redundant, inverse-pair, forwarding and control-flow rows keeps its
numbers.

Each `// -----` case of tests/lit/passes/<row>.mlir is evaluated with the numpy evaluator
before and after its row's pass (check_pass_equivalence); a row must rewrite at least one of
its cases, so a pass that silently stops firing fails here too.
"""

from pathlib import Path

import pytest

from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph, split_lit_cases

LIT = Path(__file__).parents[1] / "lit" / "passes"
ROWS = ['drop-no-op', 'drop-noop-cast', 'drop-full-slice', 'drop-identity-pool', 'drop-layout-cast-at-output', 'drop-orphans', 'drop-reshape-before-binary', 'drop-flatten-after-global-pool', 'drop-flatten-after-linear', 'merge-reshapes', 'merge-casts', 'cancel-squeeze-unsqueeze', 'cancel-transposes', 'cancel-layout-conversions', 'cancel-quant-dequant', 'cancel-concat-slice', 'slice-before-elementwise', 'transpose-through-elementwise', 'reduce-before-shift', 'fold-constant-if', 'hoist-loop-invariants', 'drop-padding-taps']


@pytest.mark.parametrize("row", ROWS)
def test_lit_cases_keep_their_results(row):
    changed = 0
    for case in split_lit_cases(LIT / f"{row}.mlir"):
        module = parse_graph(case)
        after = check_pass_equivalence(module, row)
        changed += str(after) != str(module)
    assert changed >= 1, f"{row} rewrote none of its lit cases"
