# SPDX-License-Identifier: GPL-3.0-or-later
"""Gemma 2's eager attention: GQA by repeat_kv, query_pre_attn_scalar scaling, logit
soft-capping (scores / cap, tanh, * cap), a sliding-window causal mask built in forward
as a float mask added to the scores, softmax in fp32."""
import torch
import torch.nn as nn


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Gemma2Attention(nn.Module):
    def __init__(self, hidden_size=3584, num_heads=16, num_kv_heads=8, head_dim=256, softcap=50.0, window=4096):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scaling = 256 ** -0.5
        self.softcap = softcap
        self.window = window
        self.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_heads // self.num_kv_heads)
        v = repeat_kv(v, self.num_heads // self.num_kv_heads)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights / self.softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * self.softcap
        min_value = torch.finfo(x.dtype).min
        causal = torch.full((s, s), min_value, dtype=x.dtype, device=x.device).triu(1)
        attn_weights = attn_weights + causal
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn_weights, v)
        out = out.transpose(1, 2).contiguous().view(b, s, -1)
        return self.o_proj(out)


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, num_heads=4, num_kv_heads=2, head_dim=8, window=4) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = Gemma2Attention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("hidden_size", 3584), dtype=t),), {"x": ["b", "s", "e"]}
