# SPDX-License-Identifier: GPL-3.0-or-later
"""BLOOM's attention: fused query_key_value viewed [b, s, h, 3, d] and indexed, ALiBi
passed in [b*h, 1, k] and applied with torch.baddbmm(alibi, q, k, beta=1.0,
alpha=inv_norm_factor), heads folded into the batch, a boolean padding/causal mask by
masked_fill with finfo.min, softmax in fp32, dense."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class BloomAttention(nn.Module):
    def __init__(self, hidden_size=4096, n_head=32):
        super().__init__()
        self.num_heads = n_head
        self.head_dim = hidden_size // n_head
        self.hidden_size = hidden_size
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size, bias=True)
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, alibi, attention_mask):
        b, q_length, _ = hidden_states.shape
        fused_qkv = self.query_key_value(hidden_states)
        fused_qkv = fused_qkv.view(b, q_length, self.num_heads, 3, self.head_dim)
        query_layer = fused_qkv[..., 0, :].transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        key_layer = fused_qkv[..., 1, :].permute(0, 2, 3, 1).reshape(b * self.num_heads, self.head_dim, q_length)
        value_layer = fused_qkv[..., 2, :].transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        matmul_result = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=1.0, alpha=self.inv_norm_factor)
        attention_scores = matmul_result.view(b, self.num_heads, q_length, q_length)
        input_dtype = attention_scores.dtype
        attn_weights = torch.masked_fill(attention_scores, attention_mask, torch.finfo(attention_scores.dtype).min)
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(input_dtype)
        attention_probs_reshaped = attention_probs.view(b * self.num_heads, q_length, q_length)
        context_layer = torch.bmm(attention_probs_reshaped, value_layer)
        context_layer = context_layer.view(b, self.num_heads, q_length, self.head_dim).permute(0, 2, 1, 3)
        context_layer = context_layer.reshape(b, q_length, self.hidden_size)
        return self.dense(context_layer)


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, n_head=4) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = BloomAttention(**cfg).to(t)
    h = cfg.get("n_head", 32)
    slopes = torch.tensor([2 ** (-8 * (i + 1) / h) for i in range(h)])
    alibi = (slopes[:, None] * torch.arange(s)[None, :]).repeat(b, 1).view(b * h, 1, s).to(t)
    causal = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)[None, None].expand(b, 1, s, s).contiguous()
    return m, (torch.randn(b, s, cfg.get("hidden_size", 4096), dtype=t), alibi, causal), {"hidden_states": ["b", "s", "e"]}
