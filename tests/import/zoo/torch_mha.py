# SPDX-License-Identifier: GPL-3.0-or-later
"""nn.MultiheadAttention(batch_first=True) as a transformer encoder layer calls it:
self-attention, no mask, need_weights=False (its fused in_proj is unflattened and
selected into q, k, v inside F.multi_head_attention_forward)."""

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d_model=1024, nhead=16, dropout=0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)

    def forward(self, x):
        return self.self_attn(x, x, x, need_weights=False)[0]


def build(small=False, dtype="bfloat16"):
    cfg = dict(d_model=32, nhead=4) if small else {}
    b, s = (2, 8) if small else (8, 512)
    t = getattr(torch, dtype)
    m = SelfAttention(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("d_model", 1024), dtype=t),), {"x": ["b", "s", "e"]}
