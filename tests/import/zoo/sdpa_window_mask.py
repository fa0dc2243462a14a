# SPDX-License-Identifier: GPL-3.0-or-later
"""Sliding-window attention as people write it without FlexAttention: a boolean band
mask built in forward from ones with tril and triu(-window), passed to SDPA's
attn_mask; fused qkv with unbind."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class WindowAttention(nn.Module):
    def __init__(self, dim=2048, heads=16, window=512):
        super().__init__()
        self.heads = heads
        self.window = window
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, c = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        ones = torch.ones(s, s, dtype=torch.bool, device=x.device)
        band = ones.tril() & ones.triu(-self.window)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=band)
        return self.proj(out.transpose(1, 2).reshape(b, s, c))


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, heads=4, window=3) if small else {}
    b, s = (2, 8) if small else (4, 8192)
    t = getattr(torch, dtype)
    m = WindowAttention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("dim", 2048), dtype=t),), {"x": ["b", "s", "e"]}
