# SPDX-License-Identifier: GPL-3.0-or-later
"""Self-attention written with einsum on one fused qkv projection chunked in three,
as vit-pytorch and many research codebases write it (the equations with spaces)."""

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=768, heads=12, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.attend = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        x = self.norm(x)
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        b, n, _ = x.shape
        q, k, v = map(lambda t: t.reshape(b, n, self.heads, -1).transpose(1, 2), qkv)
        dots = torch.einsum('b h i d, b h j d -> b h i j', q, k) * self.scale
        attn = self.attend(dots)
        attn = self.dropout(attn)
        out = torch.einsum('b h i j, b h j d -> b h i d', attn, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, heads=4, dim_head=8) if small else {}
    b, n = (2, 8) if small else (64, 197)
    t = getattr(torch, dtype)
    m = Attention(**cfg).to(t)
    return m, (torch.randn(b, n, cfg.get("dim", 768), dtype=t),), {"x": ["b", "s", "e"]}
