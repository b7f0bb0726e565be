"""Export the nets benchmarks/nets.py times: torchvision and Hugging Face, as users export them.

The built-in benchmark models (onnxc.zoo) are old ONNX-zoo files and hand-built graphs; what
users compile today comes out of `torch.onnx.export`. This script writes such exports, full
size, batch 1, every shape fixed, opset 17, by the TorchScript exporter
(`torch.onnx.export(dynamo=False)`, falling back to the dynamo exporter only where it fails,
which the manifest then says), with seeded random weights: torchvision constructors with
`weights=None` (BatchNorm statistics then measured on random images: realistic_scale),
Hugging Face models built from their config classes (no hub download). The models are
hundreds of MB each (2.5 GB in all) and are not committed; this script regenerates them.

It runs in the export venv, not in onnxc's environment, with the versions pinned in
tests/models/real_exports/requirements.txt (torch 2.14.1, torchvision 0.29.1, transformers
4.57.6, onnx 1.23.2, onnxruntime 1.32.0):

    python -m venv /work/venvs/export
    /work/venvs/export/bin/pip install -r tests/models/real_exports/requirements.txt
    /work/venvs/export/bin/python benchmarks/nets_export.py                  # all 19 nets
    /work/venvs/export/bin/python benchmarks/nets_export.py resnet18 bert_base --out DIR

Writes DIR/<name>.onnx (default ~/.cache/onnxc/nets/) and DIR/manifest.json: per net the
exporter and package versions, GFLOP (torch's FLOP counter: 2 per multiply-add of matmuls
and convolutions), the inputs (name, shape, dtype, and for integer inputs how to fill them:
token ids below `vocab`, an all-ones mask, zeros) and outputs. Every export is run once by
onnxruntime and must match torch (rtol 1e-3, atol 1e-4) with outputs of some size.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import onnx
import onnxruntime as ort
import torch

DEFAULT_DIR = Path.home() / ".cache" / "onnxc" / "nets"
OPSET = 17
DYNAMO_OPSET = 18
MIN_OUTPUT = 1e-2
"""The largest |output| an export must reach (against bench's atol 1e-4)."""
SEED = 0
SEQUENCE = 128
SEGMENTATION_SIZE = 520
"""deeplabv3_mobilenet_v3_large's input side: torchvision's evaluation size for it."""

warnings.filterwarnings("ignore")


@dataclass
class Net:
    """A module to export and the example inputs it is traced with (their order is the
    forward's argument order); `kinds` says how nets.py fills each integer input."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    outputs: list[str]
    packages: tuple[str, ...]
    kinds: dict[str, dict] = field(default_factory=dict)
    patch: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    """what the export runs under (vmap_free_masks for GPT-2)"""


# ------------------------------------------------------------------ torchvision

def _image(size: int = 224) -> dict[str, torch.Tensor]:
    return {"input": torch.rand(1, 3, size, size)}


class _SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return {"out": ...}; the export takes the tensor."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def realistic_scale(model: torch.nn.Module, size: int, batch: int = 8) -> torch.nn.Module:
    """`model` with its BatchNorm statistics measured on random images and its zero-initialized
    layers drawn: at initialization, BatchNorm's statistics (mean 0, variance 1) are not the
    activations' and shrink each block's output (MobileNetV3's logits come out near 1e-10,
    EfficientNet-B0's near 1e-14), and ViT's head is zeros (its logits are 0): any runtime's
    output would then pass the comparison's tolerance. A few train-mode passes set every
    BatchNorm's running mean and variance to the cumulative average of its batches', as
    BatchNorm recalibration does, so each normalized activation has about unit variance as in
    a trained net."""
    for layer in model.modules():
        if isinstance(layer, torch.nn.Linear) and not layer.weight.any():
            torch.nn.init.trunc_normal_(layer.weight, std=0.02)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # cumulative average
    if norms:
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(torch.rand(batch, 3, size, size))
    return model.eval()


def torchvision_net(name: str, **kwargs) -> Callable[[], Net]:
    def build() -> Net:
        import torchvision

        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        return Net(realistic_scale(model, 224), _image(), ["logits"],
                   ("torch", "torchvision", "onnx"))

    return build


def deeplabv3() -> Net:
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large

    # weights_backbone defaults to ImageNet weights, a download
    model = deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None)
    model = realistic_scale(_SegmentationOut(model), SEGMENTATION_SIZE, batch=2)
    return Net(model, _image(SEGMENTATION_SIZE), ["out"],
               ("torch", "torchvision", "onnx"))


# ------------------------------------------------------------------ Hugging Face

class _Encoder(torch.nn.Module):
    """A transformers model called with its inputs by keyword, returning its first output
    (the last hidden state, or the LM's logits) as a tensor."""

    def __init__(self, model: torch.nn.Module, names: list[str]):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), return_dict=False)[0]


def _text_inputs(names: list[str], vocab: int) -> tuple[dict[str, torch.Tensor], dict]:
    generator = torch.Generator().manual_seed(SEED)
    inputs, kinds = {}, {}
    for name in names:
        if name == "input_ids":
            inputs[name] = torch.randint(0, vocab, (1, SEQUENCE), generator=generator)
            kinds[name] = {"kind": "token_ids", "vocab": vocab}
        elif name == "attention_mask":
            inputs[name] = torch.ones(1, SEQUENCE, dtype=torch.int64)
            kinds[name] = {"kind": "ones"}
        else:  # token_type_ids: one segment
            inputs[name] = torch.zeros(1, SEQUENCE, dtype=torch.int64)
            kinds[name] = {"kind": "zeros"}
    return inputs, kinds


@contextlib.contextmanager
def vmap_free_masks() -> Iterator[None]:
    """transformers >= 4.53 builds a decoder's causal mask with torch.vmap, which the
    TorchScript exporter cannot trace (RuntimeError: unordered_map::at); optimum-onnx's
    exporter registers its vmap-free mask functions for the export, and so does this."""
    from optimum.exporters.onnx.model_patcher import (eager_mask_without_vmap,
                                                      sdpa_mask_without_vmap)
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask, sdpa_mask

    ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", sdpa_mask_without_vmap)
    ALL_MASK_ATTENTION_FUNCTIONS.register("eager", eager_mask_without_vmap)
    try:
        yield
    finally:
        ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", sdpa_mask)
        ALL_MASK_ATTENTION_FUNCTIONS.register("eager", eager_mask)


def hf_net(build_model: Callable[[], torch.nn.Module], names: list[str], output: str,
           patch: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
           patch_package: tuple[str, ...] = ()) -> Callable[[], Net]:
    def build() -> Net:
        model = build_model()
        inputs, kinds = _text_inputs(names, model.config.vocab_size)
        return Net(_Encoder(model, names), inputs, [output],
                   ("torch", "transformers", *patch_package, "onnx"), kinds, patch)

    return build


def bert_base() -> torch.nn.Module:
    import transformers

    return transformers.AutoModel.from_config(transformers.BertConfig())  # = bert-base-uncased


def gpt2_small() -> torch.nn.Module:
    import transformers

    # GPT2Config() is gpt2 (124M); the LM head, as a text-generation export has it
    return transformers.AutoModelForCausalLM.from_config(transformers.GPT2Config(use_cache=False))


def roberta_base() -> torch.nn.Module:
    import transformers

    # roberta-base's config.json (RobertaConfig()'s defaults are BERT's sizes otherwise)
    config = transformers.RobertaConfig(
        vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
        bos_token_id=0, eos_token_id=2, pad_token_id=1)
    return transformers.AutoModel.from_config(config)


def t5_small_encoder() -> torch.nn.Module:
    import transformers

    return transformers.T5EncoderModel(transformers.T5Config())  # T5Config() is t5-small


NETS: dict[str, Callable[[], Net]] = {
    "resnet50": torchvision_net("resnet50"),
    "resnet18": torchvision_net("resnet18"),
    "regnet_y_800mf": torchvision_net("regnet_y_800mf"),
    "mnasnet1_0": torchvision_net("mnasnet1_0"),
    "mobilenet_v3_large": torchvision_net("mobilenet_v3_large"),
    "efficientnet_b0": torchvision_net("efficientnet_b0"),
    "densenet121": torchvision_net("densenet121"),
    "convnext_tiny": torchvision_net("convnext_tiny"),
    "vit_b_16": torchvision_net("vit_b_16"),
    "swin_t": torchvision_net("swin_t"),
    "deeplabv3_mobilenet_v3_large": deeplabv3,
    "squeezenet1_1": torchvision_net("squeezenet1_1"),
    "shufflenet_v2_x1_0": torchvision_net("shufflenet_v2_x1_0"),
    "googlenet": torchvision_net("googlenet", aux_logits=False, init_weights=True),
    "mobilenet_v2": torchvision_net("mobilenet_v2"),
    "bert_base": hf_net(bert_base, ["input_ids", "attention_mask", "token_type_ids"],
                        "last_hidden_state"),
    "gpt2_small": hf_net(gpt2_small, ["input_ids", "attention_mask"], "logits",
                         vmap_free_masks, ("optimum-onnx",)),
    "roberta_base": hf_net(roberta_base, ["input_ids", "attention_mask"], "last_hidden_state"),
    "t5_small_encoder": hf_net(t5_small_encoder, ["input_ids", "attention_mask"],
                               "last_hidden_state"),
}


# ------------------------------------------------------------------ export

def gflop(net: Net) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:  # grad on, as in the export: no fused attention the counter cannot see
        net.module(*net.inputs.values())
    return counter.get_total_flops() / 1e9


def _export(net: Net, path: Path, dynamo: bool) -> None:
    # the dynamo exporter starts at opset 18: converted down to 17 its Splits are invalid
    torch.onnx.export(net.module, tuple(net.inputs.values()), str(path),
                      input_names=list(net.inputs), output_names=net.outputs,
                      opset_version=max(OPSET, DYNAMO_OPSET) if dynamo else OPSET, dynamo=dynamo)
    if dynamo:  # the dynamo exporter may write the weights beside the file: one file
        model = onnx.load(str(path), load_external_data=True)
        for extra in path.parent.glob(path.name + ".data"):
            extra.unlink()
        onnx.save_model(model, str(path))


def export(name: str, out: Path) -> dict:
    """Export one net to out/<name>.onnx, check it under onnxruntime; its manifest entry."""
    torch.manual_seed(SEED)
    net = NETS[name]()
    net.module.eval()
    path = out / f"{name}.onnx"
    tool, note = "torch.onnx.export(dynamo=False)", ""
    start = time.perf_counter()
    # not under torch.no_grad(), as users call it: there nn.MultiheadAttention takes its fused
    # inference path (aten::_native_multi_head_attention), which the TorchScript exporter lacks
    try:
        with net.patch():
            _export(net, path, dynamo=False)
    except Exception as err:  # noqa: BLE001 - the dynamo exporter is the fallback
        note = f"TorchScript exporter failed: {type(err).__name__}: {str(err).splitlines()[0]}"
        print(f"  {note}; trying dynamo=True", flush=True)
        tool = "torch.onnx.export(dynamo=True)"
        with net.patch():
            _export(net, path, dynamo=True)
    seconds = time.perf_counter() - start
    model = onnx.load(str(path))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {k: v.numpy() for k, v in net.inputs.items()})
    with torch.no_grad():
        expected = net.module(*net.inputs.values()).numpy()
    if not np.all(np.isfinite(outputs[0])):
        raise AssertionError(f"{name}: onnxruntime gives non-finite outputs")
    torch_diff = float(np.abs(outputs[0] - expected).max())
    if not np.allclose(outputs[0], expected, rtol=1e-3, atol=1e-4):
        raise AssertionError(f"{name}: onnxruntime differs from torch by {torch_diff:.2g}")
    if np.abs(expected).max() < MIN_OUTPUT:
        raise AssertionError(f"{name}: outputs up to {np.abs(expected).max():.2g} only: the "
                             f"comparison with onnxruntime would pass any runtime")
    inputs = [{"name": k, "shape": list(v.shape), "dtype": str(v.numpy().dtype),
               **net.kinds.get(k, {})} for k, v in net.inputs.items()]
    entry = {
        "file": path.name,
        "tool": tool,
        "versions": {p: importlib.metadata.version(p) for p in net.packages},
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        "seed": SEED,
        "gflop": round(gflop(net), 3),
        "inputs": inputs,
        "outputs": [{"name": o.name, "shape": [d.dim_value for d in o.type.tensor_type.shape.dim]}
                    for o in model.graph.output],
        "nodes": len(model.graph.node),
        "max_abs_output": float(np.abs(expected).max()),
        "onnxruntime_vs_torch": torch_diff,
        "bytes": path.stat().st_size,
    }
    if note:
        entry["note"] = note
    print(f"  {name}: {entry['bytes'] / 1e6:.1f} MB, {entry['nodes']} nodes, "
          f"{entry['gflop']} GFLOP, |onnxruntime - torch| {torch_diff:.1e} "
          f"(|output| up to {entry['max_abs_output']:.3g}), exported in {seconds:.1f} s "
          f"({tool})", flush=True)
    return entry


def write_manifest(out: Path, entries: dict[str, dict]) -> None:
    """Merge `entries` into out/manifest.json (a partial run keeps the other nets)."""
    path = out / "manifest.json"
    data = json.loads(path.read_text()) if path.exists() else {"nets": {}}
    data["nets"].update(entries)
    data["nets"] = {k: data["nets"][k] for k in NETS if k in data["nets"]}
    path.write_text(json.dumps(data, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*",
                        help=f"nets to export (default: all): {', '.join(NETS)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR,
                        help=f"directory of the .onnx files and manifest.json ({DEFAULT_DIR})")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in NETS]
    if unknown:
        parser.error(f"unknown net {', '.join(unknown)}; choose from {', '.join(NETS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    failed = []
    for name in args.names or NETS:
        print(f"{name}", flush=True)
        try:
            write_manifest(args.out, {name: export(name, args.out)})
        except Exception as err:  # noqa: BLE001 - one net's failure does not stop the others
            failed.append(name)
            print(f"  FAILED: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}",
                  flush=True)
    print(f"wrote {args.out}; {'failed: ' + ', '.join(failed) if failed else 'all exported'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
