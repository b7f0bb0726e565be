"""Export the torch recurrent models behind tests/models/test_torch_rnn.py (needs torch; the
.onnx files next to this script are its output, so the tests themselves do not need torch).

    python tests/models/torch_exports/export_rnn.py

Both with a dynamic `seq` axis, as deployed: `tagger.onnx` is a part-of-speech style tagger
(token ids -> embedding -> 2-layer bidirectional nn.LSTM -> per-token scores), `gru.onnx` an
nn.GRU encoder returning every step and the last hidden state. TorchScript's exporter
(`dynamo=False`) writes them as ONNX LSTM / GRU nodes with the sequence length read from
the input's shape.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).parent


class Tagger(torch.nn.Module):
    def __init__(self, vocabulary: int = 200, width: int = 32, hidden: int = 48,
                 tags: int = 9):
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, width)
        self.lstm = torch.nn.LSTM(width, hidden, num_layers=2, bidirectional=True)
        self.scores = torch.nn.Linear(2 * hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.lstm(self.embed(tokens))
        return self.scores(states)


class Encoder(torch.nn.Module):
    def __init__(self, width: int = 16, hidden: int = 32):
        super().__init__()
        self.gru = torch.nn.GRU(width, hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gru(x)


def main() -> None:
    torch.manual_seed(0)
    tagger = Tagger().eval()
    torch.onnx.export(tagger, (torch.randint(0, 200, (7, 1)),), str(HERE / "tagger.onnx"),
                      dynamo=False, input_names=["tokens"], output_names=["scores"],
                      dynamic_axes={"tokens": {0: "seq"}, "scores": {0: "seq"}},
                      opset_version=17)
    encoder = Encoder().eval()
    torch.onnx.export(encoder, (torch.randn(7, 1, 16),), str(HERE / "gru.onnx"),
                      dynamo=False, input_names=["x"], output_names=["states", "last"],
                      dynamic_axes={"x": {0: "seq"}, "states": {0: "seq"}},
                      opset_version=17)
    print(HERE / "tagger.onnx", HERE / "gru.onnx")


if __name__ == "__main__":
    main()
