"""Regenerate the real-export corpus (models/*.onnx and models/manifest.json).

Runs in the export venv, not in onnxc's environment (it needs torch, transformers, optimum):

    python -m venv /work/venvs/export
    /work/venvs/export/bin/pip install -r tests/models/real_exports/requirements.txt
    /work/venvs/export/bin/python tests/models/real_exports/generate.py            # everything
    /work/venvs/export/bin/python tests/models/real_exports/generate.py llama bert # some families

Every model is built from a small config or constructor with seeded random weights (no hub
download: HF_HUB_OFFLINE=1), written by the export tool users run (optimum-onnx's
`main_export`, torch.onnx's TorchScript and dynamo exporters, onnxruntime's quantizers and
float16 converter) with that tool's defaults unless a comment says otherwise, then stored
with its large tensors as seeded recipes (corpus.compact, see corpus.py) and checked: the
stored model, its weights regenerated, runs every shape case of the manifest under
onnxruntime with finite outputs (detectors: a non-empty, non-capped set of detections).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

if os.environ.get("PYTHONHASHSEED") != "0":
    # optimum's merge_decoders walks sets of initializer names: their order (and so the merged
    # decoder's initializer names and order) follows the string hash seed
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import onnx
import onnxruntime as ort
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus

OUT = corpus.MODELS
SEED = 0
TMP = Path(tempfile.mkdtemp(prefix="real_exports_"))

warnings.filterwarnings("ignore")
logging.disable(logging.INFO)  # onnxruntime's quantizers log every node
torch.set_num_threads(1)


def version(pkg: str) -> str:
    return importlib.metadata.version(pkg)


def versions(*pkgs: str) -> dict[str, str]:
    return {p: version(p) for p in pkgs}


OPTIMUM = ("optimum-onnx", "optimum", "transformers", "torch", "onnx")
TORCH = ("torch", "onnx")
TORCHVISION = ("torch", "torchvision", "onnx")
DYNAMO = ("torch", "onnxscript", "onnx")
ORT_TOOLS = ("onnxruntime", "onnx")


def seed(n: int = SEED) -> None:
    torch.manual_seed(n)
    np.random.seed(n)


# --- saving and checking --------------------------------------------------------------------------

def _dtype_name(elem_type: int) -> str:
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name


def _dims(value_info) -> list:
    return [d.dim_param if d.HasField("dim_param") else int(d.dim_value)
            for d in value_info.type.tensor_type.shape.dim]


def _ort_session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # no warnings about initializers a pruned graph leaves
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


MANIFEST: dict = {}


def _subgraph_inputs(node: onnx.NodeProto) -> set[str]:
    names: set[str] = set()
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for n in g.node:
                names.update(n.input)
                names |= _subgraph_inputs(n)
    return names


def _extra_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """`model` computing only `names` (intermediate values): the graph's outputs are those,
    and the nodes nothing of them needs are dropped (the R-CNNs' mask pasting loop...)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    producer = {o: i for i, n in enumerate(graph.node) for o in n.output}
    needed, stack = set(), list(names)
    seen = set()
    while stack:
        t = stack.pop()
        if t in seen or t not in producer:
            continue
        seen.add(t)
        i = producer[t]
        if i in needed:
            continue
        needed.add(i)
        node = graph.node[i]
        stack.extend(list(node.input) + sorted(_subgraph_inputs(node)))
    kept = [n for i, n in enumerate(graph.node) if i in needed]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.output[:]
    for n in dict.fromkeys(names):
        graph.output.append(onnx.helper.make_empty_tensor_value_info(n))
    return out


def match_activations(original: onnx.ModelProto, stored: onnx.ModelProto, feeds: dict
                      ) -> onnx.ModelProto:
    """Rescale the `normal_rows` recipes of Conv weights so that each output channel of every
    such Conv has, on `feeds`, the RMS (bias left out) it had with the original weights.

    Weights drawn anew lose what tied them to the data: with BatchNorm folded into the
    convolutions (its statistics measured with the original weights), a redrawn channel's
    response to its inputs' per-channel means differs, and the redrawn RMS is larger on
    average (Jensen); through ResNet-50's 50 convolutions that compounds to 100x (retinanet's
    scores all 1.0). The Convs are matched level by level (a Conv after every Conv it
    depends on, as LSUV initialization does), one onnxruntime run per level."""
    props = {p.key: p for p in stored.metadata_props}
    spec = json.loads(props[corpus.METADATA_KEY].value)
    recipes = spec["tensors"]
    inits = {t.name: t for t in original.graph.initializer}
    producer = {o: n for n in original.graph.node for o in n.output}
    convs: dict[str, list[tuple[str, np.ndarray | None]]] = {}
    for node in original.graph.node:
        if node.op_type != "Conv" or len(node.input) < 2:
            continue
        key = f"init:{node.input[1]}"
        if recipes.get(key, {}).get("dist") != "normal_rows":
            continue
        bias = (onnx.numpy_helper.to_array(inits[node.input[2]])
                if len(node.input) > 2 and node.input[2] in inits else None)
        convs.setdefault(key, []).append((node.output[0], bias))
    if not convs:
        return stored
    key_of = {out: key for key, uses in convs.items() for out, _ in uses}

    # level of a tensor: how many matched Convs lie on its longest path from the inputs
    level_memo: dict[str, int] = {}

    def level(tensor: str) -> int:
        stack = [tensor]
        while stack:
            t = stack[-1]
            if t in level_memo:
                stack.pop()
                continue
            node = producer.get(t)
            pending = [i for i in (node.input if node else []) if i and i not in level_memo]
            if pending:
                stack.extend(pending)
                continue
            base = max((level_memo[i] for i in node.input if i), default=0) if node else 0
            level_memo[t] = base + (1 if t in key_of else 0)
            stack.pop()
        return level_memo[tensor]

    key_level = {key: max(level(out) for out, _ in uses) for key, uses in convs.items()}

    def rms(model: onnx.ModelProto, keys: list[str]) -> dict[str, np.ndarray]:
        names = [out for key in keys for out, _ in convs[key]]
        values = dict(zip(names, _ort_session(_extra_outputs(model, names)).run(names, feeds)))
        result = {}
        for key in keys:
            total, count = 0.0, 0
            for out, bias in convs[key]:
                v = values[out].astype(np.float64)
                if bias is not None:
                    v = v - bias.reshape(1, -1, *([1] * (v.ndim - 2)))
                total = total + (v ** 2).sum(axis=tuple(i for i in range(v.ndim) if i != 1))
                count += v.size // v.shape[1]
            result[key] = np.sqrt(total / max(count, 1))
        return result

    target = rms(original, list(convs))
    worst = 1.0
    for lvl in sorted(set(key_level.values())):
        keys = [k for k, v in key_level.items() if v == lvl]
        current = onnx.ModelProto()
        current.CopyFrom(stored)
        {p.key: p for p in current.metadata_props}[corpus.METADATA_KEY].value = json.dumps(spec)
        got = rms(corpus.regenerate(current), keys)
        for key in keys:
            ok = (got[key] > 1e-12) & (target[key] > 0) & np.isfinite(got[key])
            factor = np.where(ok, target[key] / np.where(ok, got[key], 1.0), 1.0)
            worst = max(worst, float(factor.max()), float(1 / factor.min()))
            r = recipes[key]
            r["std"] = corpus._pack_f32(corpus._unpack_f32(r["std"]) * factor)
            r["mean"] = corpus._pack_f32(corpus._unpack_f32(r["mean"]) * factor)
    print(f"    match_activations: {len(convs)} Conv weights in "
          f"{len(set(key_level.values()))} levels, largest channel factor {worst:.3g}", flush=True)
    props = {p.key: p for p in stored.metadata_props}
    props[corpus.METADATA_KEY].value = json.dumps(spec, sort_keys=True)
    return stored


def save(name: str, model: onnx.ModelProto, *, tool: str, tool_versions: dict, description: str,
         kinds: dict, cases: dict, detections: str | None = None, notes: str = "",
         match: bool = False) -> None:
    """Compact `model` into models/<name>.onnx and record it in the manifest.

    kinds: input name -> {"kind": ..., ...} (corpus.feeds); inputs not named are standard
    normals. cases: case name -> {"dims": {symbol: value}, "values": {...}, ...}.
    detections: the output whose first dimension counts detections (checked non-empty)."""
    stored = corpus.compact(model)
    path = OUT / f"{name}.onnx"
    onnx.save(stored, str(path))  # manifest entry first: the feeds come from it
    inputs = []
    initializer_names = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in initializer_names:
            continue
        spec = {"name": vi.name, "dtype": _dtype_name(vi.type.tensor_type.elem_type),
                "shape": _dims(vi)}
        spec.update(kinds.get(vi.name, {"kind": "normal"}))
        inputs.append(spec)
    symbols = sorted({d for i in inputs for d in i["shape"] if isinstance(d, str)})
    entry = {
        "file": path.name,
        "description": description,
        "tool": tool,
        "versions": tool_versions,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "ir_version": model.ir_version,
        "opset_import": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "inputs": inputs,
        "outputs": [{"name": vo.name, "dtype": _dtype_name(vo.type.tensor_type.elem_type),
                     "shape": _dims(vo)} for vo in model.graph.output],
        "symbols": symbols,
        "cases": cases,
        "bytes": path.stat().st_size,
        "seeded_tensors": len(json.loads(next((p.value for p in stored.metadata_props
                                                if p.key == corpus.METADATA_KEY),
                                               '{"tensors": {}}'))["tensors"]),
    }
    if notes:
        entry["notes"] = notes
    MANIFEST[name] = entry
    _write_manifest()
    if match:
        first_case = next(iter(cases))
        stored = match_activations(model, stored, corpus.feeds(name, first_case, 2))
        onnx.save(stored, str(path))
        entry["bytes"] = path.stat().st_size
        entry["notes"] = (entry.get("notes", "") + " Conv weight recipes rescaled to the "
                          "original's per-channel activation RMS (generate.match_activations)."
                          ).strip()
        _write_manifest()
    check(name, detections)


def _write_manifest() -> None:
    path = corpus.MANIFEST
    data = json.loads(path.read_text()) if path.exists() else {"models": {}}
    data["models"].update(MANIFEST)
    data["models"] = dict(sorted(data["models"].items()))
    data["seeded_threshold"] = corpus.THRESHOLD
    data["total_bytes"] = sum((OUT / e["file"]).stat().st_size for e in data["models"].values()
                              if (OUT / e["file"]).exists())
    path.write_text(json.dumps(data, indent=1) + "\n")
    corpus._manifest_cache = None


def check(name: str, detections: str | None = None) -> None:
    """The stored model, regenerated, runs every case under onnxruntime with finite outputs."""
    corpus._manifest_cache = None
    corpus._model_cache.pop(name, None)
    model = corpus.load(name)
    session = _ort_session(model)
    cap = next((v for k, v in DETECTORS.get(name, {}).items() if k.endswith("detections_per_img")),
               None)
    names = [o.name for o in session.get_outputs()]
    report = []
    for case in corpus.cases(name):
        feeds = corpus.feeds(name, case, np.random.default_rng(1))
        outs = dict(zip(names, session.run(None, feeds)))
        for out_name, value in outs.items():
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise AssertionError(f"{name} [{case}]: {out_name} has non-finite values")
        if detections is not None:
            n = outs[detections].shape[0]
            report.append(f"{case}: {n} detections" + (" (the cap)" if n == cap else ""))
            if n == 0:
                raise AssertionError(f"{name} [{case}]: no detections")
        else:
            first = names[0]
            report.append(f"{case}: {first} {list(outs[first].shape)}")
    print(f"  {name}: {(OUT / corpus.entry(name)['file']).stat().st_size / 1e3:.0f} kB; "
          + "; ".join(report), flush=True)


# --- optimum: decoder-only LLMs -------------------------------------------------------------------

def _optimum_export(hf_model, task: str, **kwargs) -> Path:
    from optimum.exporters.onnx import main_export
    src = TMP / f"{hf_model.config.model_type}_src"
    out = TMP / f"{hf_model.config.model_type}_{task}"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    hf_model.save_pretrained(src)
    with contextlib.redirect_stdout(io.StringIO()):
        main_export(str(src), str(out), task=task, **kwargs)
    return out


def _load_full(path: Path) -> onnx.ModelProto:
    return onnx.load(str(path), load_external_data=True)


LLM_CONFIGS = {
    # vocab 256, hidden 64, 2 layers, 4 heads (2 KV heads where the arch has GQA)
    "llama": ("LlamaConfig", {"num_key_value_heads": 2}),
    "qwen2": ("Qwen2Config", {"num_key_value_heads": 2}),
    "phi3": ("Phi3Config", {"num_key_value_heads": 2, "pad_token_id": 0, "bos_token_id": 1,
                            "eos_token_id": 2, "original_max_position_embeddings": 256}),
    "gemma": ("GemmaConfig", {"num_key_value_heads": 2, "head_dim": 16}),
    "gemma2": ("Gemma2Config", {"num_key_value_heads": 2, "head_dim": 16,
                                "query_pre_attn_scalar": 16, "sliding_window": 64}),
    "mistral": ("MistralConfig", {"num_key_value_heads": 2, "sliding_window": 64}),
    "gpt_neox": ("GPTNeoXConfig", {}),
}
LLM_COMMON = dict(vocab_size=256, hidden_size=64, intermediate_size=128,  # noqa: C408
                  num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=256)


def _decoder_kinds(model: onnx.ModelProto, vocab: int) -> dict:
    kinds = {}
    for vi in model.graph.input:
        if vi.name == "input_ids":
            kinds[vi.name] = {"kind": "token_ids", "vocab": vocab}
        elif vi.name in ("attention_mask", "decoder_attention_mask"):
            kinds[vi.name] = {"kind": "ones"}
        elif vi.name == "token_type_ids":
            kinds[vi.name] = {"kind": "zeros"}
        elif vi.name == "position_ids":
            kinds[vi.name] = {"kind": "position_ids", "offset_dim": "past_sequence_length"}
        elif vi.name == "use_cache_branch":
            kinds[vi.name] = {"kind": "flag"}
    return kinds


DECODER_CASES = {
    "prefill": {"dims": {"batch_size": 1, "sequence_length": 5, "past_sequence_length": 0}},
    "decode": {"dims": {"batch_size": 1, "sequence_length": 1, "past_sequence_length": 5}},
    "batch2": {"dims": {"batch_size": 2, "sequence_length": 3, "past_sequence_length": 4}},
}


def build_llm(arch: str) -> onnx.ModelProto:
    import transformers
    config_cls, extra = LLM_CONFIGS[arch]
    config = getattr(transformers, config_cls)(**LLM_COMMON, **extra)
    seed()
    hf = transformers.AutoModelForCausalLM.from_config(config).eval()
    out = _optimum_export(hf, "text-generation-with-past")
    return _load_full(out / "model.onnx")


def _save_llm(name: str, model: onnx.ModelProto, description: str, tool: str, tool_versions: dict,
              notes: str = "") -> None:
    save(name, model, tool=tool, tool_versions=tool_versions, description=description,
         kinds=_decoder_kinds(model, 256), cases=DECODER_CASES, notes=notes)


def family_llm(arch: str) -> None:
    model = build_llm(arch)
    _save_llm(arch, model,
              f"{arch}: AutoModelForCausalLM.from_config (hidden 64, 2 layers, 4 heads), "
              "optimum text-generation-with-past: one model taking past_key_values "
              "(past length 0 at prefill)",
              "optimum-onnx main_export(task='text-generation-with-past')", versions(*OPTIMUM))
    if arch == "llama":
        _llama_quantized(model)


def _llama_quantized(model: onnx.ModelProto) -> None:
    from onnxruntime.quantization import QuantFormat, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    src = TMP / "llama_fp32.onnx"
    onnx.save(model, str(src))

    int8 = TMP / "llama_int8.onnx"
    quantize_dynamic(str(src), str(int8))  # defaults: QInt8 weights, QOperator (MatMulInteger)
    _save_llm("llama_int8_dynamic", _load_full(int8),
              "llama above, onnxruntime quantize_dynamic with its defaults (int8 weights, "
              "QOperator: DynamicQuantizeLinear + MatMulInteger)",
              "onnxruntime.quantization.quantize_dynamic", versions(*ORT_TOOLS))

    quantizer = MatMulNBitsQuantizer(onnx.load(str(src)), bits=4, block_size=32,
                                     quant_format=QuantFormat.QDQ)
    quantizer.process()
    _save_llm("llama_int4_qdq", quantizer.model.model,
              "llama above, onnxruntime MatMulNBitsQuantizer(bits=4, block_size=32, "
              "quant_format=QDQ): MatMul weights as int4 DequantizeLinear (blocked, axis 0) "
              "-> MatMul",
              "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer",
              versions(*ORT_TOOLS))


# --- optimum: Whisper -----------------------------------------------------------------------------

def family_whisper() -> None:
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    config = WhisperConfig(
        vocab_size=256, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_ffn_dim=128, num_mel_bins=80, max_source_positions=64, max_target_positions=128,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        suppress_tokens=[], begin_suppress_tokens=[])
    seed()
    hf = WhisperForConditionalGeneration(config).eval()
    # 128 mel frames (2 x max_source_positions): Whisper refuses any other length, and
    # optimum's dummy input defaults to 3000 frames
    out = _optimum_export(hf, "automatic-speech-recognition-with-past", nb_max_frames=128)
    tool = "optimum-onnx main_export(task='automatic-speech-recognition-with-past')"
    what = ("WhisperForConditionalGeneration (d_model 64, 2+2 layers, 4 heads, 80 mel bins, "
            "128 frames), optimum automatic-speech-recognition-with-past")
    enc = 64  # encoder frames after the stride-2 conv
    vocab = 256
    save("whisper_encoder", _load_full(out / "encoder_model.onnx"), tool=tool,
         tool_versions=versions(*OPTIMUM), description=f"{what}: encoder_model.onnx",
         kinds={}, cases={"batch1": {"dims": {"batch_size": 1}},
                          "batch2": {"dims": {"batch_size": 2}}})
    model = _load_full(out / "decoder_model.onnx")
    save("whisper_decoder", model, tool=tool, tool_versions=versions(*OPTIMUM),
         description=f"{what}: decoder_model.onnx (no past; returns the first KV caches)",
         kinds=_decoder_kinds(model, vocab),
         cases={"prefill": {"dims": {"batch_size": 1, "decoder_sequence_length": 4,
                                     "encoder_sequence_length": enc}},
                "batch2": {"dims": {"batch_size": 2, "decoder_sequence_length": 3,
                                    "encoder_sequence_length": enc}}})
    model = _load_full(out / "decoder_with_past_model.onnx")
    save("whisper_decoder_with_past", model, tool=tool, tool_versions=versions(*OPTIMUM),
         description=f"{what}: decoder_with_past_model.onnx (self- and cross-attention caches in)",
         kinds=_decoder_kinds(model, vocab),
         cases={"decode": {"dims": {"batch_size": 1, "decoder_sequence_length": 1,
                                    "past_decoder_sequence_length": 5,
                                    "encoder_sequence_length": enc}},
                "batch2": {"dims": {"batch_size": 2, "decoder_sequence_length": 1,
                                    "past_decoder_sequence_length": 3,
                                    "encoder_sequence_length": enc}}})
    model = _load_full(out / "decoder_model_merged.onnx")
    past_inputs = [vi.name for vi in model.graph.input if vi.name.startswith("past_key_values")]
    save("whisper_decoder_merged", model, tool=tool, tool_versions=versions(*OPTIMUM),
         description=f"{what}: decoder_model_merged.onnx (optimum's merge of the two decoders, "
                     "an If on use_cache_branch)",
         kinds=_decoder_kinds(model, vocab),
         cases={
             # optimum's ORTModelForSpeechSeq2Seq feeds empty caches (length 0, cross-attention
             # ones too) and use_cache_branch False at the first step
             "prefill": {"dims": {"batch_size": 1, "decoder_sequence_length": 4,
                                  "past_decoder_sequence_length": 0,
                                  "encoder_sequence_length": enc},
                         "values": {"use_cache_branch": False},
                         "dim_overrides": {n: {"encoder_sequence_length": 0}
                                           for n in past_inputs if ".encoder." in n}},
             "decode": {"dims": {"batch_size": 1, "decoder_sequence_length": 1,
                                 "past_decoder_sequence_length": 5,
                                 "encoder_sequence_length": enc},
                        "values": {"use_cache_branch": True}},
             "batch2": {"dims": {"batch_size": 2, "decoder_sequence_length": 1,
                                 "past_decoder_sequence_length": 3,
                                 "encoder_sequence_length": enc},
                        "values": {"use_cache_branch": True}},
         },
         notes="prefill: the cross-attention caches are empty (length 0) while "
               "encoder_hidden_states has encoder_sequence_length 64, as optimum feeds them")


# --- optimum: BERT --------------------------------------------------------------------------------

def family_bert() -> None:
    from onnxruntime.quantization import quantize_dynamic
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128, max_position_embeddings=128)
    seed()
    hf = BertModel(config).eval()
    out = _optimum_export(hf, "feature-extraction")
    model = _load_full(out / "model.onnx")
    kinds = _decoder_kinds(model, 256)
    cases = {"seq8": {"dims": {"batch_size": 1, "sequence_length": 8}},
             "seq128": {"dims": {"batch_size": 1, "sequence_length": 128}},
             "batch2": {"dims": {"batch_size": 2, "sequence_length": 17}}}
    what = "BertModel (hidden 64, 2 layers, 4 heads, vocab 256)"
    save("bert", model, tool="optimum-onnx main_export(task='feature-extraction')",
         tool_versions=versions(*OPTIMUM), description=f"{what}, optimum feature-extraction",
         kinds=kinds, cases=cases)
    src = out / "model.onnx"
    int8 = TMP / "bert_int8.onnx"
    quantize_dynamic(str(src), str(int8))
    save("bert_int8_dynamic", _load_full(int8), tool="onnxruntime.quantization.quantize_dynamic",
         tool_versions=versions(*ORT_TOOLS),
         description="bert above, onnxruntime quantize_dynamic with its defaults (int8 weights, "
                     "QOperator: DynamicQuantizeLinear + MatMulInteger)", kinds=kinds, cases=cases)
    fp16 = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
    save("bert_fp16", fp16, tool="onnxruntime.transformers.float16.convert_float_to_float16"
                                 "(keep_io_types=True)",
         tool_versions=versions(*ORT_TOOLS),
         description="bert above, every float tensor float16, float32 inputs/outputs kept "
                     "(Cast at the boundary)", kinds=kinds, cases=cases)


# --- onnxruntime's transformer optimizer: com.microsoft contrib ops -------------------------------

# name: (the corpus model it optimizes, or "gpt2" for the export below; model_type; opt_level;
# only_onnxruntime: onnxruntime's session optimizer alone, which writes FusedConv/FusedMatMul)
ORT_OPTIMIZED = {
    "bert_ort_opt1": ("bert", "bert", 1, False),  # opt_level 2: the same ops (other names)
    "llama_ort_opt0": ("llama", "gpt2", 0, False),
    "llama_ort_opt2": ("llama", "gpt2", 2, False),
    "llama_ort_session_opt2": ("llama", "gpt2", 2, True),
    "gpt2_ort_opt1": ("gpt2", "gpt2", 1, False),
    "whisper_encoder_ort_opt2": ("whisper_encoder", "bart", 2, False),
    "whisper_decoder_ort_opt1": ("whisper_decoder", "bart", 1, False),
    "resnet18_ort_session_opt2": ("resnet18_ts", "bert", 2, True),
}


def _gpt2_export() -> onnx.ModelProto:
    """GPT-2 (n_embd 64, 2 layers, 4 heads, vocab 256) by optimum, with past: the model
    onnxruntime's optimizer fuses for model_type gpt2."""
    import transformers
    config = transformers.GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4,
                                     n_positions=256)
    seed()
    hf = transformers.AutoModelForCausalLM.from_config(config).eval()
    return _load_full(_optimum_export(hf, "text-generation-with-past") / "model.onnx")


def _contrib_ops(model: onnx.ModelProto) -> str:
    """The com.microsoft ops of `model` (and onnxruntime's default-domain contrib op),
    counted: "Attention x2, SkipLayerNormalization x4"."""
    from collections import Counter
    counts = Counter(n.op_type for n in model.graph.node
                     if n.domain == "com.microsoft" or n.op_type == "SimplifiedLayerNormalization")
    return ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))


def family_ort_optimizer(only: list[str] | None = None) -> None:
    """Models as onnxruntime.transformers.optimizer.optimize_model writes them (use_gpu=False,
    num_heads 4, hidden 64): the corpus models above (their regenerated weights) and a GPT-2
    export, rewritten into com.microsoft contrib ops; the manifest keeps the base model's
    inputs and cases."""
    from onnxruntime.transformers.optimizer import optimize_model
    for name, (base, model_type, level, only_ort) in ORT_OPTIMIZED.items():
        if only and name not in only:
            continue
        src = TMP / f"{name}_src.onnx"
        if base == "gpt2":
            source = _gpt2_export()
            kinds, cases = _decoder_kinds(source, 256), DECODER_CASES
            tool_versions = versions("onnxruntime", *OPTIMUM)
            what = ("GPT2LMHeadModel (n_embd 64, 2 layers, 4 heads, vocab 256) exported by "
                    "optimum text-generation-with-past")
        else:
            source = corpus.load(base)
            entry = corpus.entry(base)
            kinds = {i["name"]: {k: v for k, v in i.items() if k not in ("name", "dtype", "shape")}
                     for i in entry["inputs"]}
            cases = entry["cases"]
            tool_versions = versions(*ORT_TOOLS)
            what = f"{base} above"
        onnx.save(source, str(src))
        with contextlib.redirect_stdout(io.StringIO()):
            optimized = optimize_model(str(src), model_type=model_type, num_heads=4,
                                       hidden_size=64, opt_level=level, use_gpu=False,
                                       only_onnxruntime=only_ort).model
        how = (f"optimize_model(model_type='{model_type}', num_heads=4, hidden_size=64, "
               f"opt_level={level}, use_gpu=False"
               + (", only_onnxruntime=True)" if only_ort else ")"))
        save(name, optimized, tool=f"onnxruntime.transformers.optimizer.{how}",
             tool_versions=tool_versions,
             description=f"{what}, onnxruntime's {how}: {_contrib_ops(optimized)}",
             kinds=kinds, cases=cases)


# --- torch.onnx, TorchScript exporter -------------------------------------------------------------

def _torchscript(module, args, *, input_names, output_names, dynamic_axes, opset=17,
                 **kwargs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, **kwargs)
    return onnx.load_from_string(buffer.getvalue())


IMAGE_CASES = {"224x224": {"dims": {"batch": 1, "height": 224, "width": 224}},
               "160x200": {"dims": {"batch": 1, "height": 160, "width": 200}},
               "320x256_batch2": {"dims": {"batch": 2, "height": 320, "width": 256}}}


class NanoGPT(torch.nn.Module):
    """nanoGPT's model: learned position table sliced by the sequence length, SDPA causal
    attention (as nanoGPT does when torch has flash attention), tied LM head."""

    def __init__(self, vocab=256, block=128, dim=64, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.wte = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Parameter(torch.randn(1, block, dim) * 0.02)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(dim), "c_attn": torch.nn.Linear(dim, 3 * dim),
                "c_proj": torch.nn.Linear(dim, dim), "ln_2": torch.nn.LayerNorm(dim),
                "c_fc": torch.nn.Linear(dim, 4 * dim), "mlp_proj": torch.nn.Linear(4 * dim, dim)}))
        self.ln_f = torch.nn.LayerNorm(dim)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        b, t = idx.shape
        x = self.wte(idx) + self.pos[:, :idx.shape[1]]
        for blk in self.blocks:
            h = blk["ln_1"](x)
            q, k, v = blk["c_attn"](h).split(x.shape[-1], dim=2)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + blk["c_proj"](y.transpose(1, 2).contiguous().view(b, t, -1))
            x = x + blk["mlp_proj"](torch.nn.functional.gelu(blk["c_fc"](blk["ln_2"](x))))
        return self.lm_head(self.ln_f(x))


NANOGPT_CASES = {"seq1": {"dims": {"seq": 1}}, "seq7": {"dims": {"seq": 7}},
                 "seq128": {"dims": {"seq": 128}}}


def family_torchscript() -> None:
    import torchvision
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    image = {"kind": "image"}

    seed()
    resnet = torchvision.models.resnet18(weights=None).eval()
    model = _torchscript(resnet, (torch.rand(1, 3, 224, 224),), input_names=["input"],
                         output_names=["logits"],
                         dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                                       "logits": {0: "batch"}})
    save("resnet18_ts", model, tool="torch.onnx.export(dynamo=False, opset_version=17)",
         tool_versions=versions(*TORCHVISION),
         description="torchvision resnet18(weights=None), dynamic batch, height and width",
         kinds={"input": image}, cases=IMAGE_CASES)

    seed()
    deeplab = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False, num_classes=5).eval()
    model = _torchscript(deeplab, (torch.rand(1, 3, 224, 224),), input_names=["input"],
                         output_names=["out"],
                         dynamic_axes={"input": {2: "height", 3: "width"},
                                       "out": {2: "height", 3: "width"}})
    save("deeplabv3_mobilenet_v3_large_ts", model,
         tool="torch.onnx.export(dynamo=False, opset_version=17)",
         tool_versions=versions(*TORCHVISION),
         description="torchvision deeplabv3_mobilenet_v3_large(weights=None, weights_backbone="
                     "None, aux_loss=False, num_classes=5), its output dict's 'out', dynamic "
                     "height and width",
         kinds={"input": image},
         cases={"224x224": {"dims": {"height": 224, "width": 224}},
                "160x200": {"dims": {"height": 160, "width": 200}},
                "320x256": {"dims": {"height": 320, "width": 256}}})

    seed()
    config = Wav2Vec2Config(vocab_size=32, hidden_size=64, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=128,
                            conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    wav2vec = Wav2Vec2Model(config).eval()
    model = _torchscript(wav2vec, (torch.randn(1, 4000),), input_names=["input_values"],
                         output_names=["last_hidden_state", "extract_features"],
                         dynamic_axes={"input_values": {0: "batch", 1: "samples"},
                                       "last_hidden_state": {0: "batch", 1: "frames"},
                                       "extract_features": {0: "batch", 1: "frames"}})
    save("wav2vec2_ts", model, tool="torch.onnx.export(dynamo=False, opset_version=17)",
         tool_versions=versions("torch", "transformers", "onnx"),
         description="transformers Wav2Vec2Model (hidden 64, 2 layers, 3 conv feature layers "
                     "(strides 5, 2, 2), group-norm feature extractor), dynamic batch and "
                     "audio length",
         kinds={}, cases={"1x4000": {"dims": {"batch": 1, "samples": 4000}},
                          "1x16000": {"dims": {"batch": 1, "samples": 16000}},
                          "2x2555": {"dims": {"batch": 2, "samples": 2555}}})

    seed()
    gpt = NanoGPT().eval()
    model = _torchscript(gpt, (torch.randint(0, 256, (1, 16)),), input_names=["idx"],
                         output_names=["logits"],
                         dynamic_axes={"idx": {1: "seq"}, "logits": {1: "seq"}})
    save("nanogpt_ts", model, tool="torch.onnx.export(dynamo=False, opset_version=17)",
         tool_versions=versions(*TORCH),
         description="nanoGPT-style GPT (vocab 256, 128 positions as an nn.Parameter table "
                     "sliced by idx.shape[1], width 64, 2 layers, 4 heads, SDPA causal), "
                     "dynamic seq (batch 1)",
         kinds={"idx": {"kind": "token_ids", "vocab": 256}}, cases=NANOGPT_CASES)


def family_mobilenet_v3() -> None:
    """torchvision mobilenet_v3_large as resnet18_ts is exported: the quantized-model tests
    quantize it (Hardswish, HardSigmoid, squeeze-excitation Mul, residual Add). Its
    BatchNorm statistics are filled first (calibrate_batchnorm): with the constructor's
    init and none, the logits are ~1e-10 (each squeeze-excitation gate and residual-free
    block shrinks them), nothing a quantization test could compare."""
    import torchvision
    seed()
    net = torchvision.models.mobilenet_v3_large(weights=None).eval()
    calibrate_batchnorm(net, lambda step: (torch.rand(4, 3, 224, 224),))
    model = _torchscript(net, (torch.rand(1, 3, 224, 224),), input_names=["input"],
                         output_names=["logits"],
                         dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                                       "logits": {0: "batch"}})
    save("mobilenet_v3_large_ts", model, tool="torch.onnx.export(dynamo=False, opset_version=17)",
         tool_versions=versions(*TORCHVISION),
         description="torchvision mobilenet_v3_large(weights=None), dynamic batch, height and "
                     "width",
         kinds={"input": {"kind": "image"}}, cases=IMAGE_CASES, match=True)


# --- torch.onnx, dynamo exporter ------------------------------------------------------------------

def _dynamo(module, args, *, input_names, output_names, dynamic_shapes) -> onnx.ModelProto:
    with torch.no_grad():
        program = torch.onnx.export(module, args, dynamo=True, input_names=input_names,
                                    output_names=output_names, dynamic_shapes=dynamic_shapes)
    return program.model_proto


def family_dynamo() -> None:
    import torchvision
    from torch.export import Dim

    seed()
    resnet = torchvision.models.resnet18(weights=None).eval()
    model = _dynamo(resnet, (torch.rand(1, 3, 224, 224),), input_names=["input"],
                    output_names=["logits"],
                    dynamic_shapes={"x": {2: Dim("height", min=32, max=1024),
                                          3: Dim("width", min=32, max=1024)}})
    h, w = [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim[2:]]
    save("resnet18_dynamo", model, tool="torch.onnx.export(dynamo=True) (default opset)",
         tool_versions=versions(*DYNAMO, "torchvision"),
         description="torchvision resnet18(weights=None), dynamic height and width (batch 1)",
         kinds={"input": {"kind": "image"}},
         cases={k: {"dims": {h: v["dims"]["height"], w: v["dims"]["width"]}}
                for k, v in list(IMAGE_CASES.items())[:2]} | {
             "320x256": {"dims": {h: 320, w: 256}}})

    seed()
    gpt = NanoGPT().eval()
    model = _dynamo(gpt, (torch.randint(0, 256, (1, 16)),), input_names=["idx"],
                    output_names=["logits"],
                    dynamic_shapes={"idx": {1: Dim("seq", min=1, max=128)}})
    seq = model.graph.input[0].type.tensor_type.shape.dim[1].dim_param
    save("nanogpt_dynamo", model, tool="torch.onnx.export(dynamo=True) (default opset)",
         tool_versions=versions(*DYNAMO),
         description="the nanoGPT above, dynamo exporter, dynamic seq (batch 1)",
         kinds={"idx": {"kind": "token_ids", "vocab": 256}},
         cases={k: {"dims": {seq: v["dims"]["seq"]}} for k, v in NANOGPT_CASES.items()})


# --- torchvision detection (TorchScript exporter, post-processing in the graph) -------------------

# The score thresholds and detection caps are constructor kwargs: with random weights the
# default thresholds keep every candidate (and the caps) or none; these give a moderate
# number of detections on a random image (checked after the weights are regenerated).
DETECTORS = {
    "ssdlite320_mobilenet_v3_large": {
        "num_classes": 5, "score_thresh": 0.96, "detections_per_img": 100},
    "fasterrcnn_mobilenet_v3_large_320_fpn": {
        "num_classes": 5, "box_score_thresh": 0.216, "box_detections_per_img": 100},
    "retinanet_resnet50_fpn": {
        "num_classes": 5, "score_thresh": 0.0108, "detections_per_img": 100,
        "min_size": 200, "max_size": 300},
    "maskrcnn_resnet50_fpn": {
        "num_classes": 5, "box_score_thresh": 0.38, "box_detections_per_img": 100,
        "min_size": 200, "max_size": 300},
}


def calibrate_batchnorm(net: torch.nn.Module, inputs: list, steps: int = 4) -> None:
    """Fill every BatchNorm's running statistics from a few random images (a cumulative
    average: momentum None), the rest of the net in eval mode. With the constructors' random
    init and no statistics, ssdlite's and the R-CNNs' activations vanish (1e-14 at the
    first feature map, every score exactly 1/num_classes); real exports carry trained
    statistics, which the export folds into the convolutions. Only each channel's RMS is
    kept (mean 0): a folded bias cancelling the mean of the original weights' output would
    not cancel that of the regenerated weights' (retinanet's scores then saturate at 1)."""
    net.eval()
    norms = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for step in range(steps):
            net(*inputs(step))
        for m in norms:  # the second moment, not the variance: the folded biases stay 0, so
            m.running_var += m.running_mean ** 2  # weights drawn anew (corpus.py) keep the scale
            m.running_mean.zero_()
    net.eval()


def family_detection(only: list[str] | None = None) -> None:
    import torchvision
    for arch, kwargs in DETECTORS.items():
        if only and arch not in only:
            continue
        seed()
        net = getattr(torchvision.models.detection, arch)(
            weights=None, weights_backbone=None, **kwargs).eval()
        calibrate_batchnorm(net, lambda step: ([torch.rand(3, 300, 400) for _ in range(4)],))
        with torch.no_grad():  # the output dict's order: the exporter flattens it
            outputs = list(net([torch.rand(3, 300, 400)])[0].keys())
        # torchvision's test_onnx.py: a list of one [3, H, W] image, dynamic H and W
        model = _torchscript(net, ([torch.rand(3, 300, 400)],), input_names=["images_tensors"],
                             output_names=outputs,
                             dynamic_axes={"images_tensors": {1: "height", 2: "width"},
                                           **{o: {0: "num_detections"} for o in outputs}})
        save(arch, model, tool="torch.onnx.export(dynamo=False, opset_version=17)",
             tool_versions=versions(*TORCHVISION),
             description=f"torchvision {arch}(weights=None, weights_backbone=None, "
                         + ", ".join(f"{k}={v}" for k, v in kwargs.items())
                         + "), eval, post-processing (NMS, box decoding"
                         + (", mask pasting" if "mask" in arch else "") + ") in the graph",
             kinds={"images_tensors": {"kind": "image"}},
             cases={"300x400": {"dims": {"height": 300, "width": 400}},
                    "240x320": {"dims": {"height": 240, "width": 320}}},
             detections="boxes", match=True)


FAMILIES = {
    **{arch: (lambda arch=arch: family_llm(arch)) for arch in LLM_CONFIGS},
    "whisper": family_whisper,
    "bert": family_bert,
    "torchscript": family_torchscript,
    "mobilenet_v3": family_mobilenet_v3,
    "dynamo": family_dynamo,
    "detection": family_detection,
    "ort_optimizer": family_ort_optimizer,
    **{name: (lambda name=name: family_ort_optimizer([name])) for name in ORT_OPTIMIZED},
    **{arch: (lambda arch=arch: family_detection([arch])) for arch in DETECTORS},
}


def main(argv: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    chosen = argv or [f for f in FAMILIES if f not in DETECTORS and f not in ORT_OPTIMIZED]
    failures = {}
    for family in chosen:
        print(f"== {family}", flush=True)
        try:
            FAMILIES[family]()
        except Exception as exc:  # noqa: BLE001 - one family's failure is not fatal
            import traceback
            traceback.print_exc()
            failures[family] = f"{type(exc).__name__}: {exc}"[:500]
    shutil.rmtree(TMP, ignore_errors=True)
    data = json.loads(corpus.MANIFEST.read_text())
    print(f"total {data['total_bytes'] / 1e6:.2f} MB in {len(data['models'])} models")
    if failures:
        print("FAILED:", json.dumps(failures, indent=1))
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
