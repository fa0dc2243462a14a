# SPDX-License-Identifier: GPL-3.0-or-later
"""HF BertSelfAttention + BertSelfOutput (eager), as transformers writes them."""
import math
import torch
import torch.nn as nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=768, num_attention_heads=12):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = int(hidden_size / num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(0.1)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.out_dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        out = self.dense(context_layer)
        out = self.out_dropout(out)
        return self.LayerNorm(out + hidden_states)


def build(small=False, dtype="float16"):
    cfg = dict(hidden_size=32, num_attention_heads=4) if small else {}
    b, s = (2, 8) if small else (32, 512)
    t = getattr(torch, dtype)
    m = BertSelfAttention(**cfg).to(t)
    hidden = cfg.get("hidden_size", 768)
    x = torch.randn(b, s, hidden, dtype=t)
    keep = torch.ones(b, s, dtype=t)
    keep[:, s - 2:] = 0
    mask = (1.0 - keep[:, None, None, :]) * torch.finfo(t).min
    return m, (x, mask), {"hidden_states": ["b", "s", "e"]}
