# SPDX-License-Identifier: GPL-3.0-or-later
"""BLOOM/MPT-style attention with ALiBi: per-head slopes times key positions added
to the scores (a [1, h, 1, k] bias built in forward from a slopes buffer), causal
mask by masked_fill of a triu bool, fused Wqkv chunked, out_proj."""
import math
import torch
import torch.nn as nn


def alibi_slopes(n):
    start = 2 ** (-(2 ** -(math.log2(n) - 3)))
    return torch.tensor([start * (start ** i) for i in range(n)])


class AlibiAttention(nn.Module):
    def __init__(self, d_model=4096, n_heads=32):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.softmax_scale = 1 / math.sqrt(self.head_dim)
        self.Wqkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        qkv = self.Wqkv(x)
        q, k, v = qkv.chunk(3, dim=2)
        q = q.view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.n_heads, self.head_dim).permute(0, 2, 3, 1)
        v = v.view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        attn_weight = q.matmul(k) * self.softmax_scale
        pos = torch.arange(s, device=x.device, dtype=x.dtype)
        alibi = self.slopes.to(x.dtype).view(1, self.n_heads, 1, 1) * pos.view(1, 1, 1, s)
        attn_weight = attn_weight + alibi
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        attn_weight = attn_weight.masked_fill(causal.view(1, 1, s, s), torch.finfo(q.dtype).min)
        attn_weight = torch.softmax(attn_weight, dim=-1)
        out = attn_weight.matmul(v)
        out = out.transpose(1, 2).reshape(b, s, self.n_heads * self.head_dim)
        return self.out_proj(out)


def build(small=False, dtype="bfloat16"):
    cfg = dict(d_model=32, n_heads=4) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = AlibiAttention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("d_model", 4096), dtype=t),), {"x": ["b", "s", "e"]}
