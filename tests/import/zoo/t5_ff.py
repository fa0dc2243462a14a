# SPDX-License-Identifier: GPL-3.0-or-later
"""HF T5's feed-forward layer: T5LayerNorm (variance in fp32, no mean, no bias, cast
back to the weight's half type), DenseReluDense (wi, ReLU, dropout, wo), residual."""
import torch
import torch.nn as nn


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5LayerFF(nn.Module):
    def __init__(self, d_model=1024, d_ff=4096):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(0.1)
        self.layer_norm = T5LayerNorm(d_model)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        h = self.wi(forwarded_states)
        h = self.act(h)
        h = self.dropout(h)
        h = self.wo(h)
        return hidden_states + self.dropout(h)


def build(small=False, dtype="bfloat16"):
    cfg = dict(d_model=32, d_ff=64) if small else {}
    b, s = (2, 8) if small else (32, 512)
    t = getattr(torch, dtype)
    m = T5LayerFF(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("d_model", 1024), dtype=t),), {"hidden_states": ["b", "s", "e"]}
