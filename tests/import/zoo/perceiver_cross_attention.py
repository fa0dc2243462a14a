# SPDX-License-Identifier: GPL-3.0-or-later
"""Perceiver-style cross-attention: learned latents (a parameter [n, d]) expanded over
the batch as queries against a long input, nn.MultiheadAttention-free: to_q, to_kv
(one Linear chunked in two), einsum with named letters, out projection."""
import torch
import torch.nn as nn


class PerceiverAttention(nn.Module):
    def __init__(self, dim=1024, num_latents=256, heads=8, dim_head=64):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        lat = self.latents.unsqueeze(0).expand(b, -1, -1)
        q = self.to_q(lat)
        k, v = self.to_kv(self.norm(x)).chunk(2, dim=-1)
        q = q.reshape(b, -1, self.heads, q.shape[-1] // self.heads).permute(0, 2, 1, 3)
        k = k.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3)
        v = v.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3)
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        out = out.permute(0, 2, 1, 3).reshape(b, -1, self.heads * out.shape[-1])
        return self.to_out(out)


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, num_latents=4, heads=2, dim_head=8) if small else {}
    b, n = (2, 8) if small else (16, 8192)
    t = getattr(torch, dtype)
    m = PerceiverAttention(**cfg).to(t)
    return m, (torch.randn(b, n, cfg.get("dim", 1024), dtype=t),), {"x": ["b", "n", "e"]}
