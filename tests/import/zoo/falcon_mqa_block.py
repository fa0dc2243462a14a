# SPDX-License-Identifier: GPL-3.0-or-later
"""Falcon-7B style decoder layer: parallel attention and MLP off one LayerNorm,
multi-query attention from one fused projection split with torch.split, the single
key/value head broadcast with expand, rotary (rotate_half by cat), SDPA is_causal,
GELU MLP without bias."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class FalconLayer(nn.Module):
    def __init__(self, hidden_size=4544, num_heads=71):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.input_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.query_key_value = nn.Linear(hidden_size, hidden_size + 2 * self.head_dim, bias=False)
        self.dense = nn.Linear(hidden_size, hidden_size, bias=False)
        self.dense_h_to_4h = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        self.act = nn.GELU()
        self.dense_4h_to_h = nn.Linear(4 * hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin):
        b, s, _ = hidden_states.shape
        residual = hidden_states
        ln = self.input_layernorm(hidden_states)
        fused = self.query_key_value(ln)
        q, k, v = torch.split(fused, [self.num_heads * self.head_dim, self.head_dim, self.head_dim], dim=-1)
        q = q.view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, 1, self.head_dim).transpose(1, 2)
        v = v.view(b, s, 1, self.head_dim).transpose(1, 2)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = k.expand(-1, self.num_heads, -1, -1)
        v = v.expand(-1, self.num_heads, -1, -1)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        attn = attn.transpose(1, 2).reshape(b, s, self.num_heads * self.head_dim)
        attn_out = self.dense(attn)
        mlp_out = self.dense_4h_to_h(self.act(self.dense_h_to_4h(ln)))
        return mlp_out + attn_out + residual


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, num_heads=4) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = FalconLayer(**cfg).to(t)
    hidden = cfg.get("hidden_size", 4544)
    hd = hidden // cfg.get("num_heads", 71)
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(s).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return m, (torch.randn(b, s, hidden, dtype=t), emb.cos().to(t), emb.sin().to(t)), {"hidden_states": ["b", "s", "e"]}
