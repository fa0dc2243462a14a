# SPDX-License-Identifier: GPL-3.0-or-later
"""MLP-Mixer block: token mixing by transposing to [b, c, n] and a Linear over the
tokens, channel mixing by a Linear over the channels, LayerNorms, GELU, residuals."""
import torch
import torch.nn as nn


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MixerBlock(nn.Module):
    def __init__(self, num_tokens=196, dim=768, tokens_hidden=384, channels_hidden=3072):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mlp_tokens = MlpBlock(num_tokens, tokens_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp_channels = MlpBlock(dim, channels_hidden)

    def forward(self, x):
        x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.mlp_channels(self.norm2(x))
        return x


def build(small=False, dtype="bfloat16"):
    cfg = dict(num_tokens=8, dim=32, tokens_hidden=16, channels_hidden=64) if small else {}
    b = 2 if small else 128
    t = getattr(torch, dtype)
    m = MixerBlock(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("num_tokens", 196), cfg.get("dim", 768), dtype=t),), {"x": ["b", "n", "c"]}
