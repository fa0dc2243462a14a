# SPDX-License-Identifier: GPL-3.0-or-later
"""Stable Diffusion's AttnBlock (LDM VAE): GroupNorm(32) over [b, c, h, w], 1x1
convolutions as q, k, v, proj_out, attention over the h*w positions with bmm, residual."""
import torch
import torch.nn as nn


class AttnBlock(nn.Module):
    def __init__(self, in_channels=512):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups=32, num_channels=in_channels, eps=1e-6, affine=True)
        self.q = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.k = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.v = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.proj_out = nn.Conv2d(in_channels, in_channels, kernel_size=1)

    def forward(self, x):
        h_ = self.norm(x)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1)
        k = k.reshape(b, c, h * w)
        w_ = torch.bmm(q, k) * (int(c) ** (-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w)
        w_ = w_.permute(0, 2, 1)
        h_ = torch.bmm(v, w_)
        h_ = h_.reshape(b, c, h, w)
        return x + self.proj_out(h_)


def build(small=False, dtype="float16"):
    cfg = dict(in_channels=64) if small else {}
    b, hw = (2, 4) if small else (4, 64)
    t = getattr(torch, dtype)
    m = AttnBlock(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("in_channels", 512), hw, hw, dtype=t),), {"x": ["b", "c", "y", "x"]}
