"""How the dynamic batcher's batch runs on one CompiledModel.

A model whose inputs all lead with the batch it was compiled for (frontend/batch_axes.py
proved it batch-separable: `TensorSpec.shape[0]` None, run once per sample, or the model's
`symbolic.separable_batch`, one GEMM over every sample's rows) runs a batch in one call:
the requests' inputs concatenated on axis 0, each output cut back into each request's rows.
Separability makes that exact: every request's outputs are the bytes it gets when run alone
(tests/serving/test_batcher.py checks it bit for bit).

Requests run one at a time instead when concatenating could mix or misplace them:
- an input without the separable batch leading (a fixed batch, or a symbolic leading size
  that was not proven separable: its samples may be combined, e.g. a Softmax over axis 0);
- requests whose non-leading shapes or dtypes differ, or that give different inputs (the
  overridable ones): only requests alike are concatenated, in groups, in order;
- an output without the batch leading, or whose leading size is not the inputs' rows in
  proportion (a reduction over the batch), found after the run: the batch is run again per
  request, since its outputs cannot be told apart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from onnxc.runtime.compiled_model import CompiledModel

Inputs = dict[str, np.ndarray]


@dataclass(frozen=True)
class ExecutionTiming:
    """One model run: the requests it answered (indices in its batch) and its phases, ns
    (Triton's compute_input: concatenating; compute_infer: the run; compute_output:
    cutting the outputs back)."""

    requests: tuple[int, ...]
    compute_input_ns: int
    compute_infer_ns: int
    compute_output_ns: int


class BatchExecutor:
    """`execute(requests) -> outputs` of one CompiledModel for the DynamicBatcher (see the
    module docstring); `timed` also gives each run's phases."""

    def __init__(self, compiled: CompiledModel, output_names: Sequence[str] | None = None):
        self.compiled = compiled
        self.output_names = list(output_names or compiled.output_names)
        batch = compiled.symbolic.separable_batch if compiled.symbolic is not None else None
        specs = {s.name: s for s in [*compiled.inputs, *compiled.overridable_inputs]}
        self._batched_inputs = {name for name, spec in specs.items()
                                if spec.shape and _is_batch(spec.shape[0], batch)}
        outputs = {s.name: s for s in compiled.outputs}
        self.concatenates = bool(compiled.inputs) and all(
            s.name in self._batched_inputs for s in compiled.inputs) and all(
            outputs[name].shape and _is_batch(outputs[name].shape[0], batch)
            for name in self.output_names)
        """whether alike requests run as one concatenated call"""

    def __call__(self, requests: list[Inputs]) -> list[Inputs]:
        return self.timed(requests)[0]

    def timed(self, requests: list[Inputs]) -> tuple[list[Inputs], list[ExecutionTiming]]:
        """Per-request outputs, in order, and the runs that made them."""
        results: list[Inputs | None] = [None] * len(requests)
        executions: list[ExecutionTiming] = []
        for group in self._groups(requests):
            if len(group) > 1:
                done = self._concatenated(requests, group, results)
                if done is not None:
                    executions.append(done)
                    continue
            for index in group:
                start = time.perf_counter_ns()
                outputs = self.compiled.run(self.output_names, requests[index])
                infer = time.perf_counter_ns()
                results[index] = dict(zip(self.output_names, outputs))
                executions.append(ExecutionTiming(
                    (index,), 0, infer - start, time.perf_counter_ns() - infer))
        return results, executions  # type: ignore[return-value]

    def _groups(self, requests: list[Inputs]) -> list[list[int]]:
        """Runs of consecutive requests alike enough to concatenate (singletons when the
        model does not concatenate)."""
        if not self.concatenates:
            return [[i] for i in range(len(requests))]
        groups: list[list[int]] = []
        last = None
        for index, request in enumerate(requests):
            key = _signature(request, self._batched_inputs)
            if key is not None and key == last:
                groups[-1].append(index)
            else:
                groups.append([index])
            last = key
        return groups

    def _concatenated(self, requests: list[Inputs], group: list[int],
                      results: list[Inputs | None]) -> ExecutionTiming | None:
        """Run `group` as one call and cut its outputs into `results`; None (nothing set)
        when an output's leading size does not split back by the requests' rows."""
        start = time.perf_counter_ns()
        names = list(requests[group[0]])
        rows = [requests[i][names[0]].shape[0] for i in group]
        total = sum(rows)
        totals = {name: sum(requests[i][name].shape[0] for i in group) for name in names}
        if not total or any(totals[name] * r != total * requests[i][name].shape[0]
                            for name in names for i, r in zip(group, rows)):
            return None  # no rows at all, or inputs whose rows per sample differ
        feeds = {name: np.concatenate([requests[i][name] for i in group], axis=0)
                 for name in names}
        ready = time.perf_counter_ns()
        outputs = self.compiled.run(self.output_names, feeds)
        infer = time.perf_counter_ns()
        cuts = []
        for output in outputs:
            if output.ndim == 0 or any((output.shape[0] * r) % total for r in rows):
                self.concatenates = False  # the model's outputs do not split by request
                return None
            cuts.append(np.cumsum([0] + [output.shape[0] * r // total for r in rows]))
        for k, index in enumerate(group):
            results[index] = {name: output[bounds[k]:bounds[k + 1]]
                              for name, output, bounds in zip(self.output_names, outputs, cuts)}
        return ExecutionTiming(tuple(group), ready - start, infer - ready,
                               time.perf_counter_ns() - infer)


def batch_executor(compiled_model: CompiledModel,
                   output_names: Sequence[str] | None = None) -> BatchExecutor:
    """The DynamicBatcher's `execute` for `compiled_model` (all outputs when None)."""
    return BatchExecutor(compiled_model, output_names)


def _is_batch(dim, batch_symbol: str | None) -> bool:
    """Whether a leading dimension is the batch a model was proven separable in."""
    return dim is None or (batch_symbol is not None and dim == batch_symbol)


def _signature(request: Inputs, batched: set[str]) -> tuple | None:
    """What requests concatenated together must share: the inputs given, their dtypes and
    non-leading shapes (None: this request cannot be concatenated)."""
    key = []
    for name in sorted(request):
        value = request[name]
        if name not in batched or not isinstance(value, np.ndarray) or value.ndim == 0:
            return None
        key.append((name, value.dtype.str, value.shape[1:]))
    return tuple(key)
