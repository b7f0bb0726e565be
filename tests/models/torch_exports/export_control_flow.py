"""Export the torch models behind tests/models/test_torch_control_flow.py (needs torch; the
.onnx files next to this script are its output, so the tests themselves do not need torch).

    python tests/models/torch_exports/export_control_flow.py

TorchScript's exporter (`dynamo=False`) turns scripted Python control flow into ONNX Loop and
If, as deployed torch models carry it: a while loop on a data-dependent condition, a for loop
indexing its input with `x[t:t+1]` (and one collecting every step in a list it stacks), and
greedy decoding that breaks at an end token.

The `_seq` / `_batch` exports are the same modules with a dynamic axis (`dynamic_axes`), as
they are deployed: compiled once, they run at any length, so the Loop's trip count and its
stacked outputs have the symbolic length. `greedycollect` returns the tokens it generated,
a list whose length only the run decides.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).parent


class Doubling(torch.nn.Module):
    """A while loop on a data-dependent condition, then an If on the result's sign."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, limit: torch.Tensor) -> torch.Tensor:
        s = torch.tanh(self.lin(x))
        i = 0
        while bool(s.abs().sum() < limit) and i < 10:
            s = self.lin(s) * 2.0
            i += 1
        if bool(s.mean() > 0):
            out = s - 1.0
        else:
            out = torch.relu(s) + 1.0
        return out


class CountedRNN(torch.nn.Module):
    """A hand-written recurrence: `x[t:t+1]` is a Slice with run-time bounds."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(1, 8)
        for t in range(x.size(0)):
            h = torch.tanh(self.cell(torch.cat([x[t:t + 1], h], dim=1)))
        return h


class Collect(torch.nn.Module):
    """The recurrence above, returning every step: `outs.append(h)` in the loop (a sequence
    the Loop carries), then `torch.stack(outs)` (ConcatFromSequence)."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(1, 8)
        outs: list[torch.Tensor] = []
        for t in range(x.size(0)):
            h = torch.tanh(self.cell(torch.cat([x[t:t + 1], h], dim=1)))
            outs.append(h)
        return torch.stack(outs, 0)


class GreedyDecoder(torch.nn.Module):
    """Greedy decoding with a GRU-style cell: stops at the end token (15) or after 12 steps."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 32)
        self.gates = torch.nn.Linear(64, 64)
        self.candidate = torch.nn.Linear(64, 32)
        self.out = torch.nn.Linear(32, 16)

    def step(self, token: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One GRU-style step on the previous token: the next token and state."""
        e = self.embed(token)
        z, r = torch.sigmoid(self.gates(torch.cat([e, h], 1))).chunk(2, 1)
        h = (1 - z) * h + z * torch.tanh(self.candidate(torch.cat([e, r * h], 1)))
        return self.out(h).argmax(-1), h

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        token = torch.zeros(1, dtype=torch.long)
        tokens = torch.full((12,), -1, dtype=torch.long)
        i = 0
        while i < 12:
            token, h = self.step(token, h)
            tokens[i] = token[0]
            i += 1
            if bool(token[0] == 15):
                break
        return tokens, h


class GreedyCollect(GreedyDecoder):
    """Greedy decoding that returns the tokens it generated: `tokens.append(token)` until the
    end token (15) or 12 steps, then `torch.cat(tokens)`, so the output's length is known only
    once the loop ran."""

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        token = torch.zeros(1, dtype=torch.long)
        tokens: list[torch.Tensor] = []
        i = 0
        while i < 12:
            token, h = self.step(token, h)
            tokens.append(token)
            i += 1
            if bool(token[0] == 15):
                break
        return torch.cat(tokens), h


def main() -> None:
    torch.manual_seed(0)
    exports = [
        (Doubling(), (torch.randn(1, 8), torch.tensor(50.0)), ["x", "limit"], ["y"]),
        (CountedRNN(), (torch.randn(5, 8),), ["x"], ["h"]),
        (GreedyDecoder(), (torch.randn(1, 32),), ["h"], ["tokens", "h_out"]),
        (Collect(), (torch.randn(5, 8),), ["x"], ["hs"]),
    ]
    dynamic = [
        ("doubling_batch", Doubling(), {"x": {0: "batch"}}),
        ("countedrnn_seq", CountedRNN(), {"x": {0: "seq"}}),
        ("collect_seq", Collect(), {"x": {0: "seq"}}),
    ]
    for module, args, inputs, outputs in exports:
        path = HERE / f"{type(module).__name__.lower()}.onnx"
        torch.onnx.export(torch.jit.script(module.eval()), args, str(path), dynamo=False,
                          input_names=inputs, output_names=outputs, opset_version=17)
        print(path)
    by_type = {type(module): (args, inputs, outputs) for module, args, inputs, outputs in exports}
    for name, module, axes in dynamic:
        args, inputs, outputs = by_type[type(module)]
        path = HERE / f"{name}.onnx"
        torch.onnx.export(torch.jit.script(module.eval()), args, str(path), dynamo=False,
                          input_names=inputs, output_names=outputs, opset_version=17,
                          dynamic_axes=axes)
        print(path)
    torch.manual_seed(1)
    collect = GreedyCollect()
    path = HERE / "greedycollect.onnx"
    torch.onnx.export(torch.jit.script(collect.eval()), (torch.randn(1, 32),), str(path),
                      dynamo=False, input_names=["h"], output_names=["tokens", "h_out"],
                      opset_version=17)
    print(path)


if __name__ == "__main__":
    main()
