# SPDX-License-Identifier: GPL-3.0-or-later
"""A LayerNorm written out as tutorials write it (mean, var with unbiased=False,
(x - mean) / torch.sqrt(var + eps), gamma and beta), then a Linear."""
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.a_2 * (x - mean) / torch.sqrt(var + self.eps) + self.b_2


class NormLinear(nn.Module):
    def __init__(self, d=1024, out=4096):
        super().__init__()
        self.norm = LayerNorm(d)
        self.proj = nn.Linear(d, out)

    def forward(self, x):
        return self.proj(self.norm(x))


def build(small=False, dtype="float16"):
    cfg = dict(d=32, out=64) if small else {}
    b, s = (2, 8) if small else (16, 1024)
    t = getattr(torch, dtype)
    m = NormLinear(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("d", 1024), dtype=t),), {"x": ["b", "s", "e"]}
