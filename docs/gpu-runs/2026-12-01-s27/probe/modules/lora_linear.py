# SPDX-License-Identifier: GPL-3.0-or-later
"""peft's LoRA Linear (peft/tuners/lora/layer.py, Linear.forward, unmerged adapter) as
written there: result = base_layer(x); x cast to lora_A's dtype; result +
lora_B(lora_A(dropout(x))) * scaling; result cast back. Eval mode, r=16,
lora_alpha=32, on a 4096×4096 projection (a Llama q_proj)."""

import torch
from torch import nn


class LoraLinear(nn.Module):
    def __init__(self, in_features=4096, out_features=4096, r=16, lora_alpha=32, lora_dropout=0.05):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features, bias=False)
        self.r = {"default": r}
        self.lora_alpha = {"default": lora_alpha}
        self.scaling = {"default": lora_alpha / r}
        self.lora_dropout = nn.ModuleDict({"default": nn.Dropout(p=lora_dropout)})
        self.lora_A = nn.ModuleDict({"default": nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, out_features, bias=False)})
        self.active_adapters = ["default"]
        self.merged = False

    def forward(self, x):
        previous_dtype = x.dtype
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_A.keys():
                continue
            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            dropout = self.lora_dropout[active_adapter]
            scaling = self.scaling[active_adapter]
            x = x.to(lora_A.weight.dtype)
            result = result + lora_B(lora_A(dropout(x))) * scaling
        result = result.to(torch_result_dtype)
        return result.to(previous_dtype)


def build(small=False, dtype="bfloat16"):
    cfg = dict(in_features=32, out_features=24, r=4, lora_alpha=8) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = LoraLinear(**cfg).to(t).eval()
    return m, (torch.randn(b, s, cfg.get("in_features", 4096), dtype=t),), {"x": ["b", "s", "e"]}
