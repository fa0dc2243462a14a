# SPDX-License-Identifier: GPL-3.0-or-later
"""minGPT's CausalSelfAttention (karpathy/minGPT mingpt/model.py), as written there:
attention written out with @, the tril buffer and masked_fill(bias == 0, -inf)."""

import math
import torch
import torch.nn as nn
from torch.nn import functional as F


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.c_proj(y))
        return y


class Config:
    def __init__(self, **kw):
        self.n_embd, self.n_head, self.block_size = 768, 12, 1024
        self.attn_pdrop = self.resid_pdrop = 0.1
        self.__dict__.update(kw)


def build(small=False, dtype="bfloat16"):
    cfg = Config(n_embd=32, n_head=4, block_size=16) if small else Config()
    b, t = (2, 8) if small else (8, 1024)
    m = CausalSelfAttention(cfg).to(getattr(torch, dtype))
    return m, (torch.randn(b, t, cfg.n_embd, dtype=getattr(torch, dtype)),), {"x": ["b", "s", "e"]}
