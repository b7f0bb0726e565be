"""Loading and checking an ONNX model before import: parse, inline, infer shapes, sort.

Everything that can go wrong with the file itself (bad protobuf, missing data, undefined
names, cycles) is turned into `ModelLoadError` here, so the op converters can assume a
well-formed graph.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Collection, Iterable, Mapping

import numpy as np
import onnx
import onnx.external_data_helper
import onnx.inliner
import onnx.numpy_helper
import onnx.parser
import onnx.shape_inference
from google.protobuf.message import DecodeError

from onnxc.errors import InvalidArgumentError, ModelLoadError, UnsupportedOpError
from onnxc.frontend.onnx_refused import refusal_reason

DEFAULT_DOMAINS = ("", "ai.onnx")


class ParsedOnce:
    """A model file or bytes that the compile has parsed already, for the importer: its
    first `load_model` takes that proto, any later one (the importer's replay, which
    re-imports when a pass leaves invalid IR) parses `source` again. Parsing is not free
    (BERT-base's 56 MB: 40-80 ms, most of it reading the file), and the proto is not kept
    alive by this object once taken (a 100 MB model would stay in memory for the whole
    compile)."""

    def __init__(self, source: str | os.PathLike | bytes, proto: onnx.ModelProto):
        self.source = source
        self._proto: onnx.ModelProto | None = proto
        self.reread = False
        """whether `source` was parsed again (what was compiled may then differ from the
        proto given here: the compile cache then checks the file before it stores)"""

    def take(self) -> onnx.ModelProto | None:
        proto, self._proto = self._proto, None
        return proto


ModelSource = str | os.PathLike | bytes | onnx.ModelProto | ParsedOnce


def load_model(model: ModelSource, external_data: bool = True) -> onnx.ModelProto:
    """Parse `model` (a path, serialized bytes or a ModelProto) into a ModelProto;
    `external_data=False` leaves weights stored in separate files unread (graph only)."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, ParsedOnce):
        proto = model.take()
        if proto is not None:
            return proto
        model.reread = True
        return load_model(model.source, external_data)
    try:
        if isinstance(model, bytes | bytearray | memoryview):
            proto = onnx.ModelProto()
            proto.ParseFromString(bytes(model))
            return proto
        if isinstance(model, str | os.PathLike):
            return onnx.load(os.fspath(model), load_external_data=external_data)
    except (DecodeError, RuntimeError) as err:
        raise ModelLoadError(f"cannot parse the ONNX model: {err}") from err
    except OSError as err:
        raise ModelLoadError(f"cannot read the ONNX model: {err}") from err
    except Exception as err:  # onnx.load raises assorted errors for bad external data
        raise ModelLoadError(f"cannot load the ONNX model: {type(err).__name__}: {err}") from err
    raise InvalidArgumentError(
        f"model must be a path, bytes or an onnx.ModelProto, got {type(model).__name__}")


def holds_all_data(model: onnx.ModelProto) -> bool:
    """Whether no tensor of `model` refers to an external data file (one parsed without
    its external data is then complete)."""
    return not any(onnx.external_data_helper.uses_external_data(tensor)
                   for tensor in onnx.external_data_helper._get_all_tensors(model))


def parse_text(text: str) -> onnx.ModelProto:
    """Parse ONNX's textual model syntax (`onnx.parser`)."""
    try:
        return onnx.parser.parse_model(text)
    except Exception as err:  # onnx.parser raises ParseError with a bytes message
        msg = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
        raise ModelLoadError(f"cannot parse the ONNX text: {msg.strip()}") from err


def default_opset(model: onnx.ModelProto) -> int:
    """The model's version of the default (ai.onnx) operator set."""
    versions = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        # a model of other domains' ops only (ai.onnx.ml's node tests) needs none
        if any(node.domain in DEFAULT_DOMAINS for node in model.graph.node):
            raise ModelLoadError("the model imports no version of the default ONNX opset")
        return onnx.defs.onnx_opset_version()
    if len(set(versions)) > 1:
        raise ModelLoadError(
            f"the model imports the default ONNX opset more than once, with versions "
            f"{', '.join(str(v) for v in versions)}")
    if versions[0] < 1:
        raise ModelLoadError(
            f"the model imports opset {versions[0]} of the default ONNX domain; opset "
            f"versions start at 1")
    newest = onnx.defs.onnx_opset_version()
    if versions[0] > newest:
        raise ModelLoadError(
            f"the model uses opset {versions[0]}, newer than the {newest} onnx "
            f"{onnx.__version__} knows"
        )
    return versions[0]


def check_ir_version(model: onnx.ModelProto) -> None:
    """The IR version says how to read the rest of the file (e.g. whether initializers listed
    as inputs are constants): a missing one (0), or one newer than onnx knows, cannot be read
    reliably."""
    version = model.ir_version
    if version < 1:
        raise ModelLoadError(
            f"the model has no IR version (ir_version {version}); it must be 1 to "
            f"{onnx.IR_VERSION}")
    if version > onnx.IR_VERSION:
        raise ModelLoadError(
            f"the model's IR version {version} is newer than the {onnx.IR_VERSION} onnx "
            f"{onnx.__version__} knows")


def inline_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """Inline model-local functions so that only standard ops remain."""
    if not model.functions:
        return model
    try:
        return onnx.inliner.inline_local_functions(model)
    except Exception as err:
        raise ModelLoadError(f"cannot inline the model's local functions: {err}") from err


# Initializers above this many elements are hidden from ONNX shape inference (as typed
# inputs): it serializes the whole model, and only small ones feed data propagation.
_INFERENCE_DATA_LIMIT = 1024


def infer_types(
    model: onnx.ModelProto, constants: Mapping[str, np.ndarray] | None = None
) -> dict[str, onnx.TypeProto]:
    """ONNX's inferred type of every value it could type (value_info and outputs).

    Initializers (and `constants`, graph inputs bound to data) are constants for onnxc, so
    ONNX gets them as initializers that are not inputs: its data propagation then uses
    them even in old models that list initializers among the inputs. Large ones become
    typed inputs instead, so that inference does not copy the weights.
    """
    constants = constants or {}
    small: list[onnx.TensorProto] = []
    large: list[onnx.ValueInfoProto] = []
    for init in model.graph.initializer:
        if init.name in constants:
            continue
        if math.prod(init.dims) <= _INFERENCE_DATA_LIMIT:
            small.append(init)
        else:
            large.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    small += [onnx.numpy_helper.from_array(array, name) for name, array in constants.items()]
    not_inputs = {t.name for t in small} | {vi.name for vi in large}
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    graph = light.graph
    graph.node.extend(model.graph.node)
    graph.input.extend(vi for vi in model.graph.input if vi.name not in not_inputs)
    graph.input.extend(large)
    graph.initializer.extend(small)
    graph.output.extend(model.graph.output)
    graph.value_info.extend(model.graph.value_info)
    try:
        # Data propagation is only needed where shapes are computed (Shape -> Gather ->
        # Reshape...); it is also slow on long 1-D tensors (it propagates their values as
        # shapes), so it runs only when plain inference leaves a value untyped.
        inferred = onnx.shape_inference.infer_shapes(
            light, check_type=False, strict_mode=False, data_prop=False
        ).graph
        if not _all_static(inferred):
            inferred = onnx.shape_inference.infer_shapes(
                light, check_type=False, strict_mode=False, data_prop=True
            ).graph
    except Exception:
        # Even non-strict inference gives up on some malformed nodes. Our own shape rules
        # type every op, and the converter of the bad node reports it more precisely.
        inferred = model.graph
    return {vi.name: vi.type for vi in (*inferred.value_info, *inferred.output)}


def _all_static(graph: onnx.GraphProto) -> bool:
    """Whether inference typed every node output with a fully static shape."""
    typed = {vi.name: vi.type for vi in (*graph.value_info, *graph.output)}
    for node in graph.node:
        for name in node.output:
            t = typed.get(name)
            if not name:
                continue
            if t is None or not t.tensor_type.HasField("shape"):
                return False
            if any(not d.HasField("dim_value") for d in t.tensor_type.shape.dim):
                return False
    return True


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs a node carries in its attributes (If's branches, Loop's and Scan's body)."""
    found = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            found.append(a.g)
        found.extend(a.graphs)
    return found


def outer_names(graph: onnx.GraphProto) -> set[str]:
    """The values a subgraph reads from enclosing scopes (ONNX's outer-scope values)."""
    defined = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        used.update(n for n in node.input if n)
        for g in subgraphs(node):
            used |= outer_names(g)
        defined.update(node.output)
    used.update(vi.name for vi in graph.output)
    return used - defined


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Every value a node needs before it runs: its inputs and its subgraphs' outer values."""
    reads = [n for n in node.input if n]
    for g in subgraphs(node):
        reads += sorted(outer_names(g) - set(reads))
    return reads


def all_nodes(graph: onnx.GraphProto):
    """The graph's nodes and, recursively, those of their subgraphs."""
    for node in graph.node:
        yield node
        for g in subgraphs(node):
            yield from all_nodes(g)


def node_label(node: onnx.NodeProto, index: int) -> str:
    """The node's name, or a stable made-up one for unnamed nodes."""
    return node.name or f"{node.op_type}_{index}"


IMPLIED_DOMAINS = {"com.microsoft": 1}
"""Domains a node may use although the model does not import them, with the version it then
has: onnxruntime runs com.microsoft nodes in such models (its transformer optimizer writes
them at opt_level 0, importing only the default domain), and that domain has one version."""


def domain_version(model: onnx.ModelProto, domain: str) -> int | None:
    """The model's version of operator `domain` (not the default one), `IMPLIED_DOMAINS`'
    when it does not import it, None when neither."""
    versions = {o.domain: o.version for o in model.opset_import}
    return versions.get(domain, IMPLIED_DOMAINS.get(domain))


def check_domains(model: onnx.ModelProto,
                  supported: Mapping[str, Collection[str]] | None = None) -> None:
    """Reject nodes of other operator sets before doing any work: of a domain the model does
    not import (ModelLoadError), of a domain onnxc has no converters for, or of an op type
    no converter table of its domain has (`supported`: domain -> op types; every such op of
    the model named, the first with its node, domain and the domain's opset)."""
    supported = supported or {}
    missing: dict[tuple[str, str], tuple[str, int]] = {}
    for index, node in enumerate(all_nodes(model.graph)):
        if node.domain in DEFAULT_DOMAINS:
            continue
        label = node_label(node, index)
        version = domain_version(model, node.domain)
        if version is None:
            raise ModelLoadError(
                f"node '{label}' ({node.op_type}) uses domain '{node.domain}', "
                f"which the model does not import"
            )
        if node.domain not in supported:
            raise UnsupportedOpError(
                node.op_type, label, version,
                refusal_reason(node.domain, node.op_type)
                or f"operators of domain '{node.domain}' are not supported",
            )
        if node.op_type not in supported[node.domain]:
            missing.setdefault((node.domain, node.op_type), (label, version))
    if missing:
        ((domain, op_type), (label, version)), *others = missing.items()
        detail = refusal_reason(domain, op_type) or (
            f"domain '{domain}' opset {version} has no converter for it (onnxc converts "
            f"{', '.join(sorted(supported[domain])) or 'none of its ops yet'})")
        if others:
            detail += "; also unsupported: " + ", ".join(f"{d}.{o}" for (d, o), _ in others)
        raise UnsupportedOpError(f"{domain}.{op_type}", label, version, detail)


def check_names(graph: onnx.GraphProto) -> None:
    """Reject names that are not valid UTF-8 (protobuf hands those out as bytes), graph
    inputs and initializers (dense or sparse) declared twice, and graphs without outputs
    (what empty bytes parse to)."""
    names = [vi.name for vi in (*graph.input, *graph.output)]
    names += [init.name for init in graph.initializer]
    for node in all_nodes(graph):
        names += [node.name, node.op_type, node.domain, *node.input, *node.output]
    for name in names:
        if not isinstance(name, str):
            raise ModelLoadError(f"the model holds a name that is not valid UTF-8: {name!r}")
    seen: set[str] = set()
    for vi in graph.input:
        if vi.name in seen:
            raise ModelLoadError(f"graph input '{vi.name}' is declared twice")
        seen.add(vi.name)
    initializers: set[str] = set()
    for kind, name in [*(("initializer", t.name) for t in graph.initializer),
                       *(("sparse initializer", t.values.name) for t in graph.sparse_initializer)]:
        if name in initializers:
            raise ModelLoadError(f"{kind} '{name}' gives a second value to a name an "
                                 f"earlier initializer already defines")
        initializers.add(name)
    if not graph.output:
        raise ModelLoadError("the graph has no outputs (an empty or truncated model?)")


def topological_order(graph: onnx.GraphProto, available: Iterable[str]) -> list[int]:
    """Node indices in an order where every input is defined before use.

    Keeps the file's order when it is already valid (a stable Kahn's sort). Raises
    `ModelLoadError` for undefined inputs, values defined twice and cycles.
    """
    nodes = graph.node
    producer: dict[str, int] = {}
    defined = set(available)
    for index, node in enumerate(nodes):
        for out in node.output:
            if not out:
                continue
            if out in producer or out in defined:
                raise ModelLoadError(
                    f"value '{out}' is defined twice (again by node "
                    f"'{node_label(node, index)}')"
                )
            producer[out] = index
    waiting_on = [0] * len(nodes)
    users: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        for name in node_reads(node):
            if name in defined:
                continue
            if name not in producer:
                raise ModelLoadError(
                    f"node '{node_label(node, index)}' ({node.op_type}) uses '{name}', "
                    f"which is not a graph input, an initializer or any node's output"
                )
            waiting_on[index] += 1
            users[producer[name]].append(index)
    ready = [i for i, n in enumerate(waiting_on) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in users[index]:
            waiting_on[user] -= 1
            if waiting_on[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(nodes):
        stuck = [node_label(nodes[i], i) for i, n in enumerate(waiting_on) if n > 0]
        shown = ", ".join(f"'{s}'" for s in stuck[:5]) + (", ..." if len(stuck) > 5 else "")
        raise ModelLoadError(f"the graph has a cycle: nodes {shown} are on or after it")
    for out in graph.output:
        if out.name not in producer and out.name not in defined:
            raise ModelLoadError(f"graph output '{out.name}' is never defined")
    return order
