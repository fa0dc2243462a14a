# SPDX-License-Identifier: GPL-3.0-or-later
"""Gemma's RMSNorm: computed in fp32, weight stored as an offset (1 + weight),
x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), type_as back."""
import torch
import torch.nn as nn


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim=3072, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32) if small else {}
    b, s = (2, 8) if small else (4, 4096)
    t = getattr(torch, dtype)
    m = GemmaRMSNorm(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("dim", 3072), dtype=t),), {"x": ["b", "s", "e"]}
