# SPDX-License-Identifier: GPL-3.0-or-later
"""GPT-J attention (transformers' modeling_gptj.py, eager) as written there: rotary on
the first rotary_dim dims of each head by rotate_every_two (x[..., ::2], x[..., 1::2],
stack, flatten) with sin/cos repeated by repeat_interleave, the rest passed through and
concatenated back, a causal mask by torch.where with the dtype's minimum, softmax in the
value's dtype, attention computed in fp32 (query.to(float32)). GPT-J-6B's sizes."""

import torch
from torch import nn


def create_sinusoidal_positions(num_pos, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb(tensor, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class GPTJAttention(nn.Module):
    def __init__(self, embed_dim=4096, num_attention_heads=16, rotary_dim=64, max_positions=2048):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(1, 1, max_positions, max_positions),
            persistent=False,
        )
        self.embed_dim = embed_dim
        self.num_attention_heads = num_attention_heads
        self.head_dim = embed_dim // num_attention_heads
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.rotary_dim = rotary_dim
        self.register_buffer("embed_positions", create_sinusoidal_positions(max_positions, rotary_dim), persistent=False)

    def _split_heads(self, tensor, num_attention_heads, attn_head_size, rotary):
        new_shape = tensor.size()[:-1] + (num_attention_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        if rotary:
            return tensor
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = attn_weights / self.scale_attn
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        b, s, _ = hidden_states.shape
        query = self.q_proj(hidden_states)
        key = self.k_proj(hidden_states)
        value = self.v_proj(hidden_states)
        query = self._split_heads(query, self.num_attention_heads, self.head_dim, True)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, True)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, False)
        sincos = self.embed_positions[:s][None].expand(b, s, self.rotary_dim)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        k_rot = key[:, :, :, : self.rotary_dim]
        k_pass = key[:, :, :, self.rotary_dim :]
        q_rot = query[:, :, :, : self.rotary_dim]
        q_pass = query[:, :, :, self.rotary_dim :]
        k_rot = apply_rotary_pos_emb(k_rot, sin, cos)
        q_rot = apply_rotary_pos_emb(q_rot, sin, cos)
        key = torch.cat([k_rot, k_pass], dim=-1)
        query = torch.cat([q_rot, q_pass], dim=-1)
        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        attn_output = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        return self.out_proj(attn_output)


def build(small=False, dtype="float16"):
    cfg = dict(embed_dim=32, num_attention_heads=4, rotary_dim=4, max_positions=8) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = GPTJAttention(**cfg).to(t)
    x = torch.randn(b, s, cfg.get("embed_dim", 4096), dtype=t)
    return m, (x,), {"hidden_states": ["b", "s", "e"]}
