# SPDX-License-Identifier: GPL-3.0-or-later
"""Hugging Face LlamaAttention (transformers' modeling_llama.py, eager attention), as
written there: rotate_half by slices, repeat_kv (expand + reshape), the additive
attention mask the model builds, softmax in fp32, dropout. It takes the decoder
layer's position_embeddings (cos, sin). Llama-3-8B's sizes."""

import torch
from torch import nn


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask

    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size=4096, num_heads=32, num_key_value_heads=8, head_dim=128, attention_bias=False):
        super().__init__()
        self.head_dim = head_dim
        self.num_key_value_groups = num_heads // num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = 0.0
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=attention_bias)
        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=attention_bias)
        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=attention_bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=attention_bias)

    def forward(self, hidden_states, cos, sin, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output


def rope(b, s, head_dim, dtype, base=500000.0):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype).expand(b, s, head_dim).contiguous(), emb.sin().to(dtype).expand(b, s, head_dim).contiguous()


def causal_additive_mask(b, s, dtype):
    m = torch.full((s, s), torch.finfo(dtype).min, dtype=dtype).triu(1)
    return m[None, None].expand(b, 1, s, s).contiguous()


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, num_heads=4, num_key_value_heads=2, head_dim=8) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    d = cfg.get("head_dim", 128)
    t = getattr(torch, dtype)
    m = LlamaAttention(**cfg).to(t)
    cos, sin = rope(b, s, d, t)
    x = torch.randn(b, s, cfg.get("hidden_size", 4096), dtype=t)
    return m, (x, cos, sin, causal_additive_mask(b, s, t)), {"hidden_states": ["b", "s", "e"]}
