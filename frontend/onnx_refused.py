"""Ops onnxruntime's CPU execution provider runs that onnxc refuses on purpose, with the
reason: the importer's UnsupportedOpError quotes it, and the coverage table against
onnxruntime (docs/onnxruntime-coverage.md) lists it. An op leaves this table when it gets a
converter (tests/unit/test_onnxruntime_coverage.py checks both ways)."""

from __future__ import annotations

_GENERATION_LOOP = (
    "a whole generation loop around decoder subgraphs (onnxruntime.transformers."
    "convert_generation writes it): compile the decoder model it wraps and drive the "
    "search from the caller")
_NEW_ARCHITECTURE = (
    "a contrib op new in onnxruntime 1.32 for recent model architectures; no exporter "
    "onnxc is tested with writes it yet")
_NCHWC = (
    "onnxruntime's internal blocked layout, written only into a model onnxruntime saves "
    "after its own NCHWc layout transform (ORT_ENABLE_ALL); save it at ORT_ENABLE_EXTENDED "
    "instead, which onnxc reads")

REFUSED: dict[tuple[str, str], str] = {
    ("ai.onnx.ml", "CastMap"): "takes a map; onnxc has no map type",
    ("ai.onnx.ml", "ZipMap"): (
        "returns a sequence of maps, which onnxc does not compile: export the classifier "
        "without it, in skl2onnx `to_onnx(model, X, options={id(model): {'zipmap': False}})` "
        "(or `options={'zipmap': False}`), and read the probabilities tensor"),
    ("ai.onnx.ml", "DictVectorizer"): (
        "takes a map (skl2onnx writes it for dict features); onnxc has no map type: "
        "vectorize the features before the model"),
    ("com.microsoft", "AttnLSTM"): (
        "an LSTM with built-in attention from onnxruntime's early seq2seq support; no current "
        "exporter writes it"),
    ("com.microsoft", "BeamSearch"): _GENERATION_LOOP,
    ("com.microsoft", "GreedySearch"): _GENERATION_LOOP,
    ("com.microsoft", "Sampling"): _GENERATION_LOOP,
    ("com.microsoft", "WhisperBeamSearch"): _GENERATION_LOOP,
    ("com.microsoft", "BifurcationDetector"): (
        "a speculative-decoding helper with data-dependent sizes, used inside generation "
        "loops"),
    ("com.microsoft", "NGramRepeatBlock"): "a beam-search helper, used inside generation loops",
    ("com.microsoft", "BranchwiseRMSNorm"): _NEW_ARCHITECTURE,
    ("com.microsoft", "EngramGate"): _NEW_ARCHITECTURE,
    ("com.microsoft", "GatedAdd"): _NEW_ARCHITECTURE,
    ("com.microsoft", "GatedDeltaNet"): _NEW_ARCHITECTURE,
    ("com.microsoft", "GatedRMSNorm"): _NEW_ARCHITECTURE,
    ("com.microsoft", "HyperConnectionPostMix"): _NEW_ARCHITECTURE,
    ("com.microsoft", "HyperConnectionPreMix"): _NEW_ARCHITECTURE,
    ("com.microsoft", "LinearAttention"): _NEW_ARCHITECTURE,
    ("com.microsoft", "LinearAttentionGate"): _NEW_ARCHITECTURE,
    ("com.microsoft", "MoEGroupRouter"): _NEW_ARCHITECTURE,
    ("com.microsoft", "NGramHashMapping"): _NEW_ARCHITECTURE,
    ("com.microsoft", "VarlenNGramHashMapping"): _NEW_ARCHITECTURE,
    ("com.microsoft", "VarlenCausalConvWithState"): _NEW_ARCHITECTURE,
    ("com.microsoft", "CausalConvWithState"): (
        "the contrib form of ai.onnx's CausalConvWithState, which onnxc converts; the "
        "contrib form's state layout differs and no exporter onnxc is tested with writes it"),
    ("com.microsoft", "DecoderMaskedMultiHeadAttention"): (
        "updates a past buffer shared with its present output in place "
        "(past_present_share_buffer); a compiled onnxc entry owns no state across calls: "
        "use GroupQueryAttention or MultiHeadAttention with past inputs"),
    ("com.microsoft", "DynamicTimeWarping"): (
        "Whisper's timestamp alignment: a path of data-dependent length"),
    ("com.microsoft", "MoE"): "mixture of experts with data-dependent routing of tokens",
    ("com.microsoft", "QMoE"): "mixture of experts with data-dependent routing of tokens",
    ("com.microsoft", "MRotaryEmbedding"): (
        "Qwen2-VL's multimodal rotary embedding; no exporter onnxc is tested with writes it"),
    ("com.microsoft", "SparseAttention"): (
        "block-sparse attention (Phi-3-small's), with sparse layout inputs"),
    ("com.microsoft", "SparseToDenseMatMul"): "takes a sparse tensor input",
    ("com.microsoft", "Tokenizer"): "string tokenization with a data-dependent token count",
    ("com.microsoft", "WordConvEmbedding"): (
        "a character-level convolutional embedding from early onnxruntime; no current "
        "exporter writes it"),
    ("com.microsoft", "MaxpoolWithMask"): (
        "a max pool with a mask input from onnxruntime's training-era ops; no current "
        "exporter writes it"),
    ("com.microsoft", "SampleOp"): "onnxruntime's example kernel, not a model op",
    ("com.microsoft", "GatherPacked"): _NEW_ARCHITECTURE,
    ("com.microsoft", "MatMulBnb4"): (
        "bitsandbytes' FP4/NF4 weights; re-quantize with onnxruntime's MatMulNBitsQuantizer "
        "(com.microsoft.MatMulNBits), which onnxc converts"),
    ("com.microsoft", "MatMulFpQ4"): (
        "onnxruntime's first 4-bit weight format, superseded by MatMulNBits, which onnxc "
        "converts: re-quantize with MatMulNBitsQuantizer"),
    ("com.microsoft", "MurmurHash3"): (
        "feature hashing of strings and integers into buckets; no exporter onnxc is tested "
        "with writes it"),
    ("com.microsoft.nchwc", "AveragePool"): _NCHWC,
    ("com.microsoft.nchwc", "Conv"): _NCHWC,
    ("com.microsoft.nchwc", "GlobalAveragePool"): _NCHWC,
    ("com.microsoft.nchwc", "GlobalMaxPool"): _NCHWC,
    ("com.microsoft.nchwc", "MaxPool"): _NCHWC,
    ("com.microsoft.nchwc", "ReorderInput"): _NCHWC,
    ("com.microsoft.nchwc", "ReorderOutput"): _NCHWC,
    ("com.microsoft.nchwc", "Upsample"): _NCHWC,
}
"""(domain, op type) -> why onnxc refuses it ("" is the default domain)."""


def refusal_reason(domain: str, op_type: str) -> str | None:
    """Why onnxc refuses `op_type` of `domain`, when it does so on purpose."""
    return REFUSED.get(("" if domain == "ai.onnx" else domain, op_type))
