"""onnxc package."""
