# SPDX-License-Identifier: GPL-3.0-or-later
"""SAGAN's self-attention layer (Self-Attention GANs, Zhang et al.): 1×1 convolutions
for query (C/8), key (C/8) and value (C), the positions flattened with view and
permute, bmm, softmax, bmm, a learned gamma times the result plus the input."""
import torch
import torch.nn as nn


class SelfAttn(nn.Module):
    def __init__(self, in_dim=256):
        super().__init__()
        self.query_conv = nn.Conv2d(in_dim, in_dim // 8, kernel_size=1)
        self.key_conv = nn.Conv2d(in_dim, in_dim // 8, kernel_size=1)
        self.value_conv = nn.Conv2d(in_dim, in_dim, kernel_size=1)
        self.gamma = nn.Parameter(torch.full((1,), 0.5))
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        m_batchsize, C, width, height = x.size()
        proj_query = self.query_conv(x).view(m_batchsize, -1, width * height).permute(0, 2, 1)
        proj_key = self.key_conv(x).view(m_batchsize, -1, width * height)
        energy = torch.bmm(proj_query, proj_key)
        attention = self.softmax(energy)
        proj_value = self.value_conv(x).view(m_batchsize, -1, width * height)
        out = torch.bmm(proj_value, attention.permute(0, 2, 1))
        out = out.view(m_batchsize, C, width, height)
        return self.gamma * out + x


def build(small=False, dtype="float16"):
    cfg = dict(in_dim=32) if small else {}
    b, hw = (2, 4) if small else (16, 64)
    t = getattr(torch, dtype)
    m = SelfAttn(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("in_dim", 256), hw, hw, dtype=t),), {"x": ["b", "c", "y", "x"]}
