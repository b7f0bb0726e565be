"""Survey: what onnxc does with each model of the real-export corpus.

Runs in onnxc's environment (no torch):

    python tests/models/real_exports/survey.py                 # every model
    python tests/models/real_exports/survey.py llama bert      # some (results merged)
    python tests/models/real_exports/survey.py --timeout 600

Per model: (a) onnxruntime runs every shape case (this checks the corpus: it must succeed);
(b) `onnxc.compile(model, cache_dir=False)` keeping the symbolic dimensions, success or the
exception's type and the first 300 characters of its message; (c) if that compiled, every
case run and compared with onnxruntime (max abs error, and the max abs error over the
reference's max abs value), and with onnxruntime without graph optimizations too
(`vs_ort_noopt`: its fusions change numerics); (d) a compile with `input_shapes=` fixed to
each case, run on that case and compared the same way. Every compile runs in a fresh subprocess with a timeout
(a crash or a hang is recorded, not fatal); onnxc and onnxruntime use one thread each.
Prints a table and writes survey_results.json next to this file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus

RESULTS = HERE / "survey_results.json"
MESSAGE_CHARS = 300


def _ort_session(model_bytes: bytes, optimize: bool = True):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _feeds(name: str, case: str) -> dict[str, np.ndarray]:
    return corpus.feeds(name, case, np.random.default_rng(1234))


def _error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "module": type(exc).__module__,
            "message": str(exc)[:MESSAGE_CHARS]}


def compare(ours: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> dict:
    """Per output: shape agreement and the largest errors; overall max_abs / max_rel."""
    outputs = {}
    max_abs = max_rel = 0.0
    ok = True
    for name, ref in reference.items():
        if name not in ours:
            outputs[name] = {"error": "missing"}
            ok = False
            continue
        got = np.asarray(ours[name])
        if got.shape != ref.shape:
            outputs[name] = {"error": f"shape {list(got.shape)} != onnxruntime {list(ref.shape)}"}
            ok = False
            continue
        if ref.size == 0:
            outputs[name] = {"max_abs": 0.0, "max_rel": 0.0}
            continue
        if ref.dtype.kind in "fc":
            a, b = got.astype(np.float64), ref.astype(np.float64)
            if not np.all(np.isfinite(a) == np.isfinite(b)):
                outputs[name] = {"error": "non-finite values where onnxruntime has finite ones"}
                ok = False
                continue
            finite = np.isfinite(b)
            abs_err = float(np.max(np.abs(a - b)[finite])) if finite.any() else 0.0
            scale = float(np.max(np.abs(b[finite]))) if finite.any() else 0.0
            rel_err = abs_err / scale if scale > 0 else abs_err
            outputs[name] = {"max_abs": abs_err, "max_rel": rel_err}
        else:
            mismatches = int(np.count_nonzero(got != ref))
            abs_err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            rel_err = abs_err
            outputs[name] = {"max_abs": abs_err, "max_rel": rel_err, "mismatches": mismatches}
        max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
    return {"ok": ok, "max_abs": max_abs, "max_rel": max_rel, "outputs": outputs}


# --- the worker (one compile in a fresh process) ---------------------------------------------

def worker(name: str, mode: str, refdir: Path, out: Path) -> None:
    """mode: 'symbolic' (compile once, run every case) or 'fixed:<case>'."""
    import onnxc
    result: dict = {"mode": mode}
    cases = list(corpus.cases(name)) if mode == "symbolic" else [mode.split(":", 1)[1]]
    kwargs = {"cache_dir": False, "num_threads": 1, "quiet": True}
    if mode != "symbolic":
        kwargs["input_shapes"] = corpus.input_shapes(name, cases[0])
    model = corpus.load(name)
    start = time.perf_counter()
    try:
        compiled = onnxc.compile(model, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the survey records whatever it is
        result.update(compiled=False, error=_error(exc), compile_s=time.perf_counter() - start,
                      traceback=traceback.format_exc()[-2000:])
        out.write_text(json.dumps(result))
        return
    result.update(compiled=True, compile_s=time.perf_counter() - start, cases={})
    out.write_text(json.dumps(result))
    for case in cases:
        reference = dict(np.load(refdir / f"{case}.npz"))
        try:
            t0 = time.perf_counter()
            values = compiled.run(None, _feeds(name, case))
            run_s = time.perf_counter() - t0
            ours = dict(zip(compiled.output_names, values))
            result["cases"][case] = {"ran": True, "run_s": run_s, **compare(ours, reference)}
            noopt = refdir / f"{case}.noopt.npz"
            if noopt.exists():
                other = compare(ours, dict(np.load(noopt)))
                result["cases"][case]["vs_ort_noopt"] = {
                    k: other[k] for k in ("ok", "max_abs", "max_rel")}
        except BaseException as exc:  # noqa: BLE001
            result["cases"][case] = {"ran": False, "error": _error(exc),
                                     "traceback": traceback.format_exc()[-2000:]}
        out.write_text(json.dumps(result))


def _run_worker(name: str, mode: str, refdir: Path, timeout: float) -> dict:
    out = refdir / f"result_{mode.replace(':', '_')}.json"
    env = dict(os.environ, ONNXC_NUM_THREADS="1", OMP_NUM_THREADS="1", ONNXC_CACHE="0")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, mode, str(refdir),
           str(out)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              check=False)
    except subprocess.TimeoutExpired:
        partial = json.loads(out.read_text()) if out.exists() else {}
        partial.update(mode=mode, timeout=True,
                       error={"type": "Timeout", "message": f"no result after {timeout:.0f} s"})
        partial.setdefault("compiled", None)
        return partial
    if out.exists():
        result = json.loads(out.read_text())
    else:
        result = {"mode": mode, "compiled": None}
    if proc.returncode != 0:
        result["crash"] = {"returncode": proc.returncode, "stderr": proc.stderr[-1500:]}
        if "error" not in result and result.get("compiled") is not True:
            result["error"] = {"type": "Crash", "message": f"worker exited {proc.returncode}: "
                               + proc.stderr.strip()[-MESSAGE_CHARS:]}
    result["wall_s"] = time.perf_counter() - start
    return result


# --- the survey ---------------------------------------------------------------------------------

def survey_model(name: str, timeout: float, fixed: bool) -> dict:
    entry = corpus.entry(name)
    record: dict = {"file": entry["file"], "tool": entry["tool"], "bytes": entry["bytes"],
                    "cases": list(entry["cases"])}
    with tempfile.TemporaryDirectory(prefix=f"survey_{name}_") as tmp:
        refdir = Path(tmp)
        # (a) onnxruntime
        ort_result = {}
        try:
            session = _ort_session(corpus.load_bytes(name))
            names = [o.name for o in session.get_outputs()]
            for case in entry["cases"]:
                try:
                    values = session.run(None, _feeds(name, case))
                    np.savez(refdir / f"{case}.npz", **dict(zip(names, values)))
                    finite = all(np.all(np.isfinite(v)) for v in values if v.dtype.kind == "f")
                    ort_result[case] = {"ok": finite, "shapes": {n: list(v.shape)
                                                                 for n, v in zip(names, values)}}
                except Exception as exc:  # noqa: BLE001
                    ort_result[case] = {"ok": False, "error": _error(exc)}
        except Exception as exc:  # noqa: BLE001
            ort_result = {"_session": {"ok": False, "error": _error(exc)}}
        record["onnxruntime"] = ort_result
        record["onnxruntime_ok"] = all(r.get("ok") for r in ort_result.values())
        if not record["onnxruntime_ok"]:
            return record
        # the second reference: onnxruntime without its graph optimizations (its fusions
        # change numerics: DequantizeLinear + MatMul becomes MatMulNBits with int8 activations)
        try:
            session = _ort_session(corpus.load_bytes(name), optimize=False)
            for case in entry["cases"]:
                values = session.run(None, _feeds(name, case))
                np.savez(refdir / f"{case}.noopt.npz", **dict(zip(names, values)))
        except Exception as exc:  # noqa: BLE001
            record["onnxruntime_noopt_error"] = _error(exc)
        # (b, c) symbolic compile
        record["symbolic"] = _run_worker(name, "symbolic", refdir, timeout)
        # (d) fixed shapes
        if fixed:
            record["fixed"] = {case: _run_worker(name, f"fixed:{case}", refdir, timeout)
                               for case in entry["cases"]}
    return record


def _summary(result: dict | None) -> tuple[str, str]:
    """(compile status, error or max error) for one compile."""
    if result is None:
        return "-", ""
    if result.get("timeout"):
        return "timeout", ""
    if not result.get("compiled"):
        err = result.get("error", {})
        return err.get("type", "failed"), err.get("message", "").replace("\n", " ")[:120]
    cases = result.get("cases", {})
    bad = [c for c, r in cases.items() if not r.get("ran") or not r.get("ok")]
    worst = max((r.get("max_rel", 0.0) for r in cases.values() if r.get("ran")), default=0.0)
    worst_noopt = max((r.get("vs_ort_noopt", {}).get("max_rel", 0.0) for r in cases.values()
                       if r.get("ran")), default=0.0)
    if bad:
        r = cases[bad[0]]
        why = (r.get("error", {}).get("type", "") + " " + r.get("error", {}).get("message", "")
               if not r.get("ran") else
               "; ".join(f"{k}: {v['error']}" for k, v in r["outputs"].items() if "error" in v))
        return f"ran {len(cases) - len(bad)}/{len(cases)}", why.replace("\n", " ")[:120]
    return "ok", f"max rel err {worst:.2e} (ORT unoptimized: {worst_noopt:.2e})"


def print_table(results: dict) -> None:
    rows = [("model", "ort", "symbolic", "", "fixed shapes", "")]
    for name, r in results.items():
        sym, sym_why = _summary(r.get("symbolic"))
        fixed = r.get("fixed", {})
        statuses = [_summary(f) for f in fixed.values()]
        fixed_status = ", ".join(sorted({s for s, _ in statuses})) or "-"
        fixed_why = next((w for s, w in statuses if w), "")
        rows.append((name, "ok" if r.get("onnxruntime_ok") else "FAIL", sym, sym_why,
                     fixed_status, fixed_why))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed-shape compiles")
    parser.add_argument("--worker", nargs=4, metavar=("NAME", "MODE", "REFDIR", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, mode, refdir, out = args.worker
        worker(name, mode, Path(refdir), Path(out))
        return
    names = args.names or corpus.names()
    results = json.loads(RESULTS.read_text())["models"] if RESULTS.exists() else {}
    for name in names:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        results[name] = survey_model(name, args.timeout, not args.no_fixed)
        status = _summary(results[name].get("symbolic"))
        print(f"   {time.perf_counter() - start:.0f} s: symbolic {status}", flush=True)
        RESULTS.write_text(json.dumps({"models": dict(sorted(results.items()))}, indent=1) + "\n")
    print()
    print_table({k: results[k] for k in sorted(results)})


if __name__ == "__main__":
    main()
