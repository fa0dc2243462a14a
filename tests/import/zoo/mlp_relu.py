# SPDX-License-Identifier: GPL-3.0-or-later
"""The Linear–ReLU–Linear MLP as an nn.Sequential, with dropout."""

import torch
from torch import nn


def build(small=False, dtype="bfloat16"):
    dim, hidden = (32, 64) if small else (4096, 16384)
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, dim)).to(t)
    return m, (torch.randn(b, s, dim, dtype=t),), {"input": ["b", "s", "e"]}
