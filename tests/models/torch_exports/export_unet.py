"""Export the torch UNet behind tests/models/test_torch_unet.py (needs torch; unet.onnx next to
this script is its output, so the test itself does not need torch).

    python tests/models/torch_exports/export_unet.py

Made with torch 2.14.1, onnx 1.23.2 (the TorchScript exporter, `dynamo=False`, opset 17). A
two-level UNet as segmentation nets are deployed: conv + BatchNorm + ReLU encoder blocks,
2x2 max pools, a 2x2 stride-2 nn.ConvTranspose2d and a 3x3 one with padding 1 and
output_padding 1 (torchvision's and FCN decoders' form) upsampling, the skip connections
concatenated, a 1x1 head; batch, height and width are dynamic axes (any multiple of 4).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


def block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, classes: int = 5):
        super().__init__()
        self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = block(32, 16)
        self.up1 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.dec1 = block(16, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


def main() -> None:
    torch.manual_seed(0)
    net = UNet().eval()
    with torch.no_grad():  # BatchNorm statistics other than the identity
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    axes = {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(net, (torch.randn(1, 3, 16, 16),), str(HERE / "unet.onnx"),
                      dynamo=False, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": axes, "logits": axes}, opset_version=17)
    print(HERE / "unet.onnx")


if __name__ == "__main__":
    main()
