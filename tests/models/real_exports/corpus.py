"""The corpus of real-export ONNX models: loader, manifest, shape cases and input feeds.

Needs only numpy and onnx (no torch): the models in `models/` were written by
`generate.py` (run in the export venv, see README.md), which also wrote `models/manifest.json`.

    from tests.models.real_exports import corpus
    corpus.names()                       # every model of the corpus
    model = corpus.load("llama")         # onnx.ModelProto, seeded weights regenerated
    corpus.cases("llama")                # {"prefill": {...}, "decode": {...}, ...}
    feeds = corpus.feeds("llama", "decode", np.random.default_rng(0))

Seeded weights: every tensor of more than `THRESHOLD` elements (initializers and Constant
attributes, subgraphs included) is stored without its data, as external data whose location
is `seeded` (`data_location = EXTERNAL`, entries `location: seeded`, `seeded_key: <key>`),
and the model's `metadata_props` entry `onnxc.test.seeded_weights` holds a JSON recipe per
key: `{"dtype": <TensorProto data type>, "shape": [...], "seed": <int>, "dist": ...}` with

- `constant` (`value`): every element was that value;
- `normal` (`mean`, `std`): float tensors, fitted to the original; drawn with
  `numpy.random.default_rng(seed).normal(mean, std, shape)` in float64, then cast to the
  tensor's dtype (float16 stays float16);
- `normal_rows` (`mean`, `std`: base64 of little-endian float32 arrays, one value per
  slice of the first axis): float tensors of rank 3 or more (convolution weights, whose
  output channels a folded BatchNorm scales differently), drawn with
  `default_rng(seed).standard_normal(shape) * std[:, None, ...] + mean[:, None, ...]`;
- `normal_int` (`mean`, `std`, `low`, `high`: the original's moments, min and max):
  quantized integer weights (int8, uint8, int4, uint4, int16, uint16), drawn with
  `default_rng(seed).normal(mean, std, shape)`, rounded to even and clipped to
  [low, high]. Not uniform over [min, max]: quantized weights cluster around their zero
  point, and uniform ones put half the int8 weights beyond +-64, where onnxruntime's
  u8 x s8 MatMulInteger (int16 pairwise sums on CPUs without VNNI) saturates and is no
  longer a reference;
- `uniform_int` (`low`, `high`, inclusive; read, no longer written):
  `default_rng(seed).integers(low, high + 1, shape)`;
- `exact` (`zlib`: base64 of the zlib-compressed little-endian raw data): kept bit for bit:
  int32/int64/bool tensors (indices and shapes) and float tensors with at most 16 distinct
  values (masks), which compress to almost nothing.

Everything else (the graph, every small tensor: biases, norms, quantization scales and zero
points, shape constants) is stored exactly as the export tool wrote it. `load()` rebuilds
the tensors, drops the metadata entry, and caches the result in the process (it returns a
copy each time).
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
MANIFEST = MODELS / "manifest.json"

THRESHOLD = 4096  # tensors with more elements than this are seeded
METADATA_KEY = "onnxc.test.seeded_weights"
SEEDED_LOCATION = "seeded"
FORMAT_VERSION = 1

_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
_QUANT_INT_TYPES = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT4, TensorProto.UINT4,
                    TensorProto.INT16, TensorProto.UINT16}


# --- tensors of a model -------------------------------------------------------------------

def _graph_tensors(graph: onnx.GraphProto, path: str) -> Iterator[tuple[str, onnx.TensorProto]]:
    for t in graph.initializer:
        yield f"{path}init:{t.name}", t
    for t in graph.sparse_initializer:  # values only; indices are kept as they are
        yield f"{path}sparse:{t.values.name}", t.values
    for i, node in enumerate(graph.node):
        for attr in node.attribute:
            where = f"{path}node{i}:{node.name or node.op_type}:{attr.name}"
            if attr.HasField("t"):
                yield where, attr.t
            for j, t in enumerate(attr.tensors):
                yield f"{where}[{j}]", t
            if attr.HasField("g"):
                yield from _graph_tensors(attr.g, f"{where}/")
            for j, g in enumerate(attr.graphs):
                yield from _graph_tensors(g, f"{where}[{j}]/")


def all_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """(a path naming the tensor's place in the model, the tensor) for every stored tensor:
    initializers and Constant/attribute tensors of the graph and of every subgraph."""
    yield from _graph_tensors(model.graph, "")


def _numel(t: onnx.TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


def _np_dtype(data_type: int):
    return helper.tensor_dtype_to_np_dtype(data_type)


# --- compaction (used by generate.py) -------------------------------------------------------

def _recipe_for(key: str, t: onnx.TensorProto) -> dict:
    arr = numpy_helper.to_array(t)
    recipe = {"dtype": int(t.data_type), "dtype_name": TensorProto.DataType.Name(t.data_type),
              "shape": [int(d) for d in t.dims], "seed": zlib.crc32(key.encode()) & 0x7FFFFFFF}
    flat = arr.reshape(-1)
    if t.data_type in _FLOAT_TYPES:
        values = flat.astype(np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{key}: non-finite values in a seeded tensor")
        if values.min() == values.max():
            recipe.update(dist="constant", value=float(values[0]))
        elif len(np.unique(values)) <= 16:
            recipe.update(dist="exact", zlib=_pack_exact(arr))
        elif arr.ndim >= 3 and arr.shape[0] > 1:
            rows = arr.reshape(arr.shape[0], -1).astype(np.float64)
            recipe.update(dist="normal_rows", mean=_pack_f32(rows.mean(axis=1)),
                          std=_pack_f32(rows.std(axis=1)))
        else:
            recipe.update(dist="normal", mean=float(values.mean()), std=float(values.std()))
    elif t.data_type in _QUANT_INT_TYPES:
        values = flat.astype(np.int64)
        if values.min() == values.max():
            recipe.update(dist="constant", value=int(values[0]))
        else:
            recipe.update(dist="normal_int", mean=float(values.mean()), std=float(values.std()),
                          low=int(values.min()), high=int(values.max()))
    else:
        recipe.update(dist="exact", zlib=_pack_exact(arr))
    return recipe


def _pack_f32(values: np.ndarray) -> str:
    return base64.b64encode(values.astype("<f4").tobytes()).decode("ascii")


def _unpack_f32(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float64)


def _pack_exact(arr: np.ndarray) -> str:
    t = numpy_helper.from_array(np.ascontiguousarray(arr))
    return base64.b64encode(zlib.compress(t.raw_data, 9)).decode("ascii")


def compact(model: onnx.ModelProto, threshold: int = THRESHOLD) -> onnx.ModelProto:
    """A copy of `model` whose tensors of more than `threshold` elements are seeded recipes
    (see the module docstring). Tensors already seeded are left as they are."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    recipes: dict[str, dict] = {}
    for key, t in all_tensors(out):
        if _numel(t) <= threshold or t.data_location == TensorProto.EXTERNAL:
            continue
        if t.data_type == TensorProto.STRING:
            continue
        recipes[key] = _recipe_for(key, t)
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                      "uint64_data", "string_data"):
            t.ClearField(field)
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        for k, v in (("location", SEEDED_LOCATION), ("seeded_key", key)):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
    props = [p for p in out.metadata_props if p.key != METADATA_KEY]
    del out.metadata_props[:]
    out.metadata_props.extend(props)
    if recipes:
        entry = out.metadata_props.add()
        entry.key = METADATA_KEY
        entry.value = json.dumps({"format": FORMAT_VERSION, "threshold": threshold,
                                  "tensors": recipes}, sort_keys=True)
    return out


# --- regeneration -------------------------------------------------------------------------

def make_array(recipe: dict) -> np.ndarray:
    """The tensor a recipe describes, as a numpy array of the tensor's own dtype."""
    dtype = _np_dtype(recipe["dtype"])
    shape = tuple(recipe["shape"])
    rng = np.random.default_rng(recipe["seed"])
    dist = recipe["dist"]
    if dist == "constant":
        return np.full(shape, recipe["value"], dtype=np.float64 if recipe["dtype"] in _FLOAT_TYPES
                       else np.int64).astype(dtype)
    if dist == "normal":
        return rng.normal(recipe["mean"], recipe["std"], shape).astype(dtype)
    if dist == "normal_rows":
        mean, std = _unpack_f32(recipe["mean"]), _unpack_f32(recipe["std"])
        bcast = (shape[0],) + (1,) * (len(shape) - 1)
        values = rng.standard_normal(shape) * std.reshape(bcast) + mean.reshape(bcast)
        return values.astype(dtype)
    if dist == "normal_int":
        values = np.rint(rng.normal(recipe["mean"], recipe["std"], shape))
        return np.clip(values, recipe["low"], recipe["high"]).astype(dtype)
    if dist == "uniform_int":
        return rng.integers(recipe["low"], recipe["high"] + 1, shape).astype(dtype)
    if dist == "exact":
        t = onnx.TensorProto()
        t.data_type = recipe["dtype"]
        t.dims.extend(shape)
        t.raw_data = zlib.decompress(base64.b64decode(recipe["zlib"]))
        return numpy_helper.to_array(t)
    raise ValueError(f"unknown distribution {dist!r}")


def regenerate(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (changed in place and returned) with its seeded tensors filled in."""
    props = {p.key: p.value for p in model.metadata_props}
    if METADATA_KEY not in props:
        return model
    spec = json.loads(props[METADATA_KEY])
    if spec.get("format") != FORMAT_VERSION:
        raise ValueError(f"seeded weights format {spec.get('format')} (expected {FORMAT_VERSION})")
    recipes = spec["tensors"]
    done = set()
    for _, t in all_tensors(model):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        if info.get("location") != SEEDED_LOCATION:
            continue
        key = info["seeded_key"]
        arr = make_array(recipes[key])
        filled = numpy_helper.from_array(arr)
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT
        t.raw_data = filled.raw_data
        done.add(key)
    missing = set(recipes) - done
    if missing:
        raise ValueError(f"seeded tensors not found in the graph: {sorted(missing)[:5]}")
    kept = [p for p in model.metadata_props if p.key != METADATA_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    return model


# --- the corpus -----------------------------------------------------------------------------

_manifest_cache: dict | None = None
_model_cache: dict[str, bytes] = {}


def manifest() -> dict:
    """models/manifest.json: {"models": {name: entry}, ...} as generate.py wrote it."""
    global _manifest_cache
    if _manifest_cache is None:
        _manifest_cache = json.loads(MANIFEST.read_text())
    return _manifest_cache


def names() -> list[str]:
    return list(manifest()["models"])


def entry(name: str) -> dict:
    return manifest()["models"][name]


def path(name: str) -> Path:
    return MODELS / entry(name)["file"]


def load_stored(name: str) -> onnx.ModelProto:
    """The file as stored (seeded tensors still empty)."""
    return onnx.load(str(path(name)), load_external_data=False)


def load(name: str) -> onnx.ModelProto:
    """The model with its seeded weights regenerated (cached in-process; a fresh copy each call)."""
    if name not in _model_cache:
        _model_cache[name] = regenerate(load_stored(name)).SerializeToString()
    return onnx.load_from_string(_model_cache[name])


def load_bytes(name: str) -> bytes:
    load(name)
    return _model_cache[name]


def cases(name: str) -> dict[str, dict]:
    return entry(name)["cases"]


_TERM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*|\d+)\s*$")


def eval_dim(dim, dims: dict[str, int]) -> int:
    """A dimension's value: an int, a symbol, or a dim_param expression as export tools write
    them ("past_sequence_length + sequence_length", "2*seq", "1")."""
    if isinstance(dim, int):
        return dim
    total = 0
    for term in str(dim).split("+"):
        product = 1
        for factor in term.split("*"):
            m = _TERM.match(factor)
            if not m:
                raise ValueError(f"cannot evaluate dim {dim!r}")
            tok = m.group(1)
            product *= int(tok) if tok.isdigit() else dims[tok]
        total += product
    return total


def input_shape(name: str, case: str, input_name: str) -> list[int]:
    spec = next(i for i in entry(name)["inputs"] if i["name"] == input_name)
    c = cases(name)[case]
    dims = dict(c["dims"])
    dims.update(c.get("dim_overrides", {}).get(input_name, {}))
    return [eval_dim(d, dims) for d in spec["shape"]]


def input_shapes(name: str, case: str) -> dict[str, list[int]]:
    """Concrete shape of every input in a case (onnxc's `input_shapes=`)."""
    return {i["name"]: input_shape(name, case, i["name"]) for i in entry(name)["inputs"]}


def feeds(name: str, case: str, rng: np.random.Generator | int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for one shape case: token ids below the vocabulary, attention
    masks of ones, position ids continuing the past, images in [0, 1), audio and features
    as standard normals, KV caches as standard normals, flags as the case says."""
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    c = cases(name)[case]
    out: dict[str, np.ndarray] = {}
    for spec in entry(name)["inputs"]:
        shape = input_shape(name, case, spec["name"])
        dtype = np.dtype(spec["dtype"]) if spec["dtype"] != "bool" else np.bool_
        kind = spec.get("kind", "normal")
        if kind == "token_ids":
            value = rng.integers(0, spec["vocab"], shape)
        elif kind == "ones":
            value = np.ones(shape)
        elif kind == "zeros":
            value = np.zeros(shape)
        elif kind == "position_ids":
            offset = c["dims"].get(spec["offset_dim"], 0) if spec.get("offset_dim") else 0
            value = np.broadcast_to(np.arange(offset, offset + shape[-1]), shape)
        elif kind == "image":
            value = rng.random(shape)
        elif kind == "flag":
            value = np.full(shape, c["values"][spec["name"]])
        elif kind == "normal":
            value = rng.standard_normal(shape) * spec.get("scale", 1.0)
        else:
            raise ValueError(f"{name}: input {spec['name']}: unknown kind {kind!r}")
        out[spec["name"]] = np.ascontiguousarray(np.asarray(value).astype(dtype))
    return out
