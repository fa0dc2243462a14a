# SPDX-License-Identifier: GPL-3.0-or-later
"""Latent diffusion's CrossAttention (CompVis/stable-diffusion ldm/modules/attention.py),
as written there but for einops: its rearranges are the equivalent reshapes here
(the GPU machine has no einops); the einsum equations keep their spaces. Stable
Diffusion 1.5's first cross-attention: 64×64 latents, a 77-token text context."""

import torch
from torch import nn, einsum


class CrossAttention(nn.Module):
    def __init__(self, query_dim=320, context_dim=768, heads=8, dim_head=40, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, query_dim), nn.Dropout(dropout))

    def forward(self, x, context):
        h = self.heads
        q = self.to_q(x)
        k = self.to_k(context)
        v = self.to_v(context)

        # rearrange(t, 'b n (h d) -> (b h) n d', h=h)
        q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], h, -1).permute(0, 2, 1, 3)
                      .reshape(t.shape[0] * h, t.shape[1], -1), (q, k, v))

        sim = einsum('b i d, b j d -> b i j', q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = einsum('b i j, b j d -> b i d', attn, v)
        # rearrange(out, '(b h) n d -> b n (h d)', h=h)
        out = out.reshape(-1, h, out.shape[1], out.shape[2]).permute(0, 2, 1, 3).reshape(-1, out.shape[1], h * out.shape[2])
        return self.to_out(out)


def build(small=False, dtype="float16"):
    cfg = dict(query_dim=16, context_dim=24, heads=2, dim_head=8) if small else {}
    b, n, m = (2, 8, 5) if small else (2, 4096, 77)
    t = getattr(torch, dtype)
    mod = CrossAttention(**cfg).to(t)
    return (mod, (torch.randn(b, n, cfg.get("query_dim", 320), dtype=t), torch.randn(b, m, cfg.get("context_dim", 768), dtype=t)),
            {"x": ["b", "s", "e"], "context": ["b", "m", "c"]})
