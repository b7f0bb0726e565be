"""The command-line tools: `onnxc-opt` (opt.py) and `onnxc run` (run.py)."""
