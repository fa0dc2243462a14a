# SPDX-License-Identifier: GPL-3.0-or-later
"""Whisper-style encoder self-attention (Hugging Face WhisperAttention, eager, as in
the 4.4x releases): k_proj without bias, q scaled before the product, matmul with
the heads as their own dimension, no mask. whisper-large-v3's encoder: 1500 frames."""

import torch
from torch import nn


class WhisperAttention(nn.Module):
    def __init__(self, embed_dim=1280, num_heads=20, dropout=0.0):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self._shape(self.q_proj(hidden_states) * self.scaling, tgt_len, bsz)
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_probs, value_states)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output


def build(small=False, dtype="float16"):
    cfg = dict(embed_dim=32, num_heads=4) if small else {}
    b, s = (2, 8) if small else (8, 1500)
    t = getattr(torch, dtype)
    m = WhisperAttention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("embed_dim", 1280), dtype=t),), {"hidden_states": ["b", "s", "e"]}
