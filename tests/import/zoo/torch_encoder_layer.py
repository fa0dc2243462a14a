# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch's own nn.TransformerEncoderLayer (batch_first=True, norm_first=True, GELU),
as a model built from torch.nn writes it."""
import torch
import torch.nn as nn


def build(small=False, dtype="float16"):
    cfg = dict(d_model=32, nhead=4, dim_feedforward=64) if small else dict(d_model=1024, nhead=16, dim_feedforward=4096)
    b, s = (2, 8) if small else (16, 512)
    t = getattr(torch, dtype)
    m = nn.TransformerEncoderLayer(batch_first=True, norm_first=True, activation="gelu", dropout=0.1, **cfg).to(t)
    return m, (torch.randn(b, s, cfg["d_model"], dtype=t),), {"src": ["b", "s", "e"]}
