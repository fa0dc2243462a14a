# SPDX-License-Identifier: GPL-3.0-or-later
"""timm's PatchEmbed (norm_layer=None): a Conv2d whose kernel and stride are the patch
size, then flatten(2).transpose(1, 2): the patches [b, n, c] as a ViT reads them."""
import torch
import torch.nn as nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        return x


def build(small=False, dtype="float16"):
    cfg = dict(img_size=8, patch_size=4, in_chans=3, embed_dim=16) if small else {}
    b = 2 if small else 64
    s = cfg.get("img_size", 224)
    t = getattr(torch, dtype)
    m = PatchEmbed(**cfg).to(t)
    return m, (torch.randn(b, cfg.get("in_chans", 3), s, s, dtype=t),), {"x": ["b", "c", "y", "x"]}
