"""Export the torch GPT behind tests/models/test_gpt_symbolic.py (needs torch; gpt.onnx next
to this script is its output, so the test itself does not need torch).

    python tests/models/torch_exports/export_gpt.py

A nanoGPT-style decoder (token and position embeddings, pre-LayerNorm blocks with a fused
QKV Linear, a causal mask from `torch.tril` over the run's length, GELU MLP, a linear head)
exported by TorchScript's exporter with `seq` as a dynamic axis: the graph computes its
reshapes, position ids and mask from `Shape` of the input, as deployed exports do.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
        probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.proj((probs @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 32, heads: int = 4, layers: int = 2,
                 positions: int = 128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(positions, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (1, 8))
    torch.onnx.export(Gpt().eval(), (ids,), str(HERE / "gpt.onnx"), input_names=["ids"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      dynamic_axes={"ids": {1: "seq"}, "logits": {1: "seq"}})


if __name__ == "__main__":
    main()
