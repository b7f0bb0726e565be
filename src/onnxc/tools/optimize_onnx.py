"""`onnxc optimize IN.onnx -o OUT.onnx [-O N]`: save the graph after onnxc's graph passes as
a standard ONNX model (what onnxsim and onnxruntime's `optimized_model_filepath` give), and
print the node counts before and after.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterable

import onnx

NOT_COMPUTE = frozenset({"Constant", "Identity"})
"""Top-level nodes that compute nothing: left out of the node counts."""

TWO_GB = 2**31


def compute_nodes(nodes: Iterable[onnx.NodeProto]) -> int:
    """Top-level nodes other than Constant/Identity (a local-function call counts as one)."""
    return sum(1 for node in nodes if node.op_type not in NOT_COMPUTE)


def save_model(model: onnx.ModelProto, path: str) -> None:
    """`onnx.save`, with the weights in a side file when the protobuf would pass 2 GB."""
    large = model.ByteSize() >= TWO_GB
    onnx.save_model(model, path, save_as_external_data=large,
                    location=os.path.basename(path) + ".data" if large else None)


def optimize_model(args: argparse.Namespace) -> None:
    """The `optimize` subcommand's handler (registered in tools/run.py)."""
    import onnxc
    from onnxc.frontend.onnx_model import load_model

    if not os.path.isfile(args.model):
        raise FileNotFoundError(2, "No such file or directory", args.model)
    level = 3 if args.opt_level is None else args.opt_level
    original = load_model(args.model)
    started = time.perf_counter()
    optimized = onnxc.optimize(original, opt_level=level, as_onnx=True)
    seconds = time.perf_counter() - started
    save_model(optimized, args.output)
    functions = len(optimized.functions)
    print(f"{args.model}: {compute_nodes(original.graph.node)} nodes -> {args.output}: "
          f"{compute_nodes(optimized.graph.node)} nodes (-O{level}, {functions} local "
          f"function{'s' if functions != 1 else ''}, {seconds:.1f} s)")
