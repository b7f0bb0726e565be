"""The model repository on disk: Triton's layout, read without loading anything.

    REPO/<model>/config.pbtxt             Triton ModelConfig, text format (optional)
    REPO/<model>/<version>/model.onnx     compiled on load (through onnxc's compile cache)
    REPO/<model>/<version>/<artifact>/    or a directory made by `onnxc compile` (onnxc.load)

Keeping Triton's layout and config format means a Triton onnxruntime repository serves
unchanged. This module only reads: which models and versions there are, their configs,
which versions a policy selects, and the config completed from a compiled model (Triton's
auto-complete: missing inputs/outputs and max_batch_size come from the model). Every
problem is a ModelLoadError with the reason the repository index reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format, text_format
from google.protobuf.descriptor import FieldDescriptor

from onnxc.dialects.string_dtype import STRING_DTYPE
from onnxc.errors import ModelLoadError
from onnxc.serving import messages
from onnxc.serving.protocol_buffers import model_config

CONFIG_FILE = "config.pbtxt"
DEFAULT_MODEL_FILE = "model.onnx"
ARTIFACT_MANIFEST = "manifest.json"  # what makes a directory an `onnxc compile` artifact
DERIVED_MAX_BATCH_SIZE = 4
"""max_batch_size of a config derived from a model whose inputs and outputs all share a
symbolic leading dimension (Triton's --backend-config default-max-batch-size)"""


@dataclass
class VersionSource:
    """One version folder: what to load and a signature that changes when it does."""

    version: int
    payload: Path
    """model.onnx (or the config's default_model_filename) or an artifact directory"""
    signature: tuple
    """(path, size, mtime_ns) of the file poll mode compares to see a change"""


@dataclass
class ModelSource:
    """One model folder: its config (None: derive it) and its version folders."""

    name: str
    path: Path
    config: object | None
    """the parsed config.pbtxt (a ModelConfig), None when there is none"""
    config_signature: tuple
    versions: dict[int, VersionSource] = field(default_factory=dict)
    error: str | None = None
    """why the folder cannot be served (an unreadable config), None when it can"""


def _signature(path: Path) -> tuple:
    try:
        stat = path.stat()
    except OSError:
        return (str(path),)
    return (str(path), stat.st_size, stat.st_mtime_ns)


def parse_config_text(text: str, where: str) -> object:
    """A ModelConfig from config.pbtxt text, or ModelLoadError naming `where` and the error."""
    config = model_config().ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as error:
        raise ModelLoadError(f"{where}: {error}") from None
    return config


def parse_config_json(text: str, where: str) -> object:
    """A ModelConfig from Triton's JSON form (the `config` parameter of a load request)."""
    config = model_config().ModelConfig()
    try:
        json_format.Parse(text, config)
    except (json_format.ParseError, ValueError) as error:
        raise ModelLoadError(f"{where}: {error}") from None
    return config


def config_to_dict(config) -> dict:
    """Triton's JSON form of a config (what GET /v2/models/{m}/config answers): every
    field, defaults included, and 64-bit integers as JSON numbers, as Triton prints them
    (protobuf's JSON makes them strings; perf_analyzer reads `dims` as integers)."""
    data = json_format.MessageToDict(config, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)
    _int64_numbers(config.DESCRIPTOR, data)
    return data


_INT64 = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64,
          FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_FIXED64,
          FieldDescriptor.TYPE_SFIXED64}


def _int64_numbers(descriptor, data: dict) -> None:
    """Turn the 64-bit integer strings of `data` (a message of `descriptor`) into ints."""
    for member in descriptor.fields:
        if member.name not in data:
            continue
        value = data[member.name]
        kind = member.message_type
        if kind is not None and kind.GetOptions().map_entry:
            entry = kind.fields_by_name["value"]
            for key, item in value.items():
                if entry.message_type is not None:
                    _int64_numbers(entry.message_type, item)
                elif entry.type in _INT64:
                    value[key] = int(item)
        elif kind is not None:
            for item in value if isinstance(value, list) else [value]:
                _int64_numbers(kind, item)
        elif member.type in _INT64:
            data[member.name] = ([int(v) for v in value] if isinstance(value, list)
                                 else int(value))


def _payload(folder: Path, filename: str) -> Path | None:
    """What a version folder holds to load: the model file, else an artifact directory
    (the folder itself or one subdirectory with a manifest)."""
    candidate = folder / filename
    if candidate.is_file():
        return candidate
    if (folder / ARTIFACT_MANIFEST).is_file():
        return folder
    artifacts = sorted(p for p in folder.iterdir() if (p / ARTIFACT_MANIFEST).is_file())
    return artifacts[0] if artifacts else None


def scan_model(folder: Path, override=None) -> ModelSource:
    """Read one model folder (its config and version folders); never raises for content:
    a bad config or an unreadable folder is reported in `error`. `override`: a config
    given with a load request, whose default_model_filename then names the model file."""
    try:
        return _scan_model(folder, override)
    except OSError as error:
        return ModelSource(folder.name, folder, None, (), error=f"cannot read {folder}: "
                                                                f"{error.strerror or error}")


def _scan_model(folder: Path, override) -> ModelSource:
    config, error, signature = None, None, ()
    config_path = folder / CONFIG_FILE
    if config_path.is_file():
        signature = _signature(config_path)
        try:
            config = parse_config_text(config_path.read_text(), str(config_path))
        except (ModelLoadError, OSError, UnicodeDecodeError) as problem:
            error = str(problem)
    source = ModelSource(folder.name, folder, config, signature, error=error)
    named_by = override if override is not None else config
    filename = (named_by.default_model_filename if named_by is not None else ""
                ) or DEFAULT_MODEL_FILE
    if not plain_name(filename):
        source.error = f"{config_path}: default_model_filename {filename!r} is not a file name"
        return source
    for entry in sorted(folder.iterdir()):
        if not entry.is_dir() or not entry.name.isdigit() or int(entry.name) <= 0:
            continue  # Triton ignores folders that are not positive version numbers
        payload = _payload(entry, filename)
        if payload is None:
            continue  # an empty or half-copied version folder: not a version yet
        watched = payload / ARTIFACT_MANIFEST if payload.is_dir() else payload
        source.versions[int(entry.name)] = VersionSource(int(entry.name), payload,
                                                         _signature(watched))
    return source


def plain_name(name: object) -> bool:
    """Whether `name` is one file or folder name (no path, not hidden): what a model
    name, a model file name or a warmup file name from a config may be."""
    return (isinstance(name, str) and bool(name) and not name.startswith(".")
            and not any(c in name for c in "/\\\0"))


def model_folder(repository: Path, name: str) -> Path | None:
    """The folder of model `name`, None when there is none or the name is not one folder
    name (a client's "../x" must never reach outside the repository)."""
    if not plain_name(name):
        return None
    folder = repository / name
    return folder if folder.is_dir() else None


def scan(repository: Path) -> dict[str, ModelSource]:
    """Every model folder of the repository by name (hidden folders skipped)."""
    if not repository.is_dir():
        raise ModelLoadError(f"model repository {repository} is not a directory")
    return {entry.name: scan_model(entry) for entry in sorted(repository.iterdir())
            if entry.is_dir() and not entry.name.startswith(".")}


def select_versions(config, available: Sequence[int]) -> list[int]:
    """The versions the config's version_policy serves (Triton's default: latest 1)."""
    available = sorted(available)
    policy = config.version_policy if config is not None else None
    kind = policy.WhichOneof("policy_choice") if policy is not None else None
    if kind == "all":
        return available
    if kind == "specific":
        return [v for v in available if v in set(policy.specific.versions)]
    count = policy.latest.num_versions if kind == "latest" else 1
    return available[-max(count, 1):]


# Triton's TYPE_* names <-> the protocol's datatype names
_CONFIG_TYPES = {"TYPE_STRING": "BYTES"}


def protocol_datatype(data_type: int) -> str:
    """The protocol's datatype ("FP32") of a config's data_type enum value."""
    name = model_config().DataType.Name(data_type)
    return _CONFIG_TYPES.get(name, name.removeprefix("TYPE_"))


def config_data_type(datatype: str) -> int:
    """A config's data_type enum value of a protocol datatype."""
    name = "TYPE_STRING" if datatype == "BYTES" else f"TYPE_{datatype}"
    return model_config().DataType.Value(name)


def datatype_of(dtype) -> str:
    """The protocol datatype of a compiled model's tensor dtype (its native string pairs
    are BYTES)."""
    return "BYTES" if dtype == STRING_DTYPE else messages.datatype_of(dtype)


def _dims(shape: Sequence) -> list[int]:
    """A compiled model's shape in config form: symbolic dimensions are -1."""
    return [d if isinstance(d, int) else -1 for d in shape]


def _batchable(specs) -> bool:
    """Whether every tensor's leading dimension is one shared symbolic size (the batch)."""
    leads = {spec.shape[0] if spec.shape else 0 for spec in specs}
    return len(leads) == 1 and not isinstance(next(iter(leads)), int)


def complete_config(config, name: str, model) -> object:
    """`config` (None: none given) completed from the compiled `model` and checked
    against it: missing inputs/outputs filled in, given ones compared (name, type, dims).
    ModelLoadError with the reason when they disagree."""
    derived = config is None
    config = model_config().ModelConfig() if derived else type(config).FromString(
        config.SerializeToString())
    if config.name and config.name != name:
        raise ModelLoadError(f"config of model '{name}' names it '{config.name}'")
    config.name = name
    if not config.platform and not config.backend:
        config.platform = "onnxc"
    specs = [*model.inputs, *model.outputs]
    if derived and _batchable(specs):
        config.max_batch_size = DERIVED_MAX_BATCH_SIZE
        config.dynamic_batching.SetInParent()
    if config.max_batch_size < 0:
        raise ModelLoadError(f"model '{name}': max_batch_size {config.max_batch_size} < 0")
    batched = config.max_batch_size > 0
    optional = {spec.name for spec in getattr(model, "overridable_inputs", ())}
    for kind, entries, model_specs in (("input", config.input, model.inputs),
                                       ("output", config.output, model.outputs)):
        by_name = {spec.name: spec for spec in model_specs}
        if kind == "input":
            by_name.update({spec.name: spec
                            for spec in getattr(model, "overridable_inputs", ())})
        given = {entry.name for entry in entries}
        unknown = sorted(given - set(by_name))
        if unknown:
            raise ModelLoadError(f"model '{name}': config {kind}(s) {unknown} are not in the "
                                 f"model, which has {sorted(by_name)}")
        for spec in model_specs:
            if spec.name in given:
                continue
            entry = entries.add(name=spec.name,
                                data_type=config_data_type(datatype_of(spec.dtype)))
            entry.dims.extend(_dims(spec.shape[1:] if batched else spec.shape))
        for entry in entries:
            _check_entry(name, kind, entry, by_name[entry.name], batched)
            if kind == "input" and entry.name in optional:
                entry.optional = True
    return config


def _check_entry(model_name: str, kind: str, entry, spec, batched: bool) -> None:
    """ModelLoadError when a config input/output disagrees with the compiled model."""
    where = f"model '{model_name}' {kind} '{entry.name}'"
    datatype = datatype_of(spec.dtype)
    if protocol_datatype(entry.data_type) != datatype:
        raise ModelLoadError(f"{where}: config says {protocol_datatype(entry.data_type)}, "
                             f"the model takes {datatype}")
    shape = list(spec.shape)
    if batched:
        if not shape:
            raise ModelLoadError(f"{where}: max_batch_size > 0 but the model's tensor is "
                                 f"a scalar (no batch dimension)")
        lead = shape.pop(0)
        if isinstance(lead, int) and lead != 1:
            raise ModelLoadError(f"{where}: max_batch_size > 0 needs a symbolic batch "
                                 f"dimension or 1 (run per sample), the model has {lead}")
    dims = list(entry.dims)
    if len(entry.reshape.shape) or len(dims) != len(shape) or any(
            d != -1 and isinstance(m, int) and d != m for d, m in zip(dims, shape)):
        raise ModelLoadError(f"{where}: config dims {dims} do not match the model's "
                             f"{_dims(shape)}" + (" (after the batch dimension)"
                                                  if batched else ""))
    for i, (d, m) in enumerate(zip(dims, shape)):
        if d == -1 and isinstance(m, int):
            entry.dims[i] = m  # the model fixes it: metadata tells clients the real size


def parse_traffic(text: str, name: str) -> dict[str, int]:
    """{"1": 90, "2": 10} from "1:90,2:10"."""
    weights: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        version, _, weight = part.partition(":")
        try:
            if int(version) <= 0 or int(weight) < 0:
                raise ValueError
            weights[str(int(version))] = int(weight)
        except ValueError:
            raise ModelLoadError(f"model '{name}': traffic {text!r}: '{part}' is not "
                                 f"version:percent") from None
    if not weights or sum(weights.values()) <= 0:
        raise ModelLoadError(f"model '{name}': traffic {text!r} gives no version a weight")
    return weights


def parameter(config, key: str) -> str | None:
    """A string parameter of the config, None when absent."""
    if config is None or key not in config.parameters:
        return None
    return config.parameters[key].string_value


def instance_count(config) -> int:
    """Executor threads per version: instance_group[0].count (Triton's default 1)."""
    if config is not None and len(config.instance_group) and config.instance_group[0].count:
        return max(1, config.instance_group[0].count)
    return 1
