# SPDX-License-Identifier: GPL-3.0-or-later
"""Mixtral's expert MLP (MixtralBlockSparseTop2MLP) applied densely to its tokens:
w2(act(w1(x)) * w3(x)), ACT2FN["silu"]."""
import torch
import torch.nn as nn


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, hidden_dim=4096, ffn_dim=14336):
        super().__init__()
        self.w1 = nn.Linear(hidden_dim, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, hidden_dim, bias=False)
        self.w3 = nn.Linear(hidden_dim, ffn_dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_dim=32, ffn_dim=64) if small else {}
    n = 8 if small else 4096
    t = getattr(torch, dtype)
    m = MixtralBlockSparseTop2MLP(**cfg).to(t)
    return m, (torch.randn(n, cfg.get("hidden_dim", 4096), dtype=t),), {"hidden_states": ["s", "e"]}
