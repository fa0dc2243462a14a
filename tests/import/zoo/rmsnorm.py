# SPDX-License-Identifier: GPL-3.0-or-later
"""A hand-written RMSNorm as Hugging Face's LlamaRMSNorm writes it: to fp32, pow(2),
mean over the last dimension, + eps, rsqrt, back to the input's type, times the weight."""

import torch
from torch import nn


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size=4096, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_size=32) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = LlamaRMSNorm(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("hidden_size", 4096), dtype=t),), {"hidden_states": ["b", "s", "e"]}
