"""Run N examples of the differential fuzz test without stopping at the first mismatch.

    python benchmarks/fuzz_survey.py 2000 /tmp/fuzz.json

tests/unit/test_fuzz.py stops (and shrinks) at the first failing graph; this survey draws
from the same generator and checks with the same comparison, but records every failure
(op list, error, the model in ONNX text syntax, the feeds) in a JSON file, so one long run
shows every class of mismatch and how often it occurs.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import onnx
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
import test_fuzz  # the generator lives with the test


def main(argv: list[str]) -> None:
    examples, out = int(argv[0]), Path(argv[1])
    counts: collections.Counter[str] = collections.Counter()
    failures: list[dict] = []

    def save() -> None:
        out.write_text(json.dumps({"counts": counts, "failures": failures}, indent=1))

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(test_fuzz.graphs())
    def survey(case) -> None:
        model, feeds, invalid = case
        counts["examples"] += 1
        counts["with out-of-range indices"] += bool(invalid)
        try:
            test_fuzz.check_against_reference(model, feeds, invalid)
            counts["passed"] += 1
        except Exception as error:  # noqa: BLE001 - every failure is recorded
            counts["mismatch" if isinstance(error, AssertionError) else
                   type(error).__name__] += 1
            failures.append({
                "ops": [n.op_type for n in model.graph.node],
                "error": f"{type(error).__name__}: {str(error)[:600]}",
                "model": onnx.printer.to_text(model),
                "feeds": {k: v.tolist() for k, v in feeds.items()},
            })
            save()

    survey()
    save()
    print(dict(counts))


if __name__ == "__main__":
    main(sys.argv[1:])
