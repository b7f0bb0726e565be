"""`onnxc show MODEL -o G.svg`: a picture of a model's graph-dialect module, as imported or
after the graph passes of `-O N`, drawn with graphviz; `--compare` puts both side by side.

Reading printed IR does not show what a fusion did to a network's shape; a picture does.
Each op is a box labelled with its op name, the ONNX node it came from (while the op still
carries the importer's record of it: passes that build new ops drop it), its key properties,
its fused body (the expression of a `graph.fused_elementwise`, the activation epilogue of a
conv or GEMM) and its result types. Graph inputs and outputs are ellipses. Weights (graph
constants) are small grey boxes with their name and type, or their value when they hold one
element; past MAX_WEIGHT_BOXES in a function they would outnumber the ops (a ResNet-50 has
about two per conv), so there each op lists its constant operands in its own label
instead. Ops with regions (`graph.if`, `graph.loop`) are clusters around their bodies.

The picture is built as graphviz source by the `graphviz` Python package (the `show` extra);
`.dot` output is that source, `.svg`/`.png` are rendered by Graphviz's `dot` program.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxc.errors import InvalidArgumentError, ToolchainError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Attribute, Block, Operation, SSAValue

FORMATS = {".dot": None, ".gv": None, ".svg": "svg", ".png": "png"}
"""Output suffix -> what `dot` renders (None: the graphviz source itself)."""

MAX_WEIGHT_BOXES = 40
"""Constants per function drawn as boxes of their own; above it they go into the labels of
the ops that read them."""

COMPARE_LEVEL = 3
"""The -O level `--compare` draws next to the imported graph unless told otherwise."""

MAX_PROPERTY_CHARS = 40
MAX_EXPRESSION_CHARS = 60

INFIX = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
"""fused_elementwise body ops written as operators."""

REGION_NAMES = {"graph.if": ("then", "else"), "graph.loop": ("body",)}

SHOWN_ELSEWHERE = frozenset({"value", "activation", "activation_alpha",
                             "activation_beta"})
"""Properties the label renders in their own way (a constant's value, an epilogue), not as
`name=value`."""


def output_format(path: str | os.PathLike) -> str | None:
    """What `dot` renders for `path` (None: graphviz source); InvalidArgumentError for a
    suffix we do not write."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InvalidArgumentError(
            f"cannot draw to '{os.fspath(path)}': the output must end in "
            f"{', '.join(FORMATS)} (got {suffix or 'no suffix'!r})")
    return FORMATS[suffix]


def require_graphviz(fmt: str | None) -> Any:
    """The `graphviz` module, and for a rendered format the `dot` program: ToolchainError
    naming what to install when one is missing."""
    try:
        import graphviz
    except ImportError:
        raise ToolchainError(
            "onnxc show needs the graphviz Python package: pip install 'onnxc[show]' "
            "(or pip install graphviz)") from None
    if fmt is not None and shutil.which("dot") is None:
        raise ToolchainError(
            f"drawing .{fmt} needs Graphviz's dot program, which is not on PATH: install "
            f"Graphviz (Debian/Ubuntu: apt-get install graphviz), or write .dot instead")
    return graphviz


def draw(model: Any, path: str | os.PathLike, opt_level: int | None = None,
         compare: bool = False) -> Path:
    """Draw `model` (a path, bytes, ModelProto or graph-dialect ModuleOp) to `path`
    (.svg, .png or .dot): as imported, or after the graph passes of `opt_level`; with
    `compare`, both side by side (after -O3 unless `opt_level` says otherwise)."""
    from onnxc.arguments import check_flag, check_model, check_opt_level

    if not isinstance(path, str | os.PathLike):
        raise InvalidArgumentError(f"path must be a file path, got {type(path).__name__}")
    fmt = output_format(path)
    check_model(model, module_allowed=True)
    if opt_level is not None:
        check_opt_level(opt_level)
    check_flag("compare", compare)
    graphviz = require_graphviz(fmt)
    picture = picture_of(model, opt_level, compare, graphviz)
    target = Path(path)
    if fmt is None:
        target.write_text(picture.source)
        return target
    try:
        data = picture.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise ToolchainError("Graphviz's dot program did not start: install Graphviz "
                             "(Debian/Ubuntu: apt-get install graphviz)") from None
    except graphviz.CalledProcessError as err:
        detail = (err.stderr or b"").decode(errors="replace").strip()
        raise ToolchainError(f"Graphviz's dot failed to draw {target}: {detail}") from None
    target.write_bytes(data)
    return target


def picture_of(model: Any, opt_level: int | None, compare: bool, graphviz: Any) -> Any:
    """The graphviz Digraph of `model` (see `draw`)."""
    from xdsl.dialects.builtin import ModuleOp

    from onnxc.api import optimize
    from onnxc.frontend import import_onnx
    from onnxc.passes.stats import compute_nodes, op_counts

    given = isinstance(model, ModuleOp)
    imported = model if given else import_onnx(model)
    picture = graphviz.Digraph("onnxc", graph_attr={"fontname": "Helvetica"},
                               node_attr={"fontname": "Helvetica", "fontsize": "10"},
                               edge_attr={"arrowsize": "0.6"})
    if not compare:
        level = 0 if opt_level is None else opt_level
        module = imported if level == 0 else optimize(
            imported.clone() if given else imported, opt_level=level)  # the caller's stays
        assert isinstance(module, ModuleOp)
        title = "as imported" if level == 0 else f"after -O{level}"
        picture.attr(label=f"{title}: {compute_nodes(op_counts(module))} ops", labelloc="t")
        _Drawing(picture, "n").module(module)
        return picture
    level = COMPARE_LEVEL if opt_level is None else opt_level
    optimized = optimize(imported.clone(), opt_level=level)
    assert isinstance(optimized, ModuleOp)
    counts = [compute_nodes(op_counts(m)) for m in (imported, optimized)]
    picture.attr(label=f"as imported: {counts[0]} ops    after -O{level}: {counts[1]} ops",
                 labelloc="t")
    for name, title, module, count, prefix in (
            ("cluster_imported", "as imported", imported, counts[0], "a"),
            (f"cluster_O{level}", f"-O{level}", optimized, counts[1], "b")):
        with picture.subgraph(name=name) as side:
            side.attr(label=f"{title} ({count} ops)", style="rounded", color="grey60")
            _Drawing(side, prefix, edges=picture).module(module)
    return picture


def escape(text: str) -> str:
    """`text` safe inside a graphviz label (backslashes are escape sequences there)."""
    return text.replace("\\", "\\\\")


def label(lines: Iterable[str]) -> str:
    """One graphviz label of several centred lines."""
    return "\\n".join(escape(line) for line in lines)


def type_text(type_: Attribute) -> str:
    """`1x4x8x8xf32` for a tensor type (`?` for a dynamic dim, a layout encoding after it)."""
    from xdsl.dialects.builtin import NoneAttr, TensorType

    if not isinstance(type_, TensorType):
        return str(type_)
    dims = "".join(f"{'?' if d < 0 else d}x" for d in type_.get_shape())
    text = f"{dims}{type_.get_element_type()}"
    if not isinstance(type_.encoding, NoneAttr):
        text += f" {type_.encoding}"
    return text


def attribute_text(attr: Attribute) -> str:
    """A property value in a few characters: `[1, 1]`, `2`, `1e-05`, `relu`."""
    from xdsl.dialects.builtin import (
        ArrayAttr,
        DenseArrayBase,
        DenseIntOrFPElementsAttr,
        FloatAttr,
        IntegerAttr,
        StringAttr,
        i1,
    )

    if isinstance(attr, DenseArrayBase):
        text = "[" + ", ".join(_number(v) for v in attr.get_values()) + "]"
    elif isinstance(attr, IntegerAttr) and attr.type == i1:
        text = "true" if attr.value.data else "false"
    elif isinstance(attr, IntegerAttr | FloatAttr):
        text = _number(attr.value.data)
    elif isinstance(attr, StringAttr):
        text = attr.data
    elif isinstance(attr, ArrayAttr):
        text = "[" + ", ".join(attribute_text(a) for a in attr.data) + "]"
    elif isinstance(attr, DenseIntOrFPElementsAttr):
        text = f"dense {type_text(attr.type)}"
    else:
        text = str(attr)
    return text if len(text) <= MAX_PROPERTY_CHARS else text[:MAX_PROPERTY_CHARS - 3] + "..."


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bare(expression: str) -> str:
    """An operand expression without its parentheses (only infix ones start with one)."""
    return expression[1:-1] if expression.startswith("(") else expression


def fused_expression(op: Operation) -> list[str]:
    """A fused_elementwise body as one expression over in0, in1, ... (`maximumf(in0 + in1,
    0)`), constants inlined, or, when that would be long (shared subexpressions repeat in
    it), one line per body op."""
    from xdsl.dialects import arith

    from onnxc.dialects.graph_fused_elementwise import cmpf_predicate

    def name_of(o: Operation) -> str:
        short = o.name.split(".")[-1]
        return f"{short}_{cmpf_predicate(o)}" if isinstance(o, arith.CmpfOp) else short

    exprs: dict[SSAValue, str] = {a: f"in{i}" for i, a in enumerate(op.block.args)}
    names = dict(exprs)
    lines = []
    for o in op.body_ops():
        if isinstance(o, arith.ConstantOp):
            exprs[o.results[0]] = names[o.results[0]] = _number(o.value.value.data)
            continue
        args = [exprs[v] for v in o.operands]
        if o.name in INFIX:
            exprs[o.results[0]] = f"({args[0]} {INFIX[o.name]} {args[1]})"
        else:
            exprs[o.results[0]] = f"{name_of(o)}({', '.join(map(_bare, args))})"
        names[o.results[0]] = f"t{len(lines)}"
        lines.append(f"t{len(lines)} = {name_of(o)}({', '.join(names[v] for v in o.operands)})")
    whole = _bare(exprs[op.yielded()])
    return [whole] if len(whole) <= MAX_EXPRESSION_CHARS else lines


def epilogue_text(op: Operation) -> str | None:
    """`relu`, `clip(0, 6)`, `leaky_relu(0.1)`: the activation a conv/GEMM applies in its
    kernel (graph_epilogue), or None."""
    from onnxc.dialects.graph_epilogue import epilogue_of

    epilogue = epilogue_of(op)
    if epilogue is None:
        return None
    name, alpha, beta = epilogue
    if name == "clip":  # either bound may be absent
        low = "-inf" if alpha is None else _number(alpha)
        return f"clip({low}, {'inf' if beta is None else _number(beta)})"
    params = [_number(p) for p in (alpha, beta) if p is not None]
    return f"{name}({', '.join(params)})" if params else name


def constant_text(op: Operation) -> str:
    """A constant as its name and type, or its value when it holds one element."""
    from onnxc.passes.constants import constant_value

    result = op.results[0]
    type_ = type_text(result.type)
    name = result.name_hint
    if op.name == "graph.constant_of_shape":
        text = f"{type_} filled with {attribute_text(op.properties['value'])}"
    elif _elements(result) == 1:
        array = constant_value(result)
        value = "?" if array is None else _number(array.reshape(-1)[0].item())
        text = f"{value} : {type_}"
    else:
        text = type_
    return f"{name}: {text}" if name else text


def _elements(value: SSAValue) -> int:
    shape = getattr(value.type, "get_shape", lambda: ())()
    return math.prod(shape)


class _Drawing:
    """One module's functions drawn into `graph` (the picture, or one side of a comparison),
    node ids prefixed by `prefix`; edges go to `edges` (the whole picture: an edge declared
    inside a cluster would pull both its ends into that cluster)."""

    def __init__(self, graph: Any, prefix: str, edges: Any = None):
        self.graph, self.prefix = graph, prefix
        self.edges = graph if edges is None else edges
        self.count = 0
        self.sources: dict[SSAValue, str] = {}
        self.inlined: dict[SSAValue, str] = {}
        self.inline_weights = False
        self.region_owners: dict[Operation, str] = {}
        """node of each op with regions, for the edges from its yields"""

    def new_id(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"

    def module(self, module: ModuleOp) -> None:
        from xdsl.dialects.func import FuncOp

        for op in module.ops:
            if isinstance(op, FuncOp):
                self.function(op)

    def function(self, func: Any) -> None:
        from onnxc.dialects.entry_abi import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR, string_list
        from onnxc.passes.stats import CONSTANT_OPS

        constants = sum(1 for op in func.walk() if op.name in CONSTANT_OPS)
        self.inline_weights = constants > MAX_WEIGHT_BOXES
        block = func.body.block
        names = string_list(func, INPUT_NAMES_ATTR)
        for i, arg in enumerate(block.args):
            name = names[i] if i < len(names) else arg.name_hint or f"input {i}"
            self.sources[arg] = node = self.new_id()
            self.graph.node(node, label(["input " + name, type_text(arg.type)]),
                            shape="ellipse", style="filled", fillcolor="#cfe2ff")
        self.block(self.graph, block, output_names=string_list(func, OUTPUT_NAMES_ATTR))

    def block(self, graph: Any, block: Block, output_names: Sequence[str] = ()) -> None:
        from onnxc.passes.stats import CONSTANT_OPS

        for op in block.ops:
            if op.name in CONSTANT_OPS:
                self.constant(graph, op)
            elif op.name == "func.return":
                self.outputs(graph, op, output_names)
            elif op.name == "graph.yield":
                node = self.new_id()
                graph.node(node, label(["yield"]), shape="box", style="dashed")
                self.connect(op.operands, node, inputs_named=False)
                owner = self.region_owners.get(op.parent_op())
                if owner is not None:  # the yielded values become the owner's results
                    self.edges.edge(node, owner, style="dashed", constraint="false")
            elif op.regions and op.name != "graph.fused_elementwise":  # its body: a label
                self.region_op(graph, op)
            else:
                self.op(graph, op)

    def constant(self, graph: Any, op: Operation) -> None:
        if self.inline_weights:
            self.inlined[op.results[0]] = constant_text(op)
            return
        self.sources[op.results[0]] = node = self.new_id()
        kind = "constant" if _elements(op.results[0]) == 1 else "weight"
        graph.node(node, label([kind, constant_text(op)]), shape="box", style="filled",
                   fillcolor="#eeeeee", fontsize="8", height="0.2", color="grey60")

    def outputs(self, graph: Any, op: Operation, names: Sequence[str]) -> None:
        for i, value in enumerate(op.operands):
            name = names[i] if i < len(names) else f"output {i}"
            node = self.new_id()
            graph.node(node, label(["output " + name, type_text(value.type)]),
                       shape="ellipse", style="filled", fillcolor="#ffe0b3")
            self.connect([value], node, inputs_named=False)

    def op_label(self, op: Operation) -> list[str]:
        from onnxc.dialects.graph_checks import onnx_node_of

        lines = [op.name]
        onnx_node = onnx_node_of(op)
        if onnx_node:
            lines.append(f"node '{onnx_node}'")
        props = [f"{k}={attribute_text(v)}" for k, v in op.properties.items()
                 if k not in SHOWN_ELSEWHERE]
        lines.extend(_wrap(props))
        if op.name == "graph.fused_elementwise":
            body = fused_expression(op)
            lines.extend(["body: " + body[0], *body[1:]])
        epilogue = epilogue_text(op)
        if epilogue is not None:
            lines.append("epilogue: " + epilogue)
        weights = [self.inlined[v] for v in op.operands if v in self.inlined]
        if weights:
            lines.append("weights: " + ", ".join(weights[:3])
                         + (f" +{len(weights) - 3}" if len(weights) > 3 else ""))
        results = [type_text(r.type) for r in op.results]
        if len(results) == 1:
            lines.append("-> " + results[0])
        else:
            lines.extend(f"-> {i}: {t}" for i, t in enumerate(results))
        return lines

    def op(self, graph: Any, op: Operation) -> str:
        node = self.new_id()
        fused = op.name == "graph.fused_elementwise" or epilogue_text(op) is not None
        graph.node(node, label(self.op_label(op)), shape="box", style="rounded,filled",
                   fillcolor="#fff2b3" if fused else "white")
        self.connect(op.operands, node, inputs_named=op.name == "graph.fused_elementwise")
        for result in op.results:
            self.sources[result] = node
        return node

    def region_op(self, graph: Any, op: Operation) -> None:
        """A cluster: the op's own box (operands in, results out), then one sub-cluster per
        region with its arguments, its ops and the yield that gives the op its results."""
        names = REGION_NAMES.get(op.name, ())
        with graph.subgraph(name=f"cluster_{self.new_id()}") as cluster:
            cluster.attr(label="", style="rounded,dashed", color="grey40")
            self.region_owners[op] = node = self.op(cluster, op)
            for i, region in enumerate(op.regions):
                with cluster.subgraph(name=f"cluster_{self.new_id()}") as inner:
                    inner.attr(label=names[i] if i < len(names) else f"region {i}",
                               style="rounded", color="grey70")
                    for block in region.blocks:
                        for j, arg in enumerate(block.args):
                            self.sources[arg] = arg_node = self.new_id()
                            inner.node(arg_node, label([f"arg {arg.name_hint or j}",
                                                        type_text(arg.type)]),
                                       shape="ellipse", style="dashed", fontsize="8")
                            self.edges.edge(node, arg_node, style="dotted")
                        first = self.count + 1
                        self.block(inner, block)
                        if not block.args and self.count >= first:  # the body below the op
                            self.edges.edge(node, f"{self.prefix}{first}", style="invis")

    def connect(self, operands: Sequence[SSAValue], node: str, inputs_named: bool) -> None:
        for i, value in enumerate(operands):
            source = self.sources.get(value)
            if source is not None:
                self.edges.edge(source, node, label=f"in{i}" if inputs_named else None,
                                fontsize="8")


def _wrap(items: Sequence[str], width: int = 48) -> list[str]:
    """`items` joined by commas into lines of about `width` characters."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return lines


def show_command(args: argparse.Namespace) -> None:
    """`onnxc show MODEL [-O N] -o G.svg|.png|.dot [--compare]`."""
    output_format(args.output)  # a bad suffix fails before the model is read
    if not os.path.isfile(args.model):
        raise FileNotFoundError(2, "No such file or directory", args.model)
    path = draw(args.model, args.output, opt_level=args.opt_level, compare=args.compare)
    print(path)
