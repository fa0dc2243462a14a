# SPDX-License-Identifier: GPL-3.0-or-later
"""DETR's input projection: the backbone's [b, 2048, h, w] features through a 1×1
nn.Conv2d to the transformer's width, flattened to positions and permuted to
[h*w, b, c] as DETR's transformer reads them, plus a learned position embedding."""
import torch
import torch.nn as nn


class InputProj(nn.Module):
    def __init__(self, in_channels=2048, hidden_dim=256, hw=(25, 38)):
        super().__init__()
        self.input_proj = nn.Conv2d(in_channels, hidden_dim, kernel_size=1)
        self.pos = nn.Parameter(torch.randn(hw[0] * hw[1], 1, hidden_dim) * 0.02)

    def forward(self, features):
        src = self.input_proj(features)
        src = src.flatten(2).permute(2, 0, 1)
        return src + self.pos


def build(small=False, dtype="float16"):
    cfg = dict(in_channels=32, hidden_dim=16, hw=(3, 4)) if small else {}
    hw = cfg.get("hw", (25, 38))
    b = 2 if small else 16
    t = getattr(torch, dtype)
    m = InputProj(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("in_channels", 2048), hw[0], hw[1], dtype=t),), {"features": ["b", "c", "y", "x"]}
