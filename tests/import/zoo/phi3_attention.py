# SPDX-License-Identifier: GPL-3.0-or-later
"""HF Phi-3's attention (eager): one qkv_proj sliced by position (query_pos), GQA by
repeat_kv, rotary on the whole head (cos/sin given), the causal mask given as an
additive input, softmax in fp32, o_proj."""
import math
import torch
import torch.nn as nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Phi3Attention(nn.Module):
    def __init__(self, hidden_size=3072, num_heads=32, num_key_value_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.num_key_value_heads = num_key_value_heads
        op_size = num_heads * self.head_dim + 2 * (num_key_value_heads * self.head_dim)
        self.qkv_proj = nn.Linear(hidden_size, op_size, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

    def forward(self, hidden_states, cos, sin, attention_mask):
        bsz, q_len, _ = hidden_states.size()
        qkv = self.qkv_proj(hidden_states)
        query_pos = self.num_heads * self.head_dim
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., query_pos: query_pos + self.num_key_value_heads * self.head_dim]
        value_states = qkv[..., query_pos + self.num_key_value_heads * self.head_dim:]
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        query_states = (query_states * cos) + (rotate_half(query_states) * sin)
        key_states = (key_states * cos) + (rotate_half(key_states) * sin)
        key_states = repeat_kv(key_states, self.num_heads // self.num_key_value_heads)
        value_states = repeat_kv(value_states, self.num_heads // self.num_key_value_heads)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, num_heads=4, num_key_value_heads=2) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = Phi3Attention(**cfg).to(t)
    hidden = cfg.get("hidden_size", 3072)
    hd = hidden // cfg.get("num_heads", 32)
    inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(s).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos()[None].expand(b, -1, -1).to(t)
    sin = emb.sin()[None].expand(b, -1, -1).to(t)
    mask = torch.triu(torch.full((s, s), torch.finfo(t).min), 1)[None, None].expand(b, 1, s, s).to(t)
    return m, (torch.randn(b, s, hidden, dtype=t), cos, sin, mask), {"hidden_states": ["b", "s", "e"]}
