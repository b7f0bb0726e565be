"""ai.onnx.ml's preprocessing, linear and kernel-machine operators (Scaler, Normalizer,
LinearClassifier, SVMClassifier, ...) as graph ops, so they compile like any other net.

Tree ensembles are in onnx_ops_ml_trees.py."""

from __future__ import annotations

from onnxc.frontend.onnx_ops_math import Converter

CONVERTERS: dict[str, Converter] = {}
"""ai.onnx.ml converters by op type."""
