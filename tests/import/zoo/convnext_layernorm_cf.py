# SPDX-License-Identifier: GPL-3.0-or-later
"""ConvNeXt's LayerNorm for channels_first data ([b, c, h, w]): mean and biased variance
over dimension 1 written out, (x - u) / torch.sqrt(s + eps), weight[:, None, None]."""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, normalized_shape=192, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


def build(small=False, dtype="float16"):
    cfg = dict(normalized_shape=16) if small else {}
    b, hw = (2, 3) if small else (64, 56)
    t = getattr(torch, dtype)
    m = LayerNorm(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("normalized_shape", 192), hw, hw, dtype=t),), {"x": ["b", "c", "y", "x"]}
