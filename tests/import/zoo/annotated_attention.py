# SPDX-License-Identifier: GPL-3.0-or-later
"""The Annotated Transformer's attention (Harvard NLP): a free function attention(),
scores via matmul / math.sqrt(d_k), masked_fill(mask == 0, -1e9) with an int mask
[b, 1, 1, s], p_attn = scores.softmax(dim=-1), linears in a ModuleList with
zip/view/transpose, output through the last linear. Built in bf16: in fp16 PyTorch
itself refuses the -1e9 (masked_fill: it overflows half)."""
import copy
import math
import torch
import torch.nn as nn


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h=8, d_model=512, dropout=0.1):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([copy.deepcopy(nn.Linear(d_model, d_model)) for _ in range(4)])
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask):
        mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


def build(small=False, dtype="bfloat16"):
    cfg = dict(h=4, d_model=32) if small else {}
    b, s = (2, 8) if small else (64, 512)
    t = getattr(torch, dtype)
    m = MultiHeadedAttention(**cfg).to(t)
    d = cfg.get("d_model", 512)
    x = torch.randn(b, s, d, dtype=t)
    mem = torch.randn(b, s, d, dtype=t)
    mask = torch.ones(b, 1, s, dtype=torch.int64)
    mask[:, :, s - 3:] = 0
    return m, (x, mem, mem, mask), {"query": ["b", "s", "e"]}
