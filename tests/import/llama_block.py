# SPDX-License-Identifier: GPL-3.0-or-later
"""Modules for the import tests (docs/import.md): a Llama-style decoder block, a
SwiGLU MLP, and a module with an operation outside the covered set. Each factory
returns (module, example args, axis names); tests/import/*.graph.json are their graphs
as src/import/napkin_export.py writes them (bench/gpu/import-roundtrip --regenerate)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, dim=4096, heads=32, kv_heads=8, head_dim=128, hidden=14336, eps=1e-5):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.attn_norm = nn.RMSNorm(dim, eps=eps)
        self.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, dim, bias=False)
        self.mlp_norm = nn.RMSNorm(dim, eps=eps)
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = a.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        x = x + self.wo(a)
        h = self.mlp_norm(x)
        x = x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))
        return x


class SwiGLU(nn.Module):
    def __init__(self, dim=4096, hidden=14336):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class CumulativeMix(nn.Module):
    """cumsum is outside the covered set: the importer must name it and its line."""

    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        y = self.proj(x)
        return y.cumsum(dim=1) + x


def rope(seq, head_dim, dtype, device, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


SMALL = dict(dim=256, heads=8, kv_heads=2, head_dim=32, hidden=512)


def build(small=False, batch=4, seq=2048, dtype="bfloat16", device="cpu"):
    """The Llama-style block (Llama-3-8B's sizes, or small ones for a quick check)."""
    dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    cfg = SMALL if small else {}
    with torch.device(device):
        m = LlamaBlock(**cfg).to(dtype=dtype)
    dim, head_dim = (cfg or {}).get("dim", 4096), (cfg or {}).get("head_dim", 128)
    x = torch.randn(batch, seq, dim, device=device, dtype=dtype)
    cos, sin = rope(seq, head_dim, dtype, device)
    return m, (x, cos, sin), {"x": ["b", "s", "e"]}


def build_mlp(small=False, batch=4, seq=2048, dtype="bfloat16", device="cpu"):
    dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    dim, hidden = (256, 512) if small else (4096, 14336)
    with torch.device(device):
        m = SwiGLU(dim, hidden).to(dtype=dtype)
    return m, (torch.randn(batch, seq, dim, device=device, dtype=dtype),), {"x": ["b", "s", "e"]}


def build_unsupported(small=True, batch=2, seq=16, dtype="float32", device="cpu"):
    dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    m = CumulativeMix(64).to(device=device, dtype=dtype)
    return m, (torch.randn(batch, seq, 64, device=device, dtype=dtype),), None
