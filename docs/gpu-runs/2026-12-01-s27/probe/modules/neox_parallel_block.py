# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPT-NeoX layer (transformers' modeling_gpt_neox.py, GPTNeoXLayer with the eager
GPTNeoXAttention of the 4.3x releases) as written there: use_parallel_residual
(x + attn(ln1(x)) + mlp(ln2(x))), the fused query_key_value Linear viewed as
(b, s, heads, 3*head_size) and sliced [..., :d], [..., d:2d], [..., 2d:], partial rotary
(rotary_pct 0.25: rotate_half on the first rotary_ndims dims of each head, cat with the
pass-through), causal attention by torch.matmul, the tril bool "bias" buffer,
torch.where with the dtype's minimum and softmax, a GELU MLP. Pythia-1.4B's sizes."""

import torch
from torch import nn


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class GPTNeoXAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, rotary_pct, max_position_embeddings, attention_bias=True):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.hidden_size = hidden_size
        self.head_size = self.hidden_size // self.num_attention_heads
        self.rotary_ndims = int(self.head_size * rotary_pct)
        max_positions = max_position_embeddings
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(1, 1, max_positions, max_positions),
            persistent=False,
        )
        self.norm_factor = self.head_size**-0.5
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size, bias=attention_bias)
        self.dense = nn.Linear(hidden_size, hidden_size, bias=attention_bias)
        self.attention_dropout = nn.Dropout(0.0)

    @classmethod
    def _merge_heads(cls, tensor, num_attention_heads, attn_head_size):
        # tensor [bs, num_attention_heads, seq_len, attn_head_size]
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        # -> [bs, seq_len, num_attention_heads, attn_head_size]
        tensor = tensor.view(tensor.size(0), tensor.size(1), num_attention_heads * attn_head_size)
        return tensor

    def _attn(self, query, key, value):
        batch_size, num_attention_heads, query_length, attn_head_size = query.size()
        key_length = key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        attn_scores = torch.matmul(query, key.transpose(2, 3)) * self.norm_factor
        mask_value = torch.finfo(attn_scores.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_scores.dtype).to(attn_scores.device)
        attn_scores = torch.where(causal_mask, attn_scores, mask_value)
        attn_weights = nn.functional.softmax(attn_scores, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def forward(self, hidden_states, cos, sin):
        # Compute QKV
        # Attention heads [batch, seq_len, hidden_size]
        #   --> [batch, seq_len, (np * 3 * head_size)]
        qkv = self.query_key_value(hidden_states)

        # [batch, seq_len, (num_heads * 3 * head_size)]
        #   --> [batch, seq_len, num_heads, 3 * head_size]
        new_qkv_shape = qkv.size()[:-1] + (self.num_attention_heads, 3 * self.head_size)
        qkv = qkv.view(*new_qkv_shape)

        # [batch, seq_len, num_attention_heads, 3 * head_size] --> 3 [batch, num_attention_heads, seq_len, head_size]
        query = qkv[..., : self.head_size].permute(0, 2, 1, 3)
        key = qkv[..., self.head_size : 2 * self.head_size].permute(0, 2, 1, 3)
        value = qkv[..., 2 * self.head_size :].permute(0, 2, 1, 3)

        # Compute rotary embeddings on rotary_ndims
        query_rot = query[..., : self.rotary_ndims]
        query_pass = query[..., self.rotary_ndims :]
        key_rot = key[..., : self.rotary_ndims]
        key_pass = key[..., self.rotary_ndims :]

        query, key = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query = torch.cat((query, query_pass), dim=-1)
        key = torch.cat((key, key_pass), dim=-1)

        # Compute attention
        attn_output, attn_weights = self._attn(query, key, value)

        # Reshape outputs
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_size)
        attn_output = self.dense(attn_output)
        return attn_output


class GPTNeoXMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(hidden_size, intermediate_size)
        self.dense_4h_to_h = nn.Linear(intermediate_size, hidden_size)
        self.act = nn.GELU()

    def forward(self, hidden_states):
        hidden_states = self.dense_h_to_4h(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.dense_4h_to_h(hidden_states)
        return hidden_states


class GPTNeoXLayer(nn.Module):
    def __init__(self, hidden_size=2048, num_attention_heads=16, intermediate_size=8192, rotary_pct=0.25,
                 max_position_embeddings=2048, layer_norm_eps=1e-5, use_parallel_residual=True):
        super().__init__()
        self.use_parallel_residual = use_parallel_residual
        self.input_layernorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.post_attention_layernorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.post_attention_dropout = nn.Dropout(0.0)
        self.post_mlp_dropout = nn.Dropout(0.0)
        self.attention = GPTNeoXAttention(hidden_size, num_attention_heads, rotary_pct, max_position_embeddings)
        self.mlp = GPTNeoXMLP(hidden_size, intermediate_size)

    def forward(self, hidden_states, cos, sin):
        attn_output = self.attention(self.input_layernorm(hidden_states), cos, sin)
        attn_output = self.post_attention_dropout(attn_output)

        if self.use_parallel_residual:
            # pseudocode:
            # x = x + attn(ln1(x)) + mlp(ln2(x))
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            mlp_output = self.post_mlp_dropout(mlp_output)
            hidden_states = mlp_output + attn_output + hidden_states
        else:
            attn_output = attn_output + hidden_states
            mlp_output = self.mlp(self.post_attention_layernorm(attn_output))
            mlp_output = self.post_mlp_dropout(mlp_output)
            hidden_states = mlp_output + attn_output
        return hidden_states


def rope(b, s, dim, dtype, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    t = torch.arange(s, dtype=torch.int64).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype).expand(b, s, dim).contiguous(), emb.sin().to(dtype).expand(b, s, dim).contiguous()


def build(small=False, dtype="float16"):
    cfg = dict(hidden_size=32, num_attention_heads=4, intermediate_size=128, max_position_embeddings=8) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = GPTNeoXLayer(**cfg).to(t)
    hidden = cfg.get("hidden_size", 2048)
    rot = m.attention.rotary_ndims
    cos, sin = rope(b, s, rot, t)
    x = torch.randn(b, s, hidden, dtype=t)
    return m, (x, cos, sin), {"hidden_states": ["b", "s", "e"]}
