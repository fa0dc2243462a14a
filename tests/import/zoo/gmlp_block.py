# SPDX-License-Identifier: GPL-3.0-or-later
"""gMLP's block (Liu et al., "Pay Attention to MLPs"): LayerNorm, a channel projection
to 2·f, GELU, split in two, the spatial gating unit (LayerNorm, then a Linear over the
sequence, a square projection seq → seq, on the transposed gate), the gated product,
a projection back, residual."""
import torch
import torch.nn as nn


class SpatialGatingUnit(nn.Module):
    def __init__(self, d_ffn, seq_len):
        super().__init__()
        self.norm = nn.LayerNorm(d_ffn)
        self.spatial_proj = nn.Conv1d(seq_len, seq_len, kernel_size=1)

    def forward(self, x):
        u, v = x.chunk(2, dim=-1)
        v = self.norm(v)
        v = self.spatial_proj(v)
        return u * v


class gMLPBlock(nn.Module):
    def __init__(self, d_model=512, d_ffn=1536, seq_len=256):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.channel_proj1 = nn.Linear(d_model, d_ffn * 2)
        self.channel_proj2 = nn.Linear(d_ffn, d_model)
        self.sgu = SpatialGatingUnit(d_ffn, seq_len)

    def forward(self, x):
        residual = x
        x = self.norm(x)
        x = nn.functional.gelu(self.channel_proj1(x))
        x = self.sgu(x)
        x = self.channel_proj2(x)
        return x + residual


def build(small=False, dtype="float16"):
    cfg = dict(d_model=16, d_ffn=24, seq_len=8) if small else {}
    b = 2 if small else 64
    t = getattr(torch, dtype)
    m = gMLPBlock(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("seq_len", 256), cfg.get("d_model", 512), dtype=t),), {"x": ["b", "s", "e"]}
