# SPDX-License-Identifier: GPL-3.0-or-later
"""Gemma's MLP (Hugging Face GemmaMLP with hidden_act "gelu_pytorch_tanh"): a GeGLU
with gelu(approximate='tanh') on the gate projection. Gemma-7B's sizes."""

import torch
from torch import nn


class GemmaMLP(nn.Module):
    def __init__(self, hidden_size=3072, intermediate_size=24576):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32, intermediate_size=48) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = GemmaMLP(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("hidden_size", 3072), dtype=t),), {"x": ["b", "s", "e"]}
