# SPDX-License-Identifier: GPL-3.0-or-later
"""torchvision's SqueezeExcitation (torchvision/ops/misc.py) as written there:
adaptive_avg_pool2d to 1×1, 1×1 Conv2d fc1, ReLU, 1×1 Conv2d fc2, Sigmoid, the input
scaled per channel. A ResNet/RegNet stage's sizes (256 channels, 28×28, squeeze 64)."""

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class SqueezeExcitation(nn.Module):
    def __init__(self, input_channels=256, squeeze_channels=64, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: Tensor) -> Tensor:
        scale = self._scale(input)
        return scale * input


def build(small=False, dtype="float16"):
    cfg = dict(input_channels=16, squeeze_channels=4) if small else {}
    b, hw = (2, 5) if small else (64, 28)
    t = getattr(torch, dtype)
    m = SqueezeExcitation(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("input_channels", 256), hw, hw, dtype=t),), {"input": ["b", "c", "y", "x"]}
