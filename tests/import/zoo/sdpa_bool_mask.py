# SPDX-License-Identifier: GPL-3.0-or-later
"""Self-attention through scaled_dot_product_attention with a boolean key padding mask
(True = attend), broadcast over heads and queries as encoders pass it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim=2048, heads=16):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, mask):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, -1).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


def keep_mask(b, s):
    keep = torch.ones(b, s, dtype=torch.bool)
    keep[1::2, s - s // 4:] = False
    return keep


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, heads=4) if small else {}
    b, s = (2, 8) if small else (8, 1024)
    t = getattr(torch, dtype)
    m = MaskedSelfAttention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("dim", 2048), dtype=t), keep_mask(b, s)), {"x": ["b", "s", "e"]}
