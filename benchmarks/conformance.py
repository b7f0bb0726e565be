"""ONNX conformance: onnx's own `BackendTest` suites run against onnxc (or onnxruntime).

    python benchmarks/conformance.py run --backend onnxc --suites node --out /tmp/onnxc.jsonl
    python benchmarks/conformance.py run --backend ort --out /tmp/ort.jsonl
    python benchmarks/conformance.py report /tmp/onnxc.jsonl --compare /tmp/ort.jsonl \
        --markdown docs/conformance.md

Every test runs in a worker process (multiprocessing, spawn) that builds one
`onnx.backend.test.BackendTest` and calls the suite's own test functions, so the loading,
input normalisation and `assert_similar_outputs` tolerances are exactly onnx's. A worker that
crashes (segfault, abort) or exceeds the per-test timeout is killed and replaced; the test is
recorded as `crash` or `timeout` and the run goes on. Results are appended to a JSON-lines
file as they arrive, so `--resume` continues an interrupted run.

Outcomes: `passed`; `failed` (wrong values: AssertionError); `unsupported` (onnxc raised
UnsupportedOpError, or the backend declared the model incompatible, i.e. it holds an op type
onnxc has no converter for); `error` (any other exception; `typed` says whether it was an
`OnnxcError`); `skipped` (onnxruntime refusing a model, a suite data file missing); `crash`;
`timeout`.

Backends: `onnxc` (onnxc.backend, cache off); `ort` = onnxruntime.backend with the harness
fixes facts.md describes (IR version re-stamped to what onnxruntime reads, scalar inputs
wrapped as arrays, unreleased opsets allowed); `ort-shipped` = onnxruntime.backend as is.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

SUITES = {  # suite name -> (BackendTest category, loader kind)
    "node": ("Node", "node"),
    "pytorch-converted": ("PyTorchConverted", "pytorch-converted"),
    "pytorch-operator": ("PyTorchOperator", "pytorch-operator"),
    "simple": ("Simple", "simple"),
    "light": ("Real", "real"),
}
ORT_MAX_IR_VERSION = 11
OUTCOMES = ("passed", "failed", "unsupported", "error", "crash", "timeout", "skipped")


# ---------------------------------------------------------------------------------- backends


def _ort_backend(fixed: bool):
    if fixed:
        os.environ["ALLOW_RELEASED_ONNX_OPSET_ONLY"] = "0"
    import numpy as np
    import onnx
    import onnxruntime.backend as ort_backend
    from onnx.backend.base import Backend, BackendRep

    if not fixed:
        return ort_backend

    class Rep(BackendRep):
        def __init__(self, rep):
            self.rep = rep

        def run(self, inputs, **kwargs):
            if isinstance(inputs, list | tuple):
                inputs = [np.asarray(x) if isinstance(x, np.generic) else x for x in inputs]
            return self.rep.run(inputs, **kwargs)

    class FixedOrt(Backend):
        """onnxruntime.backend with facts.md's harness fixes."""

        @classmethod
        def is_compatible(cls, model, device="CPU", **kwargs):
            return ort_backend.is_compatible(model, device)

        @classmethod
        def supports_device(cls, device):
            return ort_backend.supports_device(device)

        @classmethod
        def prepare(cls, model, device="CPU", **kwargs):
            model = onnx.ModelProto.FromString(model.SerializeToString())
            model.ir_version = min(model.ir_version, ORT_MAX_IR_VERSION)
            return Rep(ort_backend.prepare(model, device, **kwargs))

    return FixedOrt


def load_backend(name: str):
    if name == "onnxc":
        # measure compilation, do not fill a cache (ONNXC_CACHE=1: run against the cache)
        os.environ.setdefault("ONNXC_CACHE", "0")
        import onnxc.backend

        return onnxc.backend.OnnxcBackend
    if name in ("ort", "ort-shipped"):
        return _ort_backend(fixed=name == "ort")
    raise SystemExit(f"unknown backend {name!r}")


# ---------------------------------------------------------------------------------- one test


def _classify(error: BaseException, backend_name: str, model) -> tuple[str, str]:
    """(outcome, detail) of a test that raised `error`."""
    import unittest

    from onnxc.errors import OnnxcError, UnsupportedOpError

    if isinstance(error, UnsupportedOpError):  # before SkipTest: the backend's is both
        return "unsupported", str(error)[:300]
    if isinstance(error, unittest.SkipTest):
        if backend_name == "onnxc" and model is not None:
            from onnxc.backend import unsupported_op_types

            missing = unsupported_op_types(model)
            if missing:
                return "unsupported", "op types: " + ", ".join(missing)
        return "skipped", str(error)[:300]
    if isinstance(error, AssertionError):
        return "failed", str(error).strip()[:300]
    kind = "OnnxcError" if isinstance(error, OnnxcError) else "untyped"
    return "error", f"{kind} {type(error).__name__}: {str(error).strip()[:300]}"


def _worker(conn, backend_name: str) -> None:
    """Build the suite once, then run the test names the parent sends, one at a time."""
    import warnings

    warnings.filterwarnings("ignore")
    import onnx.backend.test

    backend = load_backend(backend_name)
    runner = onnx.backend.test.BackendTest(backend, __name__)
    items = {name: item for category in runner._test_items.values()
             for name, item in category.items()}
    conn.send("ready")
    while True:
        name = conn.recv()
        if name is None:
            return
        item = items[name]
        item.proto[0] = None
        start = time.perf_counter()
        try:
            item.func(None)
            outcome, detail = "passed", ""
        except BaseException as error:  # every failure is a result
            if isinstance(error, KeyboardInterrupt):
                raise
            try:
                outcome, detail = _classify(error, backend_name, item.proto[0])
            except Exception:  # noqa: BLE001
                outcome, detail = "error", traceback.format_exc()[-300:]
        conn.send((name, outcome, detail, time.perf_counter() - start))


class WorkerPool:
    """One worker process at a time per slot; replaced when it crashes or times out."""

    def __init__(self, backend_name: str):
        self.backend_name = backend_name
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.backend_name),
                                     daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(600) or parent.recv() != "ready":
            raise RuntimeError("conformance worker did not start")

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
        self.proc = None

    def run(self, name: str, timeout: float) -> tuple[str, str, str, float]:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        start = time.perf_counter()
        self.conn.send(name)
        try:
            ready = self.conn.poll(timeout)
            if ready:
                return self.conn.recv()
        except (EOFError, ConnectionResetError):
            ready = True
        elapsed = time.perf_counter() - start
        if ready or not self.proc.is_alive():
            self.proc.join(5)
            code = self.proc.exitcode
            self._kill()
            return name, "crash", f"worker died (exit code {code})", elapsed
        self._kill()
        return name, "timeout", f"no result after {timeout:.0f} s", elapsed

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(10)
        self._kill()


# ---------------------------------------------------------------------------------- test lists


def _test_cases() -> dict[str, tuple[str, list[str]]]:
    """`test_x_cpu` -> (suite, the op types of its graph) for every test of the five suites."""
    import onnx
    from onnx.backend.test.loader import load_model_tests

    tests = {}
    for suite, (_, kind) in SUITES.items():
        for case in load_model_tests(kind=kind):
            if suite == "light" and not (case.url or "").startswith("onnx/backend/test/data/light"):
                continue
            model = case.model
            if model is None and case.model_dir is not None:
                path = os.path.join(case.model_dir, "model.onnx")
                model = onnx.load(path, load_external_data=False) if os.path.exists(path) \
                    else None
            types = [n.op_type for n in model.graph.node] if model is not None else []
            tests[f"{case.name}_cpu"] = (suite, types)
    return tests


def op_types_of(tests: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    """The op type a node test checks: its single node's, or for `_expanded` function-body
    tests (and other multi-node graphs) the op type of the test it expands."""
    ops: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, (suite, types) in tests.items():
        if suite != "node" or not types:
            continue
        if len(types) == 1:
            ops[name] = types[0]
        else:
            multi[name] = types
    for name, types in multi.items():
        base = re.sub(r"_expanded(_ver\d+)?_cpu$", "_cpu", name)
        non_const = [t for t in types if t != "Constant"] or types
        ops[name] = ops.get(base) or non_const[-1]
    return ops


# ---------------------------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore")  # the suite's generators warn on import
    tests = _test_cases()
    suites = args.suites.split(",")
    order = list(SUITES)
    names = sorted((n for n, (s, _) in tests.items() if s in suites),
                   key=lambda n: (order.index(tests[n][0]), n))
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]
    out = Path(args.out)
    done = set()
    if args.resume and out.exists():
        done = {json.loads(line)["test"] for line in out.read_text().splitlines() if line}
    else:
        out.write_text("")
    ops = op_types_of(tests)
    listed = listed_op_types() if args.backend == "onnxc" else set()
    pool = WorkerPool(args.backend)
    todo = [n for n in names if n not in done]
    print(f"{args.backend}: {len(todo)} test(s) to run ({len(done)} already done)", flush=True)
    counts: Counter[str] = Counter()
    try:
        with out.open("a") as sink:
            for i, name in enumerate(todo, 1):
                suite = tests[name][0]
                timeout = args.timeout * (4 if suite == "light" else 1)
                _, outcome, detail, seconds = pool.run(name, timeout)
                counts[outcome] += 1
                record = {"test": name, "suite": suite, "op": ops.get(name, ""),
                          "listed": ops.get(name) in listed, "outcome": outcome,
                          "detail": detail, "seconds": round(seconds, 3)}
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                if args.verbose or outcome in ("crash", "timeout") or i % 50 == 0:
                    print(f"[{i}/{len(todo)}] {name}: {outcome} {detail[:120]}  "
                          f"totals {dict(counts)}", flush=True)
    finally:
        pool.close()
    print(f"{args.backend}: {dict(counts)}")


def _load(path: str) -> dict[str, dict]:
    return {r["test"]: r for r in map(json.loads, Path(path).read_text().splitlines())}


def _missing_ops(results: dict[str, dict]) -> Counter[str]:
    """What made tests unsupported, counted per test: op types with no converter, ops onnxc
    folds only on constants, element types, and attribute values (per op type)."""
    missing: Counter[str] = Counter()
    for r in results.values():
        if r["outcome"] != "unsupported":
            continue
        detail = r["detail"]
        if detail.startswith("op types: "):
            missing.update(detail[len("op types: "):].split(", "))
            continue
        found = re.match(r"unsupported op '([^']+)'", detail)
        op = found.group(1) if found else "?"
        dtype = re.search(r"element type (\w+)", detail)
        if op in ("graph input", "initializer") and dtype:
            missing[f"element type {dtype.group(1)}"] += 1
        elif "has no equivalent" in detail:
            missing[op] += 1
            also = re.search(r"also unsupported: ([\w, ]+)", detail)
            if also:
                missing.update(o.strip() for o in also.group(1).split(","))
        elif "must be a constant" in detail:
            missing[f"{op} (needs a constant input)"] += 1
        elif "compile-time constant" in detail:
            missing[f"{op} (constant inputs only)"] += 1
        else:
            missing[f"{op} (attribute value or type)"] += 1
    return missing


def listed_op_types() -> set[str]:
    """The op types onnxc lists as supported: those with a converter (ops it can only fold
    on compile-time constants are not listed)."""
    from onnxc.frontend.onnx_converters import CONVERTERS

    return set(CONVERTERS)


def render_markdown(ours: dict[str, dict], theirs: dict[str, dict] | None, header: str) -> str:
    """The per-suite summary, per-op node table and non-node test list as markdown."""
    lines = [header, ""]
    lines += ["## Summary", "",
              "| suite | tests | " + " | ".join(OUTCOMES) + (" | onnxruntime passed |"
                                                         if theirs else " |")]
    lines.append("|---" * (2 + len(OUTCOMES) + (1 if theirs else 0)) + "|")
    for suite in [*SUITES, "total"]:
        rows = [r for r in ours.values() if suite in ("total", r["suite"])]
        if not rows:
            continue
        c = Counter(r["outcome"] for r in rows)
        cells = [suite, str(len(rows)), *(str(c[o]) for o in OUTCOMES)]
        if theirs:
            cells.append(str(sum(1 for r in rows
                                 if theirs.get(r["test"], {}).get("outcome") == "passed")))
        lines.append("| " + " | ".join(cells) + " |")
    node = [r for r in ours.values() if r["suite"] == "node"]
    if any("listed" in r for r in node):  # recorded at run time: the converters of that tree
        covered = [r for r in node if r.get("listed")]
    else:
        listed = listed_op_types()
        covered = [r for r in node if r["op"] in listed]
    if node:
        passed = sum(r["outcome"] == "passed" for r in covered)
        n_ops = len({r["op"] for r in covered})
        lines += ["", (f"{len(covered)} node tests check an op type onnxc lists as supported "
                       f"(one with a converter: {n_ops} of the suite's op types) and {passed} "
                       f"of those pass ({100 * passed / max(len(covered), 1):.1f}%).")]
    bad = sorted((r for r in ours.values()
                  if r["outcome"] in ("failed", "error", "crash", "timeout")),
                 key=lambda r: (r["suite"], r["test"]))
    if bad:
        lines += ["", "## Failures and errors", "", "| suite | test | outcome | detail |",
                  "|---|---|---|---|"]
        for r in bad:
            detail = r["detail"].replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {r['suite']} | {r['test']} | {r['outcome']} | {detail} |")
    missing = _missing_ops(ours)
    if missing:
        lines += ["", "## Missing op types by test count", "",
                  ", ".join(f"{op} ({n})" for op, n in missing.most_common())]
    lines += ["", "## Node suite by op type", "",
              "| op type | tests | passed | failed | unsupported | error | crash/timeout |"
              + (" onnxruntime passed |" if theirs else ""),
              "|---|---|---|---|---|---|---|" + ("---|" if theirs else "")]
    by_op: dict[str, list[dict]] = defaultdict(list)
    for r in node:
        by_op[r["op"]].append(r)
    for op in sorted(by_op):
        c = Counter(r["outcome"] for r in by_op[op])
        cells = [op, str(len(by_op[op])), str(c["passed"]), str(c["failed"]),
                 str(c["unsupported"]), str(c["error"]), str(c["crash"] + c["timeout"])]
        if theirs:
            cells.append(str(sum(theirs.get(r["test"], {}).get("outcome") == "passed"
                                 for r in by_op[op])))
        lines.append("| " + " | ".join(cells) + " |")
    others = sorted((r for r in ours.values() if r["suite"] != "node"),
                    key=lambda r: (r["suite"], r["test"]))
    if others:
        lines += ["", "## Model suites, test by test", "",
                  "| suite | test | outcome | detail |" + (" onnxruntime |" if theirs else ""),
                  "|---|---|---|---|" + ("---|" if theirs else "")]
        for r in others:
            detail = r["detail"].replace("|", "\\|").replace("\n", " ")[:140]
            cells = [r["suite"], r["test"], r["outcome"], detail]
            if theirs:
                cells.append(theirs.get(r["test"], {}).get("outcome", "-"))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def cmd_report(args: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    ours = _load(args.results)
    ops = op_types_of(_test_cases())
    for r in ours.values():
        r["op"] = r.get("op") or ops.get(r["test"], "")
    theirs = _load(args.compare) if args.compare else None
    header = Path(args.header_file).read_text().rstrip() if args.header_file \
        else "# ONNX backend conformance"
    text = render_markdown(ours, theirs, header)
    if args.markdown:
        Path(args.markdown).write_text(text)
    else:
        print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the suites, append results to --out (JSON lines)")
    run.add_argument("--backend", default="onnxc", choices=["onnxc", "ort", "ort-shipped"])
    run.add_argument("--suites", default=",".join(SUITES))
    run.add_argument("--filter", help="regex on test names (e.g. '^test_relu')")
    run.add_argument("--timeout", type=float, default=120.0, help="seconds per test "
                     "(4x for the light model-zoo suite)")
    run.add_argument("--out", required=True)
    run.add_argument("--resume", action="store_true")
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(func=cmd_run)
    report = sub.add_parser("report", help="render results as markdown")
    report.add_argument("results")
    report.add_argument("--compare", help="results of another backend (onnxruntime)")
    report.add_argument("--markdown", help="write here instead of stdout")
    report.add_argument("--header-file", help="markdown to put above the tables")
    report.set_defaults(func=cmd_report)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
