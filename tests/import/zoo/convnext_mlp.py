# SPDX-License-Identifier: GPL-3.0-or-later
"""ConvNeXt block's pointwise part (channels-last): F.layer_norm over channels,
Linear 4x, GELU, Linear, layer scale gamma, residual; input [b, h, w, c]."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNeXtMLP(nn.Module):
    def __init__(self, dim=768):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(dim))
        self.norm_bias = nn.Parameter(torch.zeros(dim))
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))
        self.dim = dim

    def forward(self, x):
        shortcut = x
        x = F.layer_norm(x, (self.dim,), self.norm_weight, self.norm_bias, 1e-6)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        x = self.gamma * x
        return shortcut + x


def build(small=False, dtype="float16"):
    cfg = dict(dim=32) if small else {}
    b, h, w = (2, 3, 4) if small else (64, 14, 14)
    t = getattr(torch, dtype)
    m = ConvNeXtMLP(**cfg).to(t)
    return m, (torch.randn(b, h, w, cfg.get("dim", 768), dtype=t),), {"x": ["b", "y", "x", "c"]}
