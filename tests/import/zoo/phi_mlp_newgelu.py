# SPDX-License-Identifier: GPL-3.0-or-later
"""Phi-2's MLP: fc1, NewGELUActivation written out (tanh, pow 3), fc2; with the
block's parallel residual written in."""
import math
import torch
import torch.nn as nn


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class PhiMLP(nn.Module):
    def __init__(self, hidden_size=2560, intermediate_size=10240):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)
        self.activation_fn = NewGELUActivation()
        self.input_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, hidden_states):
        residual = hidden_states
        h = self.input_layernorm(hidden_states)
        h = self.fc2(self.activation_fn(self.fc1(h)))
        return h + residual


def build(small=False, dtype="float16"):
    cfg = dict(hidden_size=32, intermediate_size=64) if small else {}
    b, s = (2, 8) if small else (8, 2048)
    t = getattr(torch, dtype)
    m = PhiMLP(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("hidden_size", 2560), dtype=t),), {"hidden_states": ["b", "s", "e"]}
