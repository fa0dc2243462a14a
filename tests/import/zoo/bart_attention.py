# SPDX-License-Identifier: GPL-3.0-or-later
"""Hugging Face BartAttention (modeling_bart.py of the 4.3x releases, eager), decoder
cross-attention as written there: q_proj scaled, heads folded into the batch for
bmm, the additive padding mask added to the scores, dropout. bart-large's sizes."""

import torch
from torch import nn


class BartAttention(nn.Module):
    def __init__(self, embed_dim=1024, num_heads=16, dropout=0.1, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _shape(self, tensor: torch.Tensor, seq_len: int, bsz: int):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states, attention_mask):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
        value_states = self._shape(self.v_proj(key_value_states), -1, bsz)

        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)

        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))

        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output


def padding_mask(b, src, dtype):
    """The model's expanded mask: 0 to keep, the dtype's minimum for padding (the last keys of odd batches)."""
    keep = torch.ones(b, src, dtype=torch.bool)
    keep[1::2, src - src // 4:] = False
    m = torch.zeros(b, 1, 1, src, dtype=dtype).masked_fill(~keep[:, None, None, :], torch.finfo(dtype).min)
    return m


def build(small=False, dtype="float16"):
    cfg = dict(embed_dim=32, num_heads=4) if small else {}
    b, tgt, src = (2, 8, 12) if small else (8, 512, 1024)
    t = getattr(torch, dtype)
    m = BartAttention(**cfg).to(t)
    e = cfg.get("embed_dim", 1024)
    return (m, (torch.randn(b, tgt, e, dtype=t), torch.randn(b, src, e, dtype=t), padding_mask(b, src, t)),
            {"hidden_states": ["b", "s", "e"], "key_value_states": ["b", "m", "e"]})
