"""ai.onnx.ml's tree ensembles (TreeEnsembleClassifier, TreeEnsembleRegressor, opset 5's
TreeEnsemble): the trees are compile-time data and become native code."""

from __future__ import annotations

from onnxc.frontend.onnx_ops_math import Converter

CONVERTERS: dict[str, Converter] = {}
"""ai.onnx.ml tree-ensemble converters by op type."""
