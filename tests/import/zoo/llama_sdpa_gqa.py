# SPDX-License-Identifier: GPL-3.0-or-later
"""A Llama-3 attention written with SDPA's enable_gqa (PyTorch >= 2.5): rotary by
rotate_half with cos/sin given, unsqueezed in forward, and
F.scaled_dot_product_attention(..., is_causal=True, enable_gqa=True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim=4096, n_heads=32, n_kv_heads=8):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos = cos.unsqueeze(0).unsqueeze(0)
        sin = sin.unsqueeze(0).unsqueeze(0)
        xq = xq * cos + rotate_half(xq) * sin
        xk = xk * cos + rotate_half(xk) * sin
        out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True, enable_gqa=True)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, n_heads=4, n_kv_heads=2) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = Attention(**cfg).to(t)
    dim = cfg.get("dim", 4096)
    hd = dim // cfg.get("n_heads", 32)
    inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(s).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return m, (torch.randn(b, s, dim, dtype=t), emb.cos().to(t), emb.sin().to(t)), {"x": ["b", "s", "e"]}
