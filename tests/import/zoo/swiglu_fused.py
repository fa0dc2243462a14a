# SPDX-License-Identifier: GPL-3.0-or-later
"""xformers-style SwiGLU (xformers/ops/swiglu_op.py's SwiGLU module): one fused w12
projection chunked into the gate and the up halves."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, in_features=4096, hidden_features=11008, out_features=None, bias=False):
        super().__init__()
        out_features = out_features or in_features
        self.w12 = nn.Linear(in_features, 2 * hidden_features, bias=bias)
        self.w3 = nn.Linear(hidden_features, out_features, bias=bias)
        self.hidden_features = hidden_features

    def forward(self, x):
        x12 = self.w12(x)
        x1, x2 = x12.chunk(2, dim=-1)
        hidden = F.silu(x1) * x2
        return self.w3(hidden)


def build(small=False, dtype="bfloat16"):
    cfg = dict(in_features=32, hidden_features=48) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = SwiGLU(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("in_features", 4096), dtype=t),), {"x": ["b", "s", "e"]}
